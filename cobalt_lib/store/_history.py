"""Reading past runs back: run references (`latest`, `previous`, id prefixes) and whole reports."""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, overload

from .._errors import ConfigError
from ..results._pairing import ItemPair, PairChunk
from ..results._repeats import by_index
from ..results._report import AssertionResult, ExperimentReport, ItemResult, Summary
from ..results._results_file import read_header, read_results
from ..results._rows import item_from_rows, stats_from_row
from ._store import Store


def resolve_run(store: Store, ref: str, experiment: str | None = None) -> str:
    """The run id that `ref` names: `latest`, `previous`, a full id, a unique prefix of one, or a unique
    prefix of its random suffix (the part after the dash)."""
    runs = store.runs(experiment=experiment)
    scope = f" of experiment {experiment!r}" if experiment else ""
    if ref in ("latest", "previous"):
        position = 0 if ref == "latest" else 1
        if len(runs) <= position:
            raise ConfigError(f"There is no {ref} run{scope} yet ({len(runs)} stored); run an experiment first.")
        return str(runs[position]["run_id"])
    ids = [str(r["run_id"]) for r in runs]
    # The random part after the dash (`1dab42c9` of `20261123173447-1dab42c9`) is what people copy.
    matches = ([i for i in ids if i == ref] or [i for i in ids if i.startswith(ref)]
               or [i for i in ids if "-" in i and i.rsplit("-", 1)[1].startswith(ref)])
    if not matches:
        raise ConfigError(f"No run{scope} has id {ref!r}; `cobalt history` lists the stored runs.")
    if len(matches) > 1:
        raise ConfigError(f"Run id {ref!r} is ambiguous ({', '.join(matches[:5])}); give more characters.")
    return matches[0]


def load_report(store: Store, run_id: str, *, run: dict[str, Any] | None = None) -> ExperimentReport:
    """The run's report: its results JSON when present, else rebuilt from the store's rows. `run`: the
    run's row (`Store.get_run`) when the caller has just read it (one read fewer)."""
    run = run if run is not None else store.require_run(run_id)
    path = run.get("results_path")
    if path and Path(path).is_file():
        report = read_results(path)
        report.status = run["status"] if report.status == "running" else report.status
        if report.identity is None:  # the results file of an interrupted run was written before it had one
            report.identity = store.identities_of([run_id]).get(run_id)
        return report
    with store.reading():  # the rows of four tables over one connection
        return _from_rows(store, run)


def stored_items(store: Store, run_id: str, *, with_scores: bool = True) -> list[ItemResult]:
    """Every item of a run as its rows hold it (the truth after a crash: the JSON may be missing);
    `with_scores=False`: the outputs alone, as a stage that scores them again wants them."""
    scores: dict[tuple[int, int], list[dict[str, Any]]] = {}
    with store.reading():  # both tables over one connection
        score_rows = store.rows("scores", run_id) if with_scores else []
        output_rows = store.rows("outputs", run_id)
    for row in score_rows:
        scores.setdefault((row["item_index"], row["run_index"]), []).append(row)
    return [item_from_rows(o, scores.get((o["item_index"], o["run_index"]), [])) for o in output_rows]


#: Items per chunk of a streamed read: about 2,000 items' rows at a time (a few MB) over one connection each.
CHUNK_ITEMS = 2000


def stored_item_batches(store: Store, run_id: str, chunk: int = CHUNK_ITEMS, *,
                        with_scores: bool = True) -> Iterator[list[ItemResult]]:
    """A run's stored items in order of (index, run_index), `chunk` at a time: memory stays flat in the
    run's size. Each chunk is one short read-only connection, so a run writing meanwhile is never held
    up for long; rows a writer adds behind the read position are included, ahead of it not."""
    if chunk < 1:
        raise ValueError(f"chunk must be at least 1, not {chunk}")
    after: tuple[int, int] | None = None
    while True:
        outputs, scores = store.item_chunk(run_id, after=after, limit=chunk, with_scores=with_scores)
        if not outputs:
            return
        yield _items_of(outputs, scores)
        if len(outputs) < chunk:
            return
        after = (outputs[-1]["item_index"], outputs[-1]["run_index"])


def stored_pair_chunks(store: Store, run_a: str, run_b: str, chunk: int = CHUNK_ITEMS) -> Iterator[PairChunk]:
    """Two stored runs' items paired by identity, as `results._pairing.pairing` pairs them, `chunk` keys
    at a time (`Store.pair_keys` once, in B's order; each chunk's rows by `Store.pair_rows`): what
    `compare_chunks` tallies in bounded memory (the keys held are about 100 bytes an item)."""
    if chunk < 1:
        raise ValueError(f"chunk must be at least 1, not {chunk}")
    keys = store.pair_keys(run_a, run_b)
    for start in range(0, len(keys), chunk):
        yield stored_pairs(store, run_a, run_b, keys[start:start + chunk])


def stored_pairs(store: Store, run_a: str, run_b: str, keys: Sequence[tuple[str, int | None, int | None]],
                 ) -> PairChunk:
    """The items of some of two runs' pairing keys (`Store.pair_keys`), read over one connection: each
    key's pair, or its item in the one run that has it."""
    rows = store.pair_rows({run_a: [a for _, a, _ in keys if a is not None],
                            run_b: [b for _, _, b in keys if b is not None]})
    groups = {run_id: by_index(_items_of(outputs, scores)) for run_id, (outputs, scores) in rows.items()}
    part = PairChunk([], {}, {})
    for ident, index_a, index_b in keys:
        if index_a is not None and index_b is not None:
            part.pairs.append(ItemPair(item_id=ident, a=groups[run_a][index_a], b=groups[run_b][index_b]))
        elif index_a is not None:
            part.only_a[index_a] = (ident, groups[run_a][index_a])
        elif index_b is not None:
            part.only_b[index_b] = (ident, groups[run_b][index_b])
    return part


def _items_of(outputs: list[dict[str, Any]], scores: list[dict[str, Any]]) -> list[ItemResult]:
    by_key: dict[tuple[int, int], list[dict[str, Any]]] = {}
    for row in scores:
        by_key.setdefault((row["item_index"], row["run_index"]), []).append(row)
    return [item_from_rows(o, by_key.get((o["item_index"], o["run_index"]), [])) for o in outputs]


def streamed_report(store: Store, run_id: str, *, run: dict[str, Any] | None = None) -> ExperimentReport:
    """The run's report with its items streamed from the store (`StreamedItems`): the header (summary,
    config, verdicts, identity) from the results file, its items skipped, or from the store's rows.
    Memory stays flat in the run's size: what a recording reads (`load_report` holds every item)."""
    run = run if run is not None else store.require_run(run_id)
    items = StreamedItems(store, run_id)
    path = run.get("results_path")
    if path and Path(path).is_file():
        try:
            report = read_header(path)
        except ValueError:  # cut short or not laid out as cobalt writes it: the rows hold the same header
            report = None
        if report is not None:
            report.status = run["status"] if report.status == "running" else report.status
            if report.identity is None:
                report.identity = store.identities_of([run_id]).get(run_id)
            report.items = items
            return report
    with store.reading():
        report = _from_rows(store, run, [])
    report.items = items  # after validation, which would copy them into a list
    return report


class StreamedItems(Sequence[ItemResult]):
    """A stored run's items, read from the store `CHUNK_ITEMS` at a time on every pass (never held):
    `len` is one count; iteration streams in (index, run_index) order; indexing reads up to the
    position (a pass), so code that wants items by position should iterate once instead."""

    def __init__(self, store: Store, run_id: str) -> None:
        self._store = store
        self._run_id = run_id
        self._count: int | None = None

    def __len__(self) -> int:
        if self._count is None:
            self._count = self._store.live_counts(self._run_id)["done"]
        return self._count

    def __iter__(self) -> Iterator[ItemResult]:
        for batch in stored_item_batches(self._store, self._run_id):
            yield from batch

    @overload
    def __getitem__(self, key: int) -> ItemResult: ...

    @overload
    def __getitem__(self, key: slice) -> list[ItemResult]: ...

    def __getitem__(self, key: int | slice) -> ItemResult | list[ItemResult]:
        if isinstance(key, slice):
            chosen = range(len(self))[key]
            if not chosen:
                return []
            low = min(chosen)  # one pass over the span the slice covers
            span = list(itertools.islice(iter(self), low, max(chosen) + 1))
            return [span[p - low] for p in chosen]
        position = key + len(self) if key < 0 else key
        if not 0 <= position < len(self):
            raise IndexError(f"item {key} of {len(self)}: out of range")
        return next(itertools.islice(iter(self), position, None))

    def __repr__(self) -> str:
        return f"StreamedItems(run {self._run_id})"


def _from_rows(store: Store, run: dict[str, Any], items: list[ItemResult] | None = None) -> ExperimentReport:
    run_id = run["run_id"]
    items = stored_items(store, run_id) if items is None else items
    summary = Summary.model_validate(run["summary"]) if run.get("summary") else Summary()
    for row in store.rows("aggregates", run_id):
        (summary.scores if row["kind"] == "evaluator" else summary.metrics)[row["metric"]] = stats_from_row(row)
    verdicts = [AssertionResult(name=v["name"], passed=bool(v["passed"]), message=v["message"] or "",
                                actual=v["actual"], expected=v["expected"]) for v in store.rows("verdicts", run_id)]
    started = run["started_at"]
    return ExperimentReport(
        id=run_id, name=run["experiment"], timestamp=started.isoformat() if hasattr(started, "isoformat") else
        str(started), status=run["status"], source=run.get("source") or "library",
        parent_run_id=run.get("parent_run_id"), tags=run.get("tags") or [], config=run.get("config") or {},
        variant=run.get("variant"), group_id=run.get("group_id"), summary=summary, items=items,
        assertions=verdicts, results_path=run.get("results_path"), identity=store.identities_of([run_id]).get(run_id))
