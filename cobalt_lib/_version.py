"""The package's version: the one place it is written (pyproject.toml reads it from here), below every layer,
so the engine records it in a run's identity without importing the package facade."""

__version__ = "0.1.0"
