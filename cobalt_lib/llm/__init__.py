"""cobalt llm."""
