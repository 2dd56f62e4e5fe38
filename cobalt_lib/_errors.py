"""The errors cobalt raises, each with a message a user can act on.

    CobaltError
    ├── ConfigError          bad cobalt.toml / define_config / experiment options
    │   ├── EvaluatorError   unknown evaluator type, missing required option
    │   ├── TemplateError    a {{variable}} the item lacks
    │   └── MissingApiKeyError  the provider's key is not set
    ├── DatasetError         a malformed dataset file, line or row
    ├── JudgeError           a judge call failed after its retries
    ├── BatchPending         a judge batch outlived `[judge] batch_deadline`: the run stops, resumable
    └── StoreError           the DuckDB store or results directory cannot be used
        └── StoreLocked      another process held the store for longer than the wait

Failures inside user code (an agent that raises, an evaluator that returns garbage) are not
errors: they become records in the report.
"""

from __future__ import annotations

from ._secrets import scrub


class CobaltError(Exception):
    """Base of every error cobalt raises on purpose. Its text never carries a secret the process knows
    (a key, a proxy's password, a token), whatever a server echoed into it."""

    def __str__(self) -> str:
        return scrub(super().__str__())


class ConfigError(CobaltError):
    """The configuration or an experiment's declaration is wrong; fix it before running."""


class EvaluatorError(ConfigError):
    """An evaluator is declared with an unknown type or without a required option."""


class TemplateError(ConfigError):
    """A prompt template names a variable that the item does not have."""


class MissingApiKeyError(ConfigError):
    """A judge provider needs an API key that is not set."""


class DatasetError(CobaltError):
    """A dataset file, line or row cannot be read."""


class JudgeError(CobaltError):
    """A judge or embeddings call failed after every retry."""


class BatchPending(CobaltError):
    """A judge batch had not ended by `[judge] batch_deadline`: the run stops (incomplete, resumable),
    not one item's evaluation: every item waiting on the batch would fail the same way."""


class StoreError(CobaltError):
    """The results store cannot be opened or written."""


class StoreLocked(StoreError):
    """Another process held the store's file for longer than cobalt waits; `holder` names it."""

    def __init__(self, message: str, holder: str) -> None:
        super().__init__(message)
        self.holder = holder
