"""What the model-judged kinds (faithfulness, g_eval, ...) share: the judge options and endpoint, the
calls of one item summed into one Evaluation, JSON answers read leniently, and the item's contexts.

Every call goes through `Judge.ask`: cache, concurrency bound, one stricter retry, tokens and cost.
An answer still unusable after the retry ends the item's scoring as an `eval-error` holding the raw
text; the calls already made are still counted.
"""

from __future__ import annotations

import abc
import json
import re
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from pydantic import Field

from .._errors import EvaluatorError
from ..llm._judge import json_objects
from ..llm._providers import Endpoint, resolve_judge
from ..results._report import Evaluation
from ._context import EvalContext, Scoring
from ._kind import EvaluatorKind

if TYPE_CHECKING:
    from ..config._config import Config
    from ._evaluator import Evaluator

T = TypeVar("T")

SYSTEM = ("You are a careful, impartial evaluator of an AI system's output. Follow the instructions exactly and "
          "reply with only the JSON object asked for, with no other text.")
_FENCE = re.compile(r"```(?:json|JSON)?\s*(.*?)```", re.DOTALL)


class Unusable(Exception):
    """Raised inside a judged kind when an answer stays unusable: carries the eval-error to report."""

    def __init__(self, evaluation: Evaluation) -> None:
        super().__init__(evaluation.error)
        self.evaluation = evaluation


class Calls:
    """The judge calls of one item: each answer's cost, tokens, latency and raw text, summed."""

    def __init__(self, kind: str, scoring: Scoring) -> None:
        assert scoring.judge is not None and scoring.endpoint is not None
        self.kind, self.judge, self.endpoint = kind, scoring.judge, scoring.endpoint
        self.records: list[Evaluation] = []

    async def ask(self, step: str, prompt: str, parse: Callable[[str], T | str], shape: str) -> T:
        """The parsed answer to `prompt`; `shape` (the JSON asked for) is repeated in the stricter retry."""
        answer = await self.judge.ask(self.endpoint, prompt, parse, system=SYSTEM, retry=retry_prompt(shape),
                                      purpose=f"{self.kind}:{step}")
        self.add(answer.evaluation)
        if answer.value is None:
            raise Unusable(self.result(status="eval-error", error=f"{step}: {answer.evaluation.error}",
                                       raw_response=answer.evaluation.raw_response))
        return answer.value

    def add(self, record: Evaluation) -> None:
        self.records.append(record)

    def result(self, **fields: Any) -> Evaluation:
        """One Evaluation for the item: `fields` (score, reason, ...) plus every call's usage summed."""
        costs = [r.cost_usd for r in self.records if r.cost_usd is not None]
        raws = [r.raw_response for r in self.records if r.raw_response]
        usage: dict[str, Any] = {
            "judge_model": self.endpoint.label,
            "input_tokens": sum(r.input_tokens for r in self.records),
            "output_tokens": sum(r.output_tokens for r in self.records),
            "judge_calls": sum(r.judge_calls for r in self.records),
            "latency_ms": sum(r.latency_ms or 0.0 for r in self.records),
            "cost_usd": sum(costs) if costs else None,
            "cached": bool(self.records) and all(r.cached for r in self.records),
            "raw_response": "\n--- next call ---\n".join(raws) or None,
        }
        return Evaluation(**{**usage, **fields})


class Judged(EvaluatorKind):
    """Base of the model-judged kinds: `model`, `provider`, `base_url` as `llm-judge` takes them."""

    model: str | None = Field(None, description="the judge model (default: [judge] model)")
    provider: str | None = Field(None, description="openai, anthropic or openrouter (default: [judge] provider)")
    base_url: str | None = Field(None, exclude=True,
                                 description="an OpenAI-compatible server (default: [judge] base_url)")

    def endpoint(self, config: Config, evaluator: Evaluator) -> Endpoint:
        return resolve_judge(config.judge, provider=self.provider, model=self.model, base_url=self.base_url,
                             who=f"Evaluator {evaluator.name!r}")

    async def score(self, ctx: EvalContext, scoring: Scoring) -> Evaluation:
        calls = Calls(self.kind, scoring)
        try:
            return await self.judge(ctx, calls)
        except Unusable as exc:
            return exc.evaluation

    @abc.abstractmethod
    async def judge(self, ctx: EvalContext, calls: Calls) -> Evaluation:
        """Score one output with `calls.ask(...)`; finish with `calls.result(score=..., reason=...)`."""


def retry_prompt(shape: str) -> str:
    """The stricter retry: what was wrong (`{problem}`, filled by Judge.ask) and the JSON asked for."""
    escaped = shape.replace("{", "{{").replace("}", "}}")
    return ("Your previous answer could not be used: {problem}. Reply again with only a JSON object of the form "
            f"{escaped} and no other text.")


def json_object(text: str, key: str) -> dict[str, Any] | None:
    """The first JSON object in `text` (fenced or among prose) that has `key`, or None."""
    for candidate in [m.group(1) for m in _FENCE.finditer(text)] + [text]:
        for obj in json_objects(candidate):
            if key in obj:
                return obj
    return None


def read_list(text: str, key: str, check: Callable[[Any], str | None], count: int | None = None) -> list[Any] | str:
    """`obj[key]`, a list whose every entry passes `check` (None, or what is wrong), of `count` entries
    when given; else a sentence saying what is wrong (for the stricter retry)."""
    obj = json_object(text, key)
    if obj is None or not isinstance(obj[key], list):
        return f"no JSON object with a {key!r} list was found"
    entries = obj[key]
    if count is not None and len(entries) != count:
        return f"{key!r} has {len(entries)} entries where {count} were asked for, one per item in order"
    for i, entry in enumerate(entries):
        problem = check(entry)
        if problem:
            return f"{key}[{i}] {problem}"
    return entries


def flag(entry: Any, name: str) -> str | None:
    """The check of a verdict entry: an object whose `name` is true or false (or "yes"/"no")."""
    if not isinstance(entry, dict) or name not in entry:
        return f"must be an object with a {name!r} field"
    if entry[name] not in (True, False, "yes", "no", "true", "false"):
        return f"{name!r} must be true or false, got {entry[name]!r}"
    return None


def truthy(entry: dict[str, Any], name: str) -> bool:
    return entry[name] in (True, "yes", "true")


def text_entry(entry: Any) -> str | None:
    return None if isinstance(entry, str) and entry.strip() else "must be a non-empty string"


def contexts_of(item: Mapping[str, Any]) -> list[str]:
    """The item's `contexts`: a list of strings (a single string counts as one context)."""
    value = item.get("contexts")
    return [value] if isinstance(value, str) else [str(c) for c in value or []]


def require_contexts(item: Mapping[str, Any], index: int, evaluator: Evaluator) -> None:
    """The item check of the RAG kinds: `contexts` is a string or a list of strings."""
    value = item.get("contexts")
    if isinstance(value, str) or (isinstance(value, list) and all(isinstance(c, str) for c in value)):
        return
    got = "lacks it" if "contexts" not in item else f"has {type(value).__name__} {str(value)[:60]!r}"
    raise EvaluatorError(f"Evaluator {evaluator.name!r} needs the retrieved passages in the item field 'contexts' "
                         f"(a list of strings), which dataset item {index} {got}.")


def require(item: Mapping[str, Any], index: int, evaluator: Evaluator, field: str, why: str) -> None:
    if item.get(field) is None:
        raise EvaluatorError(f"Evaluator {evaluator.name!r} needs the item field {field!r} ({why}), which dataset "
                             f"item {index} lacks (fields: {', '.join(sorted(item)) or 'none'}).")


def numbered(texts: list[str]) -> str:
    return "\n".join(f"[{i}] {t}" for i, t in enumerate(texts, start=1)) or "(none)"


def as_prompt_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    return "" if value is None else json.dumps(value, ensure_ascii=False, default=str)


def listing(texts: list[str], limit: int = 3) -> str:
    """`'a'; 'b' and 2 more`: the statements a reason names."""
    shown = "; ".join(repr(t if len(t) <= 100 else t[:99] + "…") for t in texts[:limit])
    return shown + (f" and {len(texts) - limit} more" if len(texts) > limit else "")
