"""Growing a dataset from what people found: a run's items, or the items labelled as failing, added as a new
version, each keeping where it came from (run, item, label, who).

An item whose identity the dataset already holds is left as it is (said in `already_in`): a regression set
grows by new cases, and the same failure found twice is one case.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .._errors import DatasetError
from .._numbers import number
from ..experiments._dataset import resolve_stored
from ..store import Store
from ..store._history import resolve_run
from ._models import PushOutcome
from ._versions import Row, _name, latest_rows, write_version


def add_from_run(store: Store, name: str, run_ref: str, indices: Sequence[int], *,
                 split: str | None = None, who: str | None = None) -> PushOutcome:
    """Add the items at `indices` of run `run_ref` (an id, a prefix, `latest`) to dataset `name`; `who` added
    them (the pages say), kept in each item's origin."""
    name = _name(name)
    if not indices:
        raise DatasetError("--items names no item; give the item indices to add, such as --items 3,7.")
    run_id = resolve_run(store, run_ref)
    experiment = store.experiment_of(run_id)
    found = {row["item_index"]: row for row in store.run_items(run_id, indices)}
    missing = [i for i in indices if i not in found]
    if missing:
        raise DatasetError(f"Run {run_id} has no item {', '.join(map(str, missing))}; `cobalt show {run_id}` lists "
                           "its items.")
    by = {"who": who} if who else {}
    rows = [{"item": found[i]["input"], "split": split,
             "origin": {"run_id": run_id, "experiment": experiment, "item_index": i, **by}} for i in indices]
    return _append(store, name, rows, f"run {run_id}")


def add_from_labels(store: Store, name: str, experiment: str, *, evaluator: str | None = None,
                    at_most: float = 0.0, split: str | None = None) -> PushOutcome:
    """Add the items of `experiment` whose current label (of `evaluator`, or of any) is `at_most` or below (fail
    is 0 on a pass/fail scale) to dataset `name`; each item as the newest run holding it stored it."""
    name = _name(name)
    labels = [row for row in store.labels(experiment, evaluator)
              if row.get("value") is not None and float(row["value"]) <= at_most]
    if not labels:
        scope = f"{experiment!r}" + (f", evaluator {evaluator!r}" if evaluator else "")
        raise DatasetError(f"No label of {scope} is {number(at_most)} or below; label failing items first (the pages, "
                           "or `cobalt labels import`).")
    held = store.items_by_id(experiment, sorted({str(row["item_id"]) for row in labels}))
    rows, seen = [], set()
    for label in labels:
        key = str(label["item_id"])
        if key in seen or key not in held:
            continue
        seen.add(key)
        rows.append({"item": held[key]["input"], "split": split, "origin": _label_origin(label, held[key])})
    if not rows:
        raise DatasetError(f"No stored run of {experiment!r} holds the labelled items "
                           f"({', '.join(sorted({str(r['item_id']) for r in labels})[:5])}); run the experiment first.")
    return _append(store, name, rows, f"labels of {experiment}")


def add_items(store: Store, name: str, items: Sequence[dict[str, Any]], *, origin: dict[str, Any], where: str,
              split: str | None = None) -> PushOutcome:
    """Add `items` (each with its `origin`, such as the production trace it came from) to the stored dataset
    `name` as a new version; a name the store does not hold is a DatasetError naming those it holds."""
    name = _name(name)
    resolve_stored(store, name, None, None)
    return _append(store, name, [{"item": dict(item), "split": split, "origin": origin} for item in items], where)


def _label_origin(label: dict[str, Any], held: dict[str, Any]) -> dict[str, Any]:
    return {"run_id": label.get("run_id") or held["run_id"], "experiment": label.get("experiment"),
            "item_index": label.get("item_index") if label.get("run_id") else held["item_index"],
            "label": {"evaluator": label.get("evaluator"), "value": label.get("value"),
                      "note": label.get("note") or None, "who": label.get("who")}}


def _append(store: Store, name: str, rows: list[Row], where: str) -> PushOutcome:
    from ..results._identity import item_identity

    current = latest_rows(store, name)
    present = {item_identity(row["item"]) for row in current}
    added, already, new = [], [], []
    for row in rows:
        key = item_identity(row["item"])
        if key in present:
            already.append(key)
            continue
        added.append(key)
        new.append(row)
        present.add(key)
    outcome = write_version(store, name, current + new, source=where, note=None, where=where)
    return outcome.model_copy(update={"added": added, "already_in": already})
