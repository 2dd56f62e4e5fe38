"""`task_completion`: whether the agent accomplished its task, judged from its output and tool calls."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from pydantic import Field

from ..._errors import EvaluatorError
from ...llm._judge import parse_judgement
from ...results._report import Evaluation
from .._context import EvalContext
from .._judged import Calls, Judged, as_prompt_text
from .._toolcalls import reported_calls

if TYPE_CHECKING:
    from .._evaluator import Evaluator

PROMPT = """\
Judge whether an AI agent accomplished its task, from its final output and the tool calls it made.

Task: {task}

Tool calls, in order:
{calls}

Final output: {output}

Score 1.0 when the task is fully accomplished, 0.0 when it is not accomplished at all, and in between for \
partial completion. Reply with only a JSON object: {{"score": <number from 0.0 to 1.0>, "reason": "<what was \
done and what was not>"}}"""
SHAPE = '{"score": <number from 0.0 to 1.0>, "reason": "<short reason>"}'


class TaskCompletion(Judged):
    """How far the agent accomplished its task (given as `task`, else the item's `task` or `input`), judged
    from its output and the tool calls in metadata["tool_calls"]; 1 judge call per item."""

    kind = "task_completion"

    task: str | None = Field(None, description="the goal (default: the item's 'task' field, else its 'input')")

    def check_item(self, item: Mapping[str, Any], index: int, evaluator: Evaluator) -> None:
        if self.task is None and "task" in item and not as_prompt_text(item["task"]).strip():
            raise EvaluatorError(f"Evaluator {evaluator.name!r}: dataset item {index} has an empty 'task' "
                                 f"({item['task']!r}); give it the agent's goal, or remove the field to use 'input'.")
        if self.task is None and item.get("task") is None and item.get("input") is None:
            raise EvaluatorError(f"Evaluator {evaluator.name!r} needs the agent's goal: pass task='...', or give "
                                 f"dataset item {index} a 'task' or 'input' field.")

    async def judge(self, ctx: EvalContext, calls: Calls) -> Evaluation:
        task = self.task if self.task is not None else ctx.item.get("task", ctx.input)
        try:
            made = reported_calls(ctx.metadata)
        except ValueError as exc:
            return Evaluation(status="eval-error", error=f"the agent's {exc}")
        listed = "\n".join(f"{i}. {c.name}({json.dumps(c.arguments, ensure_ascii=False, default=str)})"
                           for i, c in enumerate(made, start=1)) or "(none reported)"
        prompt = PROMPT.format(task=as_prompt_text(task), calls=listed, output=as_prompt_text(ctx.output))
        score, reason = await calls.ask("completion", prompt, parse_judgement, SHAPE)
        return calls.result(score=score, reason=reason)
