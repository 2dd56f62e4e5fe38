"""The built-in evaluator kinds, one module each. Every module here is imported when the evaluator
registry is first used, and each kind registers itself: adding a kind is adding a module."""
__all__: list[str] = []
