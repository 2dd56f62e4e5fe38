"""What the conversational kinds (goal_completion, role_adherence, knowledge_retention, turn_relevancy)
share: they score a conversation item's transcript as a whole, with one judge call; the verdict kinds
give each assistant answer a verdict, kept as the evaluation's per-turn scores."""

from __future__ import annotations

import abc
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, ClassVar

from .._errors import EvaluatorError
from ..conversations._spec import is_conversation
from ..results._conversation import transcript_of
from ..results._report import Evaluation, TurnScore
from ._context import EvalContext
from ._judged import Calls, Judged, flag, read_list, truthy

if TYPE_CHECKING:
    from ._evaluator import Evaluator


def numbered_transcript(messages: list[dict[str, Any]]) -> str:
    """`Turn 1` / `user: ...` / `assistant: ...` blocks, one per turn."""
    lines = []
    for position, message in enumerate(messages):
        if position % 2 == 0:
            lines.append(f"Turn {position // 2 + 1}")
        lines.append(f"{message.get('role', 'user')}: {message.get('content', '')}")
    return "\n".join(lines)


def answered_turns(messages: list[dict[str, Any]]) -> list[int]:
    """The turns (from 1) that have an assistant answer."""
    return [position // 2 + 1 for position, m in enumerate(messages) if m.get("role") == "assistant"]


class Conversational(Judged):
    """Base of the kinds that judge a whole conversation: they need a conversation item."""

    async def judge(self, ctx: EvalContext, calls: Calls) -> Evaluation:
        transcript = transcript_of(ctx.output, ctx.metadata)
        if transcript is None or not answered_turns(transcript):
            return Evaluation(status="eval-error", error=f"{self.kind} scores a conversation's transcript, and this "
                                                         "output is not one with an assistant answer")
        return await self.judge_conversation(ctx, transcript, calls)

    def check_item(self, item: Mapping[str, Any], index: int, evaluator: Evaluator) -> None:
        if not is_conversation(item):
            raise EvaluatorError(f"Evaluator {evaluator.name!r} ({self.kind}) scores conversations, and dataset item "
                                 f"{index} is not one; give it a 'conversation' field (scripted 'turns' or a "
                                 "simulated user's 'goal'), or score it with another evaluator.")

    @abc.abstractmethod
    async def judge_conversation(self, ctx: EvalContext, transcript: list[dict[str, Any]], calls: Calls) -> Evaluation:
        """Score the transcript with `calls.ask(...)`."""


class PerTurnVerdicts(Conversational):
    """Base of the kinds that give every assistant answer a yes/no verdict: the score is the share of
    good answers, and each verdict is a per-turn score (1 or 0) with its reason."""

    #: The verdict field the judge answers, and whether `true` is the good answer.
    verdict: ClassVar[str] = ""
    good_when: ClassVar[bool] = True
    #: How the reason names the answers (`answers stay in the role`).
    described: ClassVar[str] = ""

    @abc.abstractmethod
    def prompt(self, ctx: EvalContext, transcript: list[dict[str, Any]], count: int) -> str:
        """The prompt asking for one verdict per assistant answer."""

    async def judge_conversation(self, ctx: EvalContext, transcript: list[dict[str, Any]], calls: Calls) -> Evaluation:
        turns = answered_turns(transcript)
        shape = f'{{"verdicts": [{{"turn": <turn number>, "{self.verdict}": true or false, "reason": "<why>"}}]}}'
        verdicts = await calls.ask(self.verdict, self.prompt(ctx, transcript, len(turns)),
                                   lambda text: read_list(text, "verdicts", lambda e: flag(e, self.verdict),
                                                          count=len(turns)), shape)
        scores = []
        for turn, entry in zip(turns, verdicts, strict=True):
            good = truthy(entry, self.verdict) == self.good_when
            reason = entry.get("reason")
            scores.append(TurnScore(turn=turn, score=1.0 if good else 0.0, passed=good,
                                    reason=reason if isinstance(reason, str) else None))
        bad = [t.turn for t in scores if not t.passed]
        reason = f"{len(turns) - len(bad)}/{len(turns)} {self.described}"
        if bad:
            reason += "; not in turn " + ", ".join(map(str, bad))
        return calls.result(score=(len(turns) - len(bad)) / len(turns), reason=reason, turns=scores)
