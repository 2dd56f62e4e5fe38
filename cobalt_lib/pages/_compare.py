"""The compare page: B against baseline A per evaluator (as `ops.compare_runs`), and every paired item
ranked by its change, regressions first, with both outputs and the words that differ marked."""

from __future__ import annotations

import difflib
import json
import math
import re
from typing import Any

from ..config._config import Config
from ..conversations._render import diverged_at, transcript_text
from ..datasets import with_version_diffs
from ..ops._compare import CompareOutcome, _pairing_warnings, compare_stored, regression_reasons
from ..ops._refs import resolve_pair
from ..results._direction import gain
from ..results._pairing import ItemPair, Unpaired, unpaired_items
from ..results._report import ExperimentReport, ItemResult
from ..store._history import CHUNK_ITEMS, stored_pairs, streamed_report
from ..store._store import Store
from ._queries import dagster_run_page

#: Above this many words per output, the outputs are shown without word-level marks (difflib is quadratic).
DIFF_WORDS = 4000
_TOKENS = re.compile(r"\s+|\w+|[^\w\s]")


def compare_view(config: Config, ref_a: str, ref_b: str) -> dict[str, Any]:
    """The comparison (verdicts, paired CIs, warnings) and every item row, ranked."""
    paired = paired_view(config, ref_a, ref_b)
    return {**paired, **summary_view(paired)}


def compare_head(config: Config, ref_a: str, ref_b: str) -> dict[str, Any]:
    """What the compare page's first screen needs at once: the two runs (no item read yet), read over one
    connection; two full run ids (every link the pages make) are two lookups, anything else is resolved as
    `cobalt compare` resolves it (`latest`, a prefix)."""
    store = Store.for_config(config)
    with store.reading():
        exact = [store.get_run(ref) for ref in (ref_a, ref_b)]
        scope = None
        found = [r for r in exact if r is not None]
        if len(found) < 2:
            pair = resolve_pair(config, (ref_a, ref_b))
            found, scope = [store.require_run(pair.a.run_id), store.require_run(pair.b.run_id)], pair.scope
        runs = dict(zip("ab", found, strict=True))
        held = store.dagster_runs_of([r["run_id"] for r in found])
    return {"run_a": runs["a"]["run_id"], "run_b": runs["b"]["run_id"], "runs": runs, "scope": scope,
            "refs": (ref_a, ref_b), "statuses": {s: r["status"] for s, r in runs.items()},
            "dagster": {s: dagster_run_page(config, held[r["run_id"]]) if r["run_id"] in held else None
                        for s, r in runs.items()}}


def paired_view(config: Config, ref_a: str, ref_b: str) -> dict[str, Any]:
    """Both runs' items paired and ranked in the store's order of their change, each row a key to read the
    pair by when a page shows it (`drawn_rows`): the ranking reads statuses and scores alone, so the first
    rows never wait for both runs' items to be read whole."""
    store = Store.for_config(config)
    with store.reading():  # the runs, the keys and both runs' scores over one connection (each open costs 10-50 ms)
        head = compare_head(config, ref_a, ref_b)
        rows, unpaired = _ranks(store, head["run_a"], head["run_b"])
    return {**head, "rows": rows, "unpaired": unpaired, "changed": sum(1 for r in rows if r["changed"]),
            "store": store}


def summary_view(paired: dict[str, Any]) -> dict[str, Any]:
    """The statistics of a `paired_view`: verdicts, paired bootstrap intervals, warnings (the slow part: the
    served page draws its item list first and asks for these after), the items streamed from the store."""
    store = paired["store"]
    reports = [streamed_report(store, paired["runs"][s]["run_id"], run=paired["runs"][s]) for s in "ab"]
    outcome = _outcome(paired["scope"], paired["refs"], reports[0], reports[1], store)
    # A run on another version of a stored dataset: the identity change says by how many items.
    outcome.comparison.identity_changes = with_version_diffs(store, reports[0].identity, reports[1].identity,
                                                             outcome.comparison.identity_changes)
    return {"outcome": outcome, "c": outcome.comparison}


def _outcome(scope: str | None, refs: tuple[str, str], a: ExperimentReport, b: ExperimentReport,
             store: Store) -> CompareOutcome:
    """What `ops.compare_runs` returns, from the two reports read once here."""
    comparison = compare_stored(a, b, top=0, store=store)
    comparison.scope = scope
    warnings = [f"run {side} ({r.id}) is {r.status}: only its finished items are compared."
                for side, r in zip("AB", (a, b), strict=True) if r.status != "completed"]
    warnings += _pairing_warnings(comparison, refs, [a, b])
    # The page shows what was measured differently (and the baseline's missing items) in a section of its own,
    # as a warning: what it calls a regression is a change of the scores, never a flag it cannot take.
    return CompareOutcome(comparison=comparison, warnings=warnings,
                          regressions=regression_reasons(comparison, accept_identity_change=True))


#: A repeat as ranking reads it: its status, and each evaluator's score (None: not scored, as `score_of`).
_Repeat = tuple[str, dict[str, float | None]]


def _ranks(store: Store, run_a: str, run_b: str) -> tuple[list[dict[str, Any]], list[Unpaired]]:
    """Every pair's rank (`_ranked`), ranked, and the unpaired items, from the pairing keys and each run's
    statuses and scores."""
    keys = store.pair_keys(run_a, run_b)
    sides = {run_id: _repeats(*store.run_scores(run_id)) for run_id in dict.fromkeys((run_a, run_b))}
    rows = [_ranked(ident, index_a, index_b, sides[run_a][index_a], sides[run_b][index_b])
            for ident, index_a, index_b in keys if index_a is not None and index_b is not None]
    unpaired = unpaired_items({a: ident for ident, a, b in keys if b is None and a is not None},
                              {b: ident for ident, a, b in keys if a is None and b is not None})
    return sorted(rows, key=_rank), unpaired


def _repeats(outputs: list[tuple[int, int, str]], scores: list[tuple[int, int, str, float | None, str]],
             ) -> dict[int, list[_Repeat]]:
    status = {(index, repeat): state for index, repeat, state in outputs}
    evaluations: dict[tuple[int, int], dict[str, float | None]] = {}
    for index, repeat, name, score, state in scores:
        ok = state == "ok" and status.get((index, repeat)) == "ok"
        evaluations.setdefault((index, repeat), {})[name] = score if ok else None
    repeats: dict[int, list[_Repeat]] = {}
    for (index, repeat), state in sorted(status.items()):
        repeats.setdefault(index, []).append((state, evaluations.get((index, repeat), {})))
    return repeats


def _mean(repeats: list[_Repeat], name: str) -> float | None:
    scores = [s for _, scored in repeats if (s := scored.get(name)) is not None]
    return math.fsum(scores) / len(scores) if scores else None


def _status(repeats: list[_Repeat]) -> str:
    """As `ItemPair.status`: `ok`, `error`, `timeout`; with repeats that differ, `2 of 3 ok`."""
    statuses = {state for state, _ in repeats}
    if len(statuses) == 1:
        return statuses.pop()
    return f"{sum(state == 'ok' for state, _ in repeats)} of {len(repeats)} ok"


def _ranked(ident: str, index_a: int, index_b: int, a: list[_Repeat], b: list[_Repeat]) -> dict[str, Any]:
    """What ranks a paired item: its change (the worst gain of its evaluators' mean scores; a failed agent
    call in B counts as -1) and whether it changed; `drawn_rows` reads and draws the rest when a page shows it."""
    gains: list[float] = []
    for name in dict.fromkeys(n for side in (a, b) for _, scored in side for n in scored):
        score_a, score_b = _mean(a, name), _mean(b, name)
        gains.append(0.0 if score_a is None or score_b is None else gain(name, score_b - score_a))
    status_a, status_b = _status(a), _status(b)
    if status_a != status_b:
        gains.append(-1.0 if status_a == "ok" else 1.0 if status_b == "ok" else 0.0)
    worst, best = min(gains, default=0.0), max(gains, default=0.0)
    return {"index": index_b, "index_a": index_a, "item_id": ident, "change": worst if worst < 0 else best,
            "changed": worst < 0 or best > 0 or status_a != status_b}


def drawn_rows(view: dict[str, Any], ranked: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Ranked rows of a `paired_view` as the list draws them, with their word differences: their pairs read
    from the store `CHUNK_ITEMS` at a time."""
    drawn = []
    for start in range(0, len(ranked), CHUNK_ITEMS):
        part = ranked[start:start + CHUNK_ITEMS]
        pairs = stored_pairs(view["store"], view["run_a"], view["run_b"],
                             [(r["item_id"], r["index_a"], r["index"]) for r in part]).pairs
        drawn += [with_diff(row_json(pair, r)) for pair, r in zip(pairs, part, strict=True)]
    return drawn


def _reason(repeats: list[ItemResult], name: str) -> str | None:
    ev = next((r.evaluations[name] for r in repeats if name in r.evaluations), None)
    return (ev.reason or ev.error) if ev else None


def row_json(pair: ItemPair, ranked: dict[str, Any]) -> dict[str, Any]:
    """A ranked item as the list draws it (`_row`)."""
    return _row(pair) | {"change": ranked["change"], "changed": ranked["changed"]}


def _row(pair: ItemPair) -> dict[str, Any]:
    """One paired item: each evaluator's scores (the mean of its repeats) and reasons (its first repeat's) in
    both runs, both outputs (the first repeat's) and the flaky marks (`2 of 3 passed`)."""
    evaluators: list[dict[str, Any]] = []
    names = [n for side in (pair.a, pair.b) for r in side for n in r.evaluations]
    for name in dict.fromkeys(names):
        score_a, score_b = pair.score("a", name), pair.score("b", name)
        delta = None if score_a is None or score_b is None else score_b - score_a
        evaluators.append({"name": name, "a": score_a, "b": score_b, "delta": delta,
                           "gain": 0.0 if delta is None else gain(name, delta),
                           "reason_a": _reason(pair.a, name), "reason_b": _reason(pair.b, name)})
    text_a, text_b = _text(pair.a[0]), _text(pair.b[0])
    return {"index": pair.index, "index_a": pair.index_a, "item_id": pair.item_id, "input": pair.b[0].input,
            "status_a": pair.status("a"), "status_b": pair.status("b"), "repeats_a": len(pair.a),
            "repeats_b": len(pair.b), "flaky_a": pair.flaky("a"), "flaky_b": pair.flaky("b"),
            "output_a": text_a, "output_b": text_b, "evaluators": evaluators,
            "output_changed": text_a != text_b, "diverged": diverged_at(pair.a[0], pair.b[0])}


def _text(item: ItemResult) -> str:
    if item.status != "ok":
        return f"[{item.status}] {item.error or ''}".strip()
    out = item.output
    if (transcript := transcript_text(item)) is not None:  # a conversation: its turns, not its JSON
        return transcript
    return out if isinstance(out, str) else json.dumps(out, ensure_ascii=False, indent=1, default=str)


def _rank(row: dict[str, Any]) -> tuple[int, float, int]:
    """Regressions first (worst first), then improvements (best first), then the unchanged, by index."""
    change = row["change"]
    group = 0 if change < 0 else 1 if change > 0 else 2
    return group, -abs(change), row["index"]


def with_diff(row: dict[str, Any]) -> dict[str, Any]:
    """`row` with `diff_a` and `diff_b`: each output as [[kind, text], ...], kind `same`, `del` (only in A)
    or `ins` (only in B)."""
    a, b = _TOKENS.findall(row["output_a"]), _TOKENS.findall(row["output_b"])
    if len(a) > DIFF_WORDS or len(b) > DIFF_WORDS:
        return {**row, "diff_a": [["same", row["output_a"]]], "diff_b": [["same", row["output_b"]]]}
    diff_a: list[list[str]] = []
    diff_b: list[list[str]] = []
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if op == "equal":
            diff_a.append(["same", "".join(a[i1:i2])])
            diff_b.append(["same", "".join(b[j1:j2])])
            continue
        if i2 > i1:
            diff_a.append(["del", "".join(a[i1:i2])])
        if j2 > j1:
            diff_b.append(["ins", "".join(b[j1:j2])])
    return {**row, "diff_a": diff_a, "diff_b": diff_b}


def compare_page(view: dict[str, Any], *, offset: int, limit: int, changed_only: bool) -> dict[str, Any]:
    """One page of a `paired_view`'s ranked rows, with their word differences, and how many rows did not change."""
    rows = view["rows"]
    chosen = [r for r in rows if r["changed"]]
    unchanged = len(rows) - len(chosen)
    chosen = chosen if changed_only else rows
    page = chosen[max(offset, 0): max(offset, 0) + min(max(limit, 1), 500)]
    return {"total": len(chosen), "unchanged": unchanged, "offset": offset, "changed": len(rows) - unchanged,
            "rows": drawn_rows(view, page)}


def unpaired_json(unpaired: list[Any]) -> list[dict[str, Any]]:
    """The unpaired items as the page's list draws them."""
    return [{"index": u.index, "item_id": u.item_id, "reason": u.reason} for u in unpaired]


def unpaired_page(unpaired: list[Any], *, offset: int, limit: int) -> dict[str, Any]:
    """One page of the items only one run has (a changed dataset can leave thousands)."""
    start = max(offset, 0)
    return {"total": len(unpaired), "offset": offset,
            "rows": unpaired_json(unpaired[start: start + min(max(limit, 1), 500)])}
