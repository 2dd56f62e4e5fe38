"""cobalt gates."""
