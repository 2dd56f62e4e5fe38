"""cobalt config."""
