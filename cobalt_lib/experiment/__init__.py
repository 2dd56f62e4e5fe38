"""cobalt experiment."""
