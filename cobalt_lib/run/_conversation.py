"""Running a conversation item: the agent called once per user turn with the conversation so far.

The user's turns come from the item's script, or from the simulated user (`conversations._simulator`),
asked before each turn with the scenario and the conversation so far. The item's output is the
transcript; its metadata holds each turn's latency, tokens, cost and metadata, and what the simulated
user cost (`conversations._transcript`). The first failed or timed-out turn ends the conversation and
is the item's status and error (`turn 3: ...`).
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .._timeouts import FinishedWhileCancelled
from ..conversations._spec import Conversation, Scenario, Script, conversation_of
from ..llm._judge import Judge
from ..llm._providers import Endpoint, import_sdks
from ..results._conversation import META
from ..results._report import Evaluation, ItemResult
from ._agent import AgentContext, call_agent, input_hash

if TYPE_CHECKING:
    from ..config._config import Config
    from ..experiments._experiment import Experiment
    from ..results._spans import SpanRecord
    from ._session import Session


@dataclass(frozen=True)
class ConversationContext(AgentContext):
    """What the agent receives on each turn of a conversation item: the item, the conversation so far
    (`messages`, OpenAI-style `{"role", "content"}` dicts ending with the user's new message) and the
    turn number (from 1). `ctx.input` is the user's new message, so a single-turn agent answers too."""

    messages: list[dict[str, Any]] = field(default_factory=list)
    turn: int = 1

    @property
    def input(self) -> Any:
        return self.messages[-1]["content"] if self.messages else self.item.get("input")


def check_conversations(experiment: Experiment, config: Config, indices: Iterable[int]) -> Endpoint | None:
    """Validate the conversation items among `indices` (one sentence naming the item and field) and
    resolve the simulated user's endpoint when one of them needs it (its key checked now, before any
    agent call); None when no item is a simulated conversation."""
    simulated = False
    for index in indices:
        conversation = conversation_of(experiment.dataset[index], f"dataset item {index}")
        simulated = simulated or isinstance(conversation, Scenario)
    if not simulated:
        return None
    from ..conversations._simulator import SimulatedUser  # on use: a run of no scenario loads no simulated user

    user = getattr(experiment, "simulator", None) or SimulatedUser()
    endpoint = user.endpoint(config)
    import_sdks([endpoint])
    return endpoint


@dataclass
class _SimulatorSpend:
    """What asking the simulated user cost over one conversation."""

    endpoint: Endpoint | None
    asked: list[Evaluation] = field(default_factory=list)

    def describe(self) -> dict[str, Any]:
        costs = [e.cost_usd for e in self.asked if e.cost_usd is not None]
        return {"model": self.endpoint.label if self.endpoint else None, "turns": len(self.asked),
                "calls": sum(e.judge_calls for e in self.asked), "cached": sum(e.cached for e in self.asked),
                "input_tokens": sum(e.input_tokens for e in self.asked),
                "output_tokens": sum(e.output_tokens for e in self.asked),
                "cost_usd": math.fsum(costs) if costs else None}


async def converse(session: Session, ctx: AgentContext, conversation: Conversation) -> ItemResult:
    """Play `conversation` with the agent; the item's result holds the transcript and each turn's record."""
    plan = session.plan
    item = ctx.item
    result = ItemResult(index=ctx.index, run_index=ctx.run_index, input=item.get("input", item), item=item,
                        input_hash=input_hash(item))
    messages: list[dict[str, Any]] = []
    records: list[dict[str, Any]] = []
    spans: list[SpanRecord] = []
    spend = _SimulatorSpend(getattr(plan, "simulator", None))
    stopped = ("the script ended" if isinstance(conversation, Script)
               else f"the turn limit ({conversation.max_turns}) was reached")
    for turn in range(1, conversation.max_turns + 1):
        user, problem = await _user_message(session, conversation, turn, messages, spend)
        if problem == "done":
            stopped = "the simulated user ended it"
            break
        if user is None:
            result.status, result.error = "error", f"turn {turn}: {problem}"
            break
        messages.append({"role": "user", "content": user})
        turn_ctx = ConversationContext(item=item, index=ctx.index, run_index=ctx.run_index, messages=list(messages),
                                       turn=turn)
        try:
            answer = await call_agent(plan.experiment.runner, turn_ctx, timeout=plan.timeout,
                                      limit=session.agent_limit, threads=session.threads, prices=plan.prices)
        except FinishedWhileCancelled as cancelled:
            cancelled.item = None  # half a conversation is no output: a resumed run plays it again
            raise
        records.append(_record(turn, answer))
        spans += answer.spans  # what a replayed turn recorded (a monitor's window): the item's spans
        if answer.status != "ok":
            result.status, result.error, result.traceback = answer.status, f"turn {turn}: {answer.error}", \
                answer.traceback
            break
        messages.append({"role": "assistant", "content": as_text(answer.output)})
    _fill(result, messages, records, conversation, stopped, spend)
    result.spans = spans
    return result


async def _user_message(session: Session, conversation: Conversation, turn: int, messages: list[dict[str, Any]],
                        spend: _SimulatorSpend) -> tuple[str | None, str]:
    """The user's message for `turn`, or None and why not (`done`: the simulated user ended it)."""
    if isinstance(conversation, Script):
        return conversation.turns[turn - 1].content, ""
    if turn == 1 and conversation.opening:
        return conversation.opening, ""
    endpoint = spend.endpoint
    assert endpoint is not None, "a simulated conversation's plan resolves the simulated user's endpoint"
    from ..conversations._simulator import next_turn

    asked = await next_turn(interactive_judge(session), endpoint, conversation, messages)
    spend.asked.append(asked.evaluation)
    if asked.done:
        if turn == 1:
            return None, "the simulated user ended the conversation before its first message; check the scenario"
        return None, "done"
    if asked.message is None:
        return None, f"the simulated user gave no usable message: {asked.evaluation.error}"
    return asked.message, ""


def interactive_judge(session: Session) -> Judge:
    """The judge that asks the simulated user: the run's own, but never through a provider's batch API (a
    run judging in batches): each turn of a conversation waits on the user's answer, so it is asked at
    once, through the run's cache and clients."""
    judge = session.judge
    if getattr(judge, "batch", None) is None:
        return judge
    own: Judge | None = vars(judge).get("_simulated_user")
    if own is None:  # kept on the run's judge: it lives as long as the run's clients
        own = vars(judge)["_simulated_user"] = Judge(judge.cache, session.plan.judge_concurrency, judge.prices,
                                                     clients=judge.clients)
    return own


def _record(turn: int, answer: ItemResult) -> dict[str, Any]:
    record: dict[str, Any] = {"turn": turn, "status": answer.status, "latency_ms": answer.latency_ms,
                              "tokens": answer.tokens, "cost_usd": answer.cost_usd}
    if answer.metadata:
        record["metadata"] = answer.metadata
    if answer.status == "ok" and not isinstance(answer.output, str):
        record["output"] = answer.output  # the transcript holds it as JSON text; evaluators get the value
    return record


def _fill(result: ItemResult, messages: list[dict[str, Any]], records: list[dict[str, Any]],
          conversation: Conversation, stopped: str, spend: _SimulatorSpend) -> None:
    result.output = messages
    latencies = [r["latency_ms"] for r in records if r["latency_ms"] is not None]
    result.latency_ms = math.fsum(latencies) if latencies else None
    tokens = [r["tokens"] for r in records if r["tokens"] is not None]
    result.tokens = sum(tokens) if tokens else None
    costs = [r["cost_usd"] for r in records if r["cost_usd"] is not None]
    result.cost_usd = math.fsum(costs) if costs else None
    meta: dict[str, Any] = {"kind": "scripted" if isinstance(conversation, Script) else "simulated",
                            "turns": records, "stopped": stopped if result.status == "ok" else result.error}
    if isinstance(conversation, Scenario):
        meta["simulator"] = spend.describe()
    result.metadata = {META: meta}


def as_text(output: Any) -> str:
    """An agent's answer as a message's content: a string as it is, any other value as compact JSON."""
    return output if isinstance(output, str) else json.dumps(output, ensure_ascii=False, sort_keys=True)

