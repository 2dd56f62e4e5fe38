"""cobalt ci."""
