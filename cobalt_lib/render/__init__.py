"""cobalt render."""
