"""cobalt results."""
