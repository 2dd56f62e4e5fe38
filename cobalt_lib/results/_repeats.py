"""Repeats (`runs > 1`): how one repeat of an item is named, and whether an item passed in some of its
repeats but not all (flaky). The CLI, the pages, compare and the Dagster metadata all use these."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from ._report import ItemResult

if TYPE_CHECKING:
    from ..store._store import Store


def item_label(index: int, run_index: int = 0, repeats: int = 1) -> str:
    """`3` for item 3 of a run without repeats; `3:1` for its repeat with run index 1 (0-based, as
    `ctx.run_index`) in a run with repeats. `cobalt show RUN 3:1` takes the same form."""
    return f"{index}:{run_index}" if repeats > 1 else str(index)


def repeat_passed(item: ItemResult) -> bool:
    """This repeat passed: the agent call succeeded, and no evaluation is an eval-error or below its pass mark."""
    return item.status == "ok" and all(ev.status == "ok" and ev.passed is not False
                                       for ev in item.evaluations.values())


def passes(repeats: Sequence[ItemResult]) -> tuple[int, int]:
    """(repeats that passed, repeats)."""
    return sum(repeat_passed(r) for r in repeats), len(repeats)


def flaky_text(repeats: Sequence[ItemResult]) -> str | None:
    """`2 of 3 passed` when the item passed in some of its repeats and failed in others, else None."""
    passed, total = passes(repeats)
    return f"{passed} of {total} passed" if 0 < passed < total else None


def by_index(items: Iterable[ItemResult]) -> dict[int, list[ItemResult]]:
    """`{index: [its repeats, by run index]}`."""
    groups: dict[int, list[ItemResult]] = {}
    for item in items:
        groups.setdefault(item.index, []).append(item)
    return {index: sorted(group, key=lambda i: i.run_index) for index, group in sorted(groups.items())}


_FLAKY_SQL = (
    "WITH r AS (SELECT o.item_index, o.run_index, o.status = 'ok' AND NOT coalesce(bool_or(s.status <> 'ok' "
    "OR s.passed = false), false) AS ok FROM outputs o LEFT JOIN scores s ON s.run_id = o.run_id "
    "AND s.item_index = o.item_index AND s.run_index = o.run_index WHERE o.run_id = ? "
    "AND o.item_index IN (SELECT unnest(?)) GROUP BY o.item_index, o.run_index, o.status) "
    "SELECT item_index, count(*) FILTER (WHERE ok) AS passed, count(*) AS repeats FROM r GROUP BY item_index "
    "HAVING count(*) FILTER (WHERE ok) BETWEEN 1 AND count(*) - 1")


def stored_flaky(store: Store, run_id: str, indexes: Sequence[int]) -> dict[int, str]:
    """`{index: "2 of 3 passed"}` for the stored items among `indexes` that are flaky (`flaky_text`)."""
    if not indexes:
        return {}
    rows = store.query(_FLAKY_SQL, [run_id, sorted(set(indexes))])
    return {int(r["item_index"]): f"{r['passed']} of {r['repeats']} passed" for r in rows}
