"""cobalt evaluators."""
