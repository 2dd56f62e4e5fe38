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
        ├── StoreLocked      another process held the store for longer than the wait
        └── LeaseLost        another process took over the run this one was working on

Failures inside user code (an agent that raises, an evaluator that returns garbage) are not
errors: they become records in the report.
"""

from __future__ import annotations

from collections.abc import Sequence

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


class StoreAway(StoreLocked):
    """The store's database server cannot be reached (down, restarting, the network): rows wait in the
    journal as they do for a held file. `where` is its URL without the password."""

    def __init__(self, where: str, said: str) -> None:
        super().__init__(f"Cannot reach the results store {where} ({said}); check that the database is up "
                         "and the URL (`[store] url` or COBALT_STORE_URL) is right.", f"unreachable: {said}")
        self.where = where


class LeaseLost(StoreError):
    """Another process claimed run `run_id` (its lease lapsed): this process writes none of its rows any more."""

    def __init__(self, run_id: str, message: str) -> None:
        super().__init__(message)
        self.run_id = run_id


#: The most bad lines one error about a file lists; the others are counted.
SHOWN_BAD_LINES = 20


def raise_bad_lines(problems: Sequence[str | CobaltError], where: object, *, nothing: str = "") -> None:
    """Raise one error for every bad line of a file found (a sentence each, naming its line), so that one pass
    fixes them all: a lone problem is raised as it is; several are listed under a count, up to
    `SHOWN_BAD_LINES`. `nothing`: what was not done because of them (", nothing imported")."""
    if not problems:
        return
    if len(problems) == 1 and not nothing:
        raise problems[0] if isinstance(problems[0], CobaltError) else DatasetError(problems[0])
    more = len(problems) - SHOWN_BAD_LINES
    tail = f"\n... and {more} more bad lines" if more > 0 else ""
    raise DatasetError(f"{len(problems)} bad line{'s' if len(problems) != 1 else ''} in {where}{nothing}:\n"
                       + "\n".join(map(str, problems[:SHOWN_BAD_LINES])) + tail)
