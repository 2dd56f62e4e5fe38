"""A conversation item as text: its transcript turn by turn with each turn's scores, and where two
runs' conversations diverged. The terminal (`cobalt show`, `cobalt compare`), Markdown and the compare page use
these; the commands and the page only call them."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .._numbers import count, duration, money, score
from ..results._compare import Comparison
from ..results._conversation import META, Divergence, first_divergence, transcript_of, turn_records
from ..results._report import ItemResult, TurnScore


def transcript_lines(item: ItemResult) -> list[str] | None:
    """`transcript (...)`, then per turn its latency, the user's and the assistant's messages and every
    per-turn score; None when the item is not a conversation."""
    transcript = transcript_of(item.output, item.metadata)
    if transcript is None:
        return None
    meta: Mapping[str, Any] = item.metadata[META]
    records = {r.get("turn"): r for r in turn_records(item.metadata)}
    verdicts = {name: {t.turn: t for t in ev.turns} for name, ev in item.evaluations.items() if ev.turns}
    turns = (len(transcript) + 1) // 2
    lines = [f"transcript ({meta.get('kind', 'scripted')}, {count(turns, 'turn')}; stopped: {meta.get('stopped')}):"]
    for position, message in enumerate(transcript):
        turn = position // 2 + 1
        if position % 2 == 0:
            record = records.get(turn, {})
            lines.append(f"  turn {turn} ({duration(record.get('latency_ms'))}):")
        content = str(message.get("content", ""))
        first, *rest = content.splitlines() or [""]
        lines += [f"    {message.get('role')}: {first}", *(f"      {line}" for line in rest)]
        if message.get("role") == "assistant":
            lines += [f"    {line}" for name, by_turn in verdicts.items() if (t := by_turn.get(turn))
                      for line in [turn_score_text(name, t)]]
    if isinstance(simulator := meta.get("simulator"), Mapping):
        lines.append(simulator_text(simulator))
    return lines


def transcript_text(item: ItemResult) -> str | None:
    """A conversation's transcript as plain text, a `turn N` line before each turn's messages (what the
    compare page diffs word by word); None when the item is not a conversation."""
    transcript = transcript_of(item.output, item.metadata)
    if transcript is None:
        return None
    lines = []
    for position, message in enumerate(transcript):
        if position % 2 == 0:
            lines.append(f"turn {position // 2 + 1}")
        lines.append(f"{message.get('role')}: {message.get('content', '')}")
    return "\n".join(lines)


def transcript_summary(item: ItemResult) -> str | None:
    """`2 turns · last answer: ...` for a conversation (a table's output cell), else None."""
    transcript = transcript_of(item.output, item.metadata)
    if transcript is None:
        return None
    last = next((m for m in reversed(transcript) if m.get("role") == "assistant"), None)
    turns = count((len(transcript) + 1) // 2, "turn")
    return f"{turns} · last answer: {last.get('content')}" if last else f"{turns} · no answer"



def diverged_at(a: ItemResult, b: ItemResult) -> int | None:
    """The turn from which two runs' transcripts of one conversation differ (None: not a conversation, or the
    same), as the compare page marks a pair."""
    first, second = (transcript_of(item.output, item.metadata) for item in (a, b))
    parted = first_divergence(first, second) if first is not None and second is not None else None
    return parted.turn if parted else None


def turn_score_text(name: str, t: TurnScore) -> str:
    """`has-answer: 0.000 FAIL (lacks '4')`, or `has-answer: eval-error (...)`."""
    if t.status != "ok":
        return f"{name}: eval-error ({t.error})"
    mark = {True: " pass", False: " FAIL", None: ""}[t.passed]
    return f"{name}: {score(t.score)}{mark}" + (f" ({t.reason})" if t.reason else "")


def simulator_text(simulator: Mapping[str, Any]) -> str:
    """`simulated user openai/gpt-4o-mini: 3 turns asked, 3 from the cache, 0 model calls, $0.0000`."""
    cost = simulator.get("cost_usd")
    return (f"simulated user {simulator.get('model')}: {count(int(simulator.get('turns') or 0), 'turn')} asked, "
            f"{simulator.get('cached', 0)} from the cache, {count(int(simulator.get('calls') or 0), 'model call')}"
            + (f", {money(cost)}" if cost is not None else ""))


def divergence_text(d: Divergence) -> str:
    """`item 0 (refund): diverged at turn 2, the assistant's answer: A 'x' → B 'y'`."""
    who = "the assistant's answer" if d.role == "assistant" else "the user's message"
    return (f"item {d.index} ({d.item_id}): diverged at turn {d.turn}, {who}: A {_quoted(d.a)} → B {_quoted(d.b)}")


def divergence_lines(c: Comparison) -> list[str]:
    """One line on the paired conversations, then one per conversation that diverged."""
    if not c.conversations:
        return []
    same = c.conversations - len(c.diverged)
    head = (f"conversations: {count(c.conversations, 'paired conversation')}, {same} replayed identically, "
            f"{len(c.diverged)} diverged")
    return [head, *(divergence_text(d) for d in c.diverged)]


def _quoted(text: str | None, limit: int = 60) -> str:
    if text is None:
        return "(ended)"
    flat = " ".join(text.split())
    return repr(flat if len(flat) <= limit else flat[: limit - 1] + "…")
