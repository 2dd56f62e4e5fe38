"""What waits on its way into the store: journals left by ended processes, and rows the store refused.

`cobalt store status` lists them; `cobalt store sync` puts them in (journals first, then the rows kept
aside, written anew so values cobalt now stores differently go in).
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from .._errors import StoreError
from ..config._config import Config
from ..store._journal import SET_ASIDE_DIR, in_use, left, put_back, refused_before, replay_left, set_aside
from ..store._schema import store_figures
from ..store._segment import read
from ..store._store import Store


class Waiting(BaseModel):
    """A journal's segments not yet in the store; `live` when its process is still writing it."""

    directory: Path
    segments: int
    live: bool


class Aside(BaseModel):
    """Rows of one table of a run that the store refused, each with why, kept in `path`."""

    path: Path
    table: str
    run_id: str | None
    rows: int
    errors: list[str]


class JournalStatus(BaseModel):
    """What `cobalt store status` shows: journals waiting, and rows kept aside."""

    store: str
    #: `duckdb` (the embedded file) or `postgres` (the team store); its schema version and runs, when reached.
    backend: str = "duckdb"
    schema_version: int | None = None
    runs: int | None = None
    #: Why the store could not be read just now (a database that is away), else None.
    unreachable: str | None = None
    waiting: list[Waiting] = Field(default_factory=list)
    aside: list[Aside] = Field(default_factory=list)
    #: Rows put in by this call (`sync_journals`).
    restored: int = 0

    def empty(self) -> bool:
        return not (self.waiting or self.aside)


def waiting_note(waiting: dict[str, Any] | None, resume: str) -> str | None:
    """A run's finished items that wait in a journal (a stored run's `waiting`, the store held by another
    process) in one sentence: how many, where, and whether `resume` (as the caller says it) is needed."""
    if not waiting or not waiting.get("items"):
        return None
    ended = waiting.get("status")
    then = (f"it ended {ended}, nothing to resume" if ended in ("completed", "failed")
            else f"then finish it with {resume}")
    return (f"{waiting['items']} finished items wait in {waiting['journal']}, as the results store is held by another "
            f"process; they go in once it is free (the next read or cobalt command): {then}")


def journal_status(config: Config) -> JournalStatus:
    """The journals waiting under the project's output directory and the rows the store refused."""
    store = Store.for_config(config)
    status = JournalStatus(store=store.where, backend=store.backend.name)
    try:
        status.schema_version, status.runs = store_figures(store)
    except StoreError as exc:
        status.unreachable = str(exc)
    for directory in [*left(store), *refused_before(store)]:
        segments = len(list(directory.glob("[0-9]*.json")))
        status.waiting.append(Waiting(directory=directory, segments=segments, live=in_use(directory)))
    status.aside = [Aside(path=g.path, table=g.table, run_id=g.run_id, rows=g.rows, errors=g.errors)
                    for g in set_aside(store)]
    return status


def sync_journals(config: Config) -> JournalStatus:
    """Put in what waits: the journals of ended processes (and those an older cobalt moved aside whole),
    then the rows kept aside. Returns what is left, with how many rows went in."""
    store = Store.for_config(config)
    for directory in refused_before(store):  # an older cobalt's refusal: a journal like any other
        target = directory.with_name(directory.name.removeprefix(".refused-"))
        if not target.exists():
            directory.rename(target)
    before = sum(_rows(h) for d in left(store) for h in d.glob("[0-9]*.json"))
    replay_left(store)
    after = sum(_rows(h) for d in left(store) for h in d.glob("[0-9]*.json"))
    restored, _ = put_back(store)
    status = journal_status(config)
    status.restored = before - after + restored
    aside_dir = store.home / "journal" / SET_ASIDE_DIR
    if aside_dir.is_dir() and not any(aside_dir.iterdir()):
        shutil.rmtree(aside_dir, ignore_errors=True)
    return status


def _rows(header: Path) -> int:
    """The rows a sealed segment holds (its files' lines)."""
    try:
        segment = read(header)
    except (OSError, ValueError):
        return 0
    total = 0
    for table in segment.files:
        try:
            with segment.rows(table).open("rb") as fh:
                total += sum(1 for _ in fh)
        except OSError:
            continue
    return total
