"""cobalt run."""
