"""The response budget: every tool result and resource sized for a model's context.

A model's client refuses long tool results (Claude Code: 25,000 tokens by default), so each answer
stays within a budget, 20,000 tokens by default, estimated as characters / 4 over everything the
model reads (the summary and the JSON). Null and default fields are left out; long strings are
clipped where they are, saying how much was cut and how to get the rest; a run's items are kept in
their order (failures first) until the budget is spent, and the rest counted with a pointer.
"""

from __future__ import annotations

import json
from typing import Any

from ..ops._details import RunDetails
from ..results._report import ItemResult

DEFAULT_TOKENS = 20_000
MIN_TOKENS = 1_000
MAX_TOKENS = 1_000_000
CHARS_PER_TOKEN = 4
#: Characters kept back for the summary line and the notes added after fitting.
_RESERVE = 1_500
#: The longest and the shortest a clipped field may be while items are fitted.
_WIDEST, _NARROWEST = 4_000, 200


def budget_chars(tokens: int | None) -> int:
    """The budget in characters: `tokens` (default 20,000) times 4."""
    return (tokens or DEFAULT_TOKENS) * CHARS_PER_TOKEN


def size(data: Any) -> int:
    """The characters `data` takes as the compact JSON text an answer carries."""
    return len(dumps(data))


def dumps(data: Any) -> str:
    return json.dumps(data, ensure_ascii=False, separators=(",", ":"), default=str)


def clip(value: Any, cap: int, pointer: str) -> Any:
    """`value` with every string longer than `cap` cut to `cap` characters and a note of how much was cut
    and where the rest is; lists and objects are clipped element by element."""
    if isinstance(value, str):
        if len(value) <= cap:
            return value
        return f"{value[:cap]}… [{len(value) - cap:,} of {len(value):,} characters cut; {pointer}]"
    if isinstance(value, list):
        return [clip(v, cap, pointer) for v in value]
    if isinstance(value, dict):
        return {k: clip(v, cap, pointer) for k, v in value.items()}
    return value


def compact_item(item: ItemResult, cap: int, pointer: str) -> dict[str, Any]:
    """One item without null or default fields (an `ok` status, a zero run index), its input once (the
    item's other fields beside it), long strings clipped."""
    data = item.model_dump(mode="json", exclude_defaults=True, exclude={"input_hash"})
    fields = data.get("item")
    if isinstance(fields, dict) and "input" in fields and fields["input"] == data.get("input"):
        rest = {k: v for k, v in fields.items() if k != "input"}
        if rest:
            data["item"] = rest
        else:
            data.pop("item")
    return clip(data, cap, pointer)


def fit_run(details: RunDetails, chars: int, *, whole: bool = False) -> dict[str, Any]:
    """`details` as JSON within `chars`: items in their order (failures first), each field clipped to a
    width that lets most of them in, then as many as fit; `whole`: one item asked for, clipped only as
    far as the budget needs."""
    data = details.model_dump(mode="json", exclude_defaults=True, exclude={"items"})
    room = chars - size(data) - _RESERVE
    items = details.items
    cap = max(_NARROWEST, room // 2) if whole else max(_NARROWEST, min(_WIDEST, room // max(1, 2 * len(items))))
    shown: list[dict[str, Any]] = []
    used = 0
    for item in items:
        pointer = (f"pass a higher budget to cobalt_results(run_id={details.run_id!r}, item={item.index})" if whole
                   else f"cobalt_results(run_id={details.run_id!r}, item={item.index}) returns it whole")
        compact = compact_item(item, cap, pointer)
        cost = size(compact) + 1
        if shown and used + cost > room:
            break
        shown.append(compact)
        used += cost
    data["items"] = shown
    cut = len(items) - len(shown)
    if cut:
        data["items_omitted"] = details.items_omitted + cut
        data["more"] = (f"{data['items_omitted']} more items are not shown, to stay within the response budget; "
                        f"cobalt_results(run_id={details.run_id!r}, item=N) returns item N whole, "
                        "only_failures=true the failures alone, and budget=<tokens> raises the budget.")
    return data


def fit_any(data: Any, chars: int, pointer: str) -> tuple[Any, list[str]]:
    """Any answer within `chars`: long strings clipped ever shorter, then the longest lists cut. Returns the
    fitted data and what was cut, one sentence each (for the answer's summary)."""
    if size(data) <= chars:
        return data, []
    for cap in (_WIDEST, 2_000, 1_000, 500, _NARROWEST, 80):
        clipped = clip(data, cap, pointer)
        if size(clipped) <= chars:
            return clipped, [f"strings longer than {cap:,} characters were clipped to fit the response budget"]
    notes = ["strings longer than 80 characters were clipped to fit the response budget"]
    while size(clipped) > chars:
        path, longest = _longest_list(clipped)
        if longest is None or len(longest) <= 1:
            break
        before = len(longest)
        del longest[max(1, before // 2):]
        notes.append(f"{path or 'the list'} cut from {before} to {len(longest)} entries to fit the response budget")
    return clipped, notes


def _longest_list(data: Any, path: str = "") -> tuple[str, list[Any] | None]:
    """The list in `data` that takes the most characters, and where it is."""
    best: tuple[int, str, list[Any] | None] = (0, "", None)
    children = data.items() if isinstance(data, dict) else enumerate(data) if isinstance(data, list) else ()
    if isinstance(data, list) and len(data) > 1:
        best = (size(data), path, data)
    for key, value in children:
        if isinstance(value, dict | list):
            where, found = _longest_list(value, f"{path}.{key}" if path else str(key))
            if found is not None and size(found) > best[0]:
                best = (size(found), where, found)
    return best[1], best[2]
