"""The response budget: every tool result and resource sized for a model's context.

A model's client refuses long tool results (Claude Code: 25,000 tokens by default), so each answer
stays within a budget, 20,000 tokens by default, over everything the model reads (the summary and the
JSON). Tokens are estimated from above (`estimate_tokens`), never from a character count: cobalt's JSON
runs about 3.5 characters per cl100k token, numbers, ids and non-Latin text far fewer, so characters / 4
let a "20,000-token" answer be 22,600 real tokens or more. Null and default fields are left out; long strings are
clipped where they are, saying how much was cut and how to get the rest; a run's items are kept in
their order (failures first) until the budget is spent, and the rest counted with a pointer.
"""

from __future__ import annotations

import json
import re
from typing import Any

from ..ops._details import RunDetails
from ..results._report import ItemResult

DEFAULT_TOKENS = 20_000
MIN_TOKENS = 1_000
MAX_TOKENS = 1_000_000
#: Estimated tokens kept back for the summary line and the notes added after fitting.
_RESERVE = 1_500
#: The longest and the shortest a clipped field may be while items are fitted (characters).
_WIDEST, _NARROWEST = 4_000, 200
#: Characters a clipped string may keep per estimated token of room (the estimate gives 2.4 to 2.6 for
#: prose and JSON: 2 keeps a clipped field within its share).
_CHARS_PER_ROOM = 2

#: The pieces a GPT tokenizer (cl100k, o200k) cuts text into before merging bytes: a word with its leading
#: space or sign, up to three digits, a run of punctuation, whitespace. No merge crosses a piece, so each is at
#: least one token.
_PIECES = re.compile(r"""'(?:[sdmt]|ll|ve|re)|[^\r\n\w]?[^\W\d_]+|\d{1,3}| ?[^\s\w]+[\r\n]*|\s*[\r\n]+"""
                     r"""|\s+(?!\S)|\s+|_+""")
#: An ASCII letter run split where its case turns (`aBcD` is four pieces, `Paris` one): random ids and base64
#: tokenize a letter or two at a time, words several letters at a time.
_CASE_RUNS = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])")


#: A run of letters and digits that reads as an id, a hash or base64 (`0e79b23e`, `aGVsbG8gd29y`): such
#: runs tokenize at one or two characters a token, whatever their pieces.
_ID_RUNS = re.compile(r"[A-Za-z0-9+/]{8,}")


def estimate_tokens(text: str) -> int:
    """A count of tokens from above for `text`, checked against cl100k in the tests (1.0x to 1.6x the real
    count on prose, JSON, numbers, ids, base64, code, punctuation, accented, CJK and emoji text): an id-like
    run 3 tokens per 4 characters; else per piece, an ASCII word one token per 4 letters of each run of one
    case, a number group one, punctuation two per 3 characters, other characters by their UTF-8 length (1
    for 2 bytes, 1.5 for 3, 4 for 4)."""
    total, last, rest = 0, 0, []
    for found in _ID_RUNS.finditer(text):
        run = found.group()
        if _id_like(run):
            rest.append(text[last:found.start()])
            total += -(-3 * len(run) // 4)
            last = found.end()
    rest.append(text[last:])
    return total + sum(_piece_tokens(chunk) for chunk in rest if chunk)


def _id_like(run: str) -> bool:
    letters = sum(c.isalpha() for c in run)
    return (0 < letters < len(run)) or len(_CASE_RUNS.findall(run)) > 2


def _piece_tokens(text: str) -> int:
    total = 0.0
    for piece in _PIECES.findall(text):
        if not piece.isascii():
            total += max(1.0, sum(_WIDE_COST[min(len(c.encode()), 4)] for c in piece))
            continue
        core = piece.lstrip(" ")
        if core[:1].isalpha() or (core[1:2].isalpha() and not core[:1].isalnum()):
            total += (core[:1] != "" and not core[:1].isalpha()) + sum(
                1 + (len(run) - 1) // 4 for run in _CASE_RUNS.findall(core))
        elif core[:1].isdigit() or not core.strip():
            total += 1
        else:
            total += -(-2 * len(core) // 3)
    return int(-(-total // 1))


#: What a character of a non-ASCII piece costs, by its UTF-8 length.
_WIDE_COST = {1: 1 / 3, 2: 1.0, 3: 1.5, 4: 4.0}


def budget_tokens(tokens: int | None) -> int:
    """The budget in estimated tokens: `tokens`, default 20,000."""
    return tokens or DEFAULT_TOKENS


def size(data: Any) -> int:
    """The estimated tokens `data` takes as the compact JSON text an answer carries."""
    return estimate_tokens(dumps(data))


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


def fit_run(details: RunDetails, tokens: int, *, whole: bool = False) -> dict[str, Any]:
    """`details` as JSON within `tokens` (estimated): items in their order (failures first), each field
    clipped to a width that lets most of them in, then as many as fit; `whole`: one item asked for, clipped
    only as far as the budget needs."""
    data = details.model_dump(mode="json", exclude_defaults=True, exclude={"items"})
    room = tokens - size(data) - _RESERVE
    items = details.items
    width = room * _CHARS_PER_ROOM
    cap = max(_NARROWEST, width // 2) if whole else max(_NARROWEST, min(_WIDEST, width // max(1, 2 * len(items))))
    shown: list[dict[str, Any]] = []
    used = 0
    for item in items:
        pointer = (f"pass a higher budget to cobalt_results(run_id={details.run_id!r}, item={item.index})" if whole
                   else f"cobalt_results(run_id={details.run_id!r}, item={item.index}) returns it whole")
        compact = compact_item(item, cap, pointer)
        if whole:  # one item: the widest clip that fits, from its whole text down (text runs 1 to 8 chars a token)
            wide = room * 8
            while (compact := compact_item(item, wide, pointer)) and size(compact) > room and wide > cap:
                wide = max(cap, wide // 2)
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


def fit_any(data: Any, tokens: int, pointer: str) -> tuple[Any, list[str]]:
    """Any answer within `tokens` (estimated): long strings clipped ever shorter, then the longest lists cut.
    Returns the fitted data and what was cut, one sentence each (for the answer's summary)."""
    if size(data) <= tokens:
        return data, []
    for cap in (_WIDEST, 2_000, 1_000, 500, _NARROWEST, 80):
        clipped = clip(data, cap, pointer)
        if size(clipped) <= tokens:
            return clipped, [f"strings longer than {cap:,} characters were clipped to fit the response budget"]
    notes = ["strings longer than 80 characters were clipped to fit the response budget"]
    while size(clipped) > tokens:
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
