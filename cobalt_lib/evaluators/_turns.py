"""Per-turn scoring of conversation items: an evaluator declared `per_turn` scores every assistant
answer of a conversation as an item of its own, and the conversation gets the turns' mean (or lowest)
score with every turn's verdict kept (`Evaluation.turns`).

A turn is scored as an item whose `input` is the user's message, whose output is the agent's answer
that turn (its own value, not the JSON text the transcript holds), with that turn's metadata, latency,
tokens and cost; `expected_output` is the scripted turn's own when the script gives one; the item's
other fields stay, and `turn` (from 1) and `messages` (the conversation up to that answer) are added.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from .._errors import EvaluatorError
from ..conversations._spec import FIELD, Script, conversation_of, is_conversation
from ..results._conversation import transcript_of, turn_records
from ..results._direction import passes
from ..results._report import Evaluation, TurnScore
from ._context import EvalContext

if TYPE_CHECKING:
    from .._threads import DaemonThreads
    from ..llm._judge import Judge
    from ..llm._providers import Endpoint
    from ._evaluator import Evaluator

__all__ = ["check_turns", "evaluate_item", "is_conversation", "turn_aggregate"]

_AGGREGATES = ("mean", "min")


def turn_aggregate(value: bool | str, where: str) -> str | None:
    """`per_turn=` as the aggregate it asks for (`mean`, `min`), None when the evaluator is not per turn."""
    if value is False:
        return None
    if value is True:
        return "mean"
    if value in _AGGREGATES:
        return str(value)
    raise EvaluatorError(f"{where}: per_turn={value!r} is not valid; give True (the turns' mean), 'mean' or 'min' "
                         "(the lowest turn's score).")


def turn_item(item: Mapping[str, Any], turn: int, user: Any, messages: list[dict[str, Any]]) -> dict[str, Any]:
    """The item a turn is scored as (see the module's docstring)."""
    scored = {k: v for k, v in item.items() if k not in (FIELD, "expected_output")}
    conversation = conversation_of(item)
    scripted = conversation.turns[turn - 1] if isinstance(conversation, Script) and turn <= len(conversation.turns) \
        else None
    if scripted is not None and scripted.has_expected:
        scored["expected_output"] = scripted.expected_output
    return {**scored, "input": user, "turn": turn, "messages": messages}


def check_turns(evaluator: Evaluator, item: Mapping[str, Any], index: int) -> None:
    """The kind's item check on each turn the conversation will have (a script's turns; a simulated
    user's first, whose message is not known yet)."""
    conversation = conversation_of(item, f"dataset item {index}")
    users = [t.content for t in conversation.turns] if isinstance(conversation, Script) else [""]
    for turn, user in enumerate(users, start=1):
        try:
            evaluator.kind.check_item(turn_item(item, turn, user, []), index, evaluator)
        except EvaluatorError as exc:
            raise EvaluatorError(f"{exc} ({evaluator.name!r} is per turn: this is turn {turn} of item {index}'s "
                                 "conversation, scored with the user's message as its input.)") from None


def turn_contexts(ctx: EvalContext) -> list[EvalContext] | None:
    """One context per assistant answer of the conversation `ctx` holds; None when it holds none."""
    transcript = transcript_of(ctx.output, ctx.metadata)
    if transcript is None:
        return None
    records = {r.get("turn"): r for r in turn_records(ctx.metadata)}
    contexts = []
    for position, message in enumerate(transcript):
        if message.get("role") != "assistant" or position == 0:
            continue
        turn = position // 2 + 1
        record = records.get(turn, {})
        item = turn_item(ctx.item, turn, transcript[position - 1].get("content"), transcript[: position + 1])
        contexts.append(EvalContext(item=item, output=record.get("output", message.get("content")),
                                    metadata=dict(record.get("metadata") or {}), index=ctx.index,
                                    run_index=ctx.run_index, latency_ms=record.get("latency_ms"),
                                    tokens=record.get("tokens"), cost_usd=record.get("cost_usd")))
    return contexts


async def evaluate_item(evaluator: Evaluator, ctx: EvalContext, judge: Judge | None, endpoint: Endpoint | None, *,
                        threads: DaemonThreads | None = None, timeout: float | None = None) -> Evaluation:
    """Score one item: once, or turn by turn when the evaluator is per turn and the item a conversation."""
    contexts = turn_contexts(ctx) if evaluator.per_turn else None
    if contexts is None:
        return await evaluator.evaluate(ctx, judge, endpoint, threads=threads, timeout=timeout)
    if not contexts:
        return Evaluation(status="eval-error", error="the conversation has no assistant answer to score", turns=[])
    results = await asyncio.gather(*(evaluator.evaluate(c, judge, endpoint, threads=threads, timeout=timeout)
                                     for c in contexts))
    return combine(evaluator, [(c.item["turn"], r) for c, r in zip(contexts, results, strict=True)])


def combine(evaluator: Evaluator, scored: list[tuple[int, Evaluation]]) -> Evaluation:
    """The conversation's evaluation: the turns' mean (or lowest) score, every turn's verdict, usage summed.
    Any turn's eval-error is the conversation's: a turn that could not be scored is not a pass."""
    turns = [TurnScore(turn=n, score=e.score, reason=e.reason, status=e.status, passed=e.passed, error=e.error)
             for n, e in scored]
    records = [e for _, e in scored]
    costs = [e.cost_usd for e in records if e.cost_usd is not None]
    usage: dict[str, Any] = {
        "judge_model": next((e.judge_model for e in records if e.judge_model), None),
        "input_tokens": sum(e.input_tokens for e in records), "output_tokens": sum(e.output_tokens for e in records),
        "judge_calls": sum(e.judge_calls for e in records),
        "latency_ms": math.fsum(e.latency_ms or 0.0 for e in records), "cost_usd": math.fsum(costs) if costs else None,
        "cached": all(e.cached for e in records), "turns": turns}
    failed = next(((n, e) for n, e in scored if e.status != "ok" or e.score is None), None)
    if failed is not None:
        n, e = failed
        return Evaluation(status="eval-error", error=f"turn {n}: {e.error or 'no score'}", **usage)
    scores = [(e.score, n) for n, e in scored if e.score is not None]
    how = evaluator.per_turn or "mean"
    value = min(s for s, _ in scores) if how == "min" else math.fsum(s for s, _ in scores) / len(scores)
    (low, worst), high = min(scores), max(s for s, _ in scores)
    worst_reason = dict(scored)[worst].reason
    reason = f"{how} of {len(scores)} turns; "
    if low == high:
        reason += "every turn scored the same"
    else:
        reason += f"lowest: turn {worst}" + (f" ({worst_reason})" if worst_reason else "")
    return Evaluation(score=value, reason=reason, passed=passes(evaluator.name, value, evaluator.threshold), **usage)
