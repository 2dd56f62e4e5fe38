"""Evaluator declarations and how each type scores one output."""

from __future__ import annotations

import asyncio
import difflib
import inspect
import json
import math
import re
import traceback
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from .._aio import is_async_callable
from .._errors import EvaluatorError, JudgeError, TemplateError
from .._threads import DaemonThreads
from .._timeouts import timeout_message, within
from ..config._config import Config
from ..llm._judge import SYSTEM_PROMPT, Judge
from ..llm._pricing import cost_usd
from ..llm._providers import Endpoint, resolve_embeddings, resolve_judge
from ..results._report import EvalResult, Evaluation
from ._template import missing_item_variables, render

EVALUATOR_TYPES: dict[str, str] = {
    "llm-judge": "an LLM scores the output 0..1 from `prompt` (options: prompt, model, provider, base_url)",
    "function": "your function `fn(ctx)` returns a float, bool, dict or EvalResult (sync or async)",
    "exact-match": "1 when the output equals item[`field`] (options: field, ignore_case, ignore_whitespace)",
    "similarity": "cosine similarity of output and item[`field`] embeddings; 1 at or above `threshold`",
}


@dataclass(frozen=True)
class EvalContext:
    """What a `function` evaluator receives."""

    item: dict[str, Any]
    output: Any
    metadata: dict[str, Any] = field(default_factory=dict)
    index: int = 0
    run_index: int = 0

    @property
    def input(self) -> Any:
        return self.item.get("input")

    @property
    def expected_output(self) -> Any:
        return self.item.get("expected_output")


class Evaluator:
    """How to score an output. `type` is `llm-judge` (default), `function`, `exact-match` or `similarity`.

    `threshold` is the pass mark (a score at or above it passes; default 0.5) and, for
    `similarity`, the cosine similarity that counts as a full match.
    """

    def __init__(
        self,
        name: str,
        type: str = "llm-judge",
        *,
        prompt: str | None = None,
        fn: Callable[[EvalContext], Any] | None = None,
        field: str = "expected_output",
        model: str | None = None,
        provider: str | None = None,
        base_url: str | None = None,
        system: str | None = None,
        threshold: float | None = None,
        ignore_case: bool = False,
        ignore_whitespace: bool = False,
        description: str | None = None,
    ) -> None:
        if not isinstance(name, str) or not name.strip():
            raise EvaluatorError(f"Evaluator name must be a non-empty string, got {name!r}.")
        where = f"Evaluator {name!r}"
        if type not in EVALUATOR_TYPES:
            close = difflib.get_close_matches(str(type), EVALUATOR_TYPES, n=1)
            hint = f"did you mean {close[0]!r}?" if close else f"use one of {', '.join(EVALUATOR_TYPES)}."
            raise EvaluatorError(f"{where} has unknown type {type!r}; {hint}")
        if type == "llm-judge" and not (isinstance(prompt, str) and prompt.strip()):
            raise EvaluatorError(f"{where} (llm-judge) needs prompt=..., e.g. 'Rate the answer {{{{output}}}}...'.")
        if type == "function" and not callable(fn):
            raise EvaluatorError(f"{where} (function) needs fn=<callable taking ctx>, got {fn!r}.")
        _check_options_apply(where, type, prompt=prompt, fn=fn, model=model, provider=provider,
                             base_url=base_url, system=system, ignore_case=ignore_case or None,
                             ignore_whitespace=ignore_whitespace or None,
                             field=None if field == "expected_output" else field)
        if threshold is not None and not 0.0 <= threshold <= 1.0:
            raise EvaluatorError(f"{where}: threshold={threshold} must be within 0..1.")
        self.name = name
        self.type = type
        self.prompt = prompt
        self.fn = fn
        self.field = field
        self.model = model
        self.provider = provider
        self.base_url = base_url
        self.system = system
        default = 0.85 if type == "similarity" else 0.5
        self.threshold = default if threshold is None else threshold
        self.ignore_case = ignore_case
        self.ignore_whitespace = ignore_whitespace
        self.description = description

    def __repr__(self) -> str:
        return f"Evaluator(name={self.name!r}, type={self.type!r})"

    def describe(self) -> dict[str, Any]:
        """The evaluator's name, type and options, as stored with every run."""
        info: dict[str, Any] = {"name": self.name, "type": self.type, "threshold": self.threshold}
        if self.type == "llm-judge":
            info.update(prompt=self.prompt, model=self.model, provider=self.provider)
        elif self.type == "function":
            info["fn"] = getattr(self.fn, "__qualname__", repr(self.fn))
        else:
            info["field"] = self.field
            if self.type == "exact-match":
                info.update(ignore_case=self.ignore_case, ignore_whitespace=self.ignore_whitespace)
            else:
                info["model"] = self.model
        return info

    def check_item(self, item: Mapping[str, Any], index: int) -> None:
        """Raise before any agent call if this evaluator cannot score `item`."""
        if self.type == "llm-judge" and self.prompt:
            missing = missing_item_variables(self.prompt, item)
            if missing:
                field = missing[0].removeprefix("item.")  # {{item.x}} and {{x}} both read the item's field x
                raise TemplateError(
                    f"Evaluator {self.name!r} uses {{{{{missing[0]}}}}} but dataset item {index} has no "
                    f"field {field!r} (fields: {', '.join(sorted(item)) or 'none'})."
                )
        if self.type in ("exact-match", "similarity") and self.field not in item:
            raise EvaluatorError(
                f"Evaluator {self.name!r} compares with field {self.field!r}, which dataset item {index} "
                f"lacks (fields: {', '.join(sorted(item)) or 'none'}); pass field=... to choose another."
            )

    def endpoint(self, config: Config) -> Endpoint | None:
        """The resolved judge or embeddings endpoint (raises if its API key is missing)."""
        who = f"Evaluator {self.name!r}"
        if self.type == "llm-judge":
            return resolve_judge(config.judge, provider=self.provider, model=self.model,
                                 base_url=self.base_url, who=who)
        if self.type == "similarity":
            embeddings = config.embeddings
            if self.provider or self.base_url:
                embeddings = embeddings.model_copy(update={"provider": self.provider or embeddings.provider,
                                                           "base_url": self.base_url or embeddings.base_url})
            return resolve_embeddings(config.judge, embeddings, model=self.model, who=who)
        return None

    async def evaluate(self, ctx: EvalContext, judge: Judge, endpoint: Endpoint | None, *,
                       threads: DaemonThreads | None = None, timeout: float | None = None) -> Evaluation:
        """Score one output. User-code failures and bad answers become `eval-error` records.

        A `function` evaluator runs in `threads` when sync, and is an eval-error past `timeout`.
        """
        try:
            if self.type == "llm-judge":
                assert endpoint is not None
                result = await judge.score(endpoint, self._render(ctx), system=self.system or SYSTEM_PROMPT)
            elif self.type == "function":
                result = await self._call_function(ctx, threads, timeout)
            elif self.type == "exact-match":
                result = self._exact_match(ctx)
            else:
                assert endpoint is not None
                result = await self._similarity(ctx, judge, endpoint)
        except (TemplateError, JudgeError) as exc:
            result = Evaluation(status="eval-error", error=str(exc))
        except Exception as exc:  # a bug in cobalt or a provider SDK: one eval-error, not a stopped run
            result = Evaluation(status="eval-error", error=f"{type(exc).__name__}: {exc}",
                                raw_response=traceback.format_exc(limit=8))
        if result.status == "ok" and result.score is not None:
            result.passed = result.score >= self.threshold
        return result

    def _render(self, ctx: EvalContext) -> str:
        variables = {**ctx.item, "item": ctx.item, "output": ctx.output, "metadata": ctx.metadata,
                     "index": ctx.index, "run_index": ctx.run_index}
        return render(self.prompt or "", variables, where=f"Evaluator {self.name!r}")

    async def _call_function(self, ctx: EvalContext, threads: DaemonThreads | None,
                             timeout: float | None) -> Evaluation:
        fn = self.fn
        assert fn is not None
        call: Awaitable[Any]
        try:
            if is_async_callable(fn):
                call = fn(ctx)
            elif threads is not None:
                # A worker thread: a slow sync evaluator must not stall the event loop (and with it
                # every agent timeout and judge call of the run). A daemon one, so that a hung
                # evaluator cannot keep the process alive after its timeout.
                call = threads.submit(lambda: fn(ctx))
            else:
                call = asyncio.get_running_loop().run_in_executor(None, fn, ctx)
            value = await (within(call, timeout) if timeout else call)
            if inspect.isawaitable(value):
                value = await value
        except TimeoutError as exc:
            if threads is not None and not is_async_callable(fn):
                threads.abandon()  # its thread is stuck: let another take its place
            return Evaluation(status="eval-error", error=timeout_message("evaluator", timeout or 0.0, exc))
        except Exception as exc:
            return Evaluation(status="eval-error", error=f"{type(exc).__name__}: {exc}",
                              raw_response=traceback.format_exc(limit=8))
        return _from_value(value, self.name)

    def _exact_match(self, ctx: EvalContext) -> Evaluation:
        expected, actual = self._normalise(ctx.item.get(self.field)), self._normalise(ctx.output)
        matched = expected == actual
        reason = "exact match" if matched else f"expected {expected[:80]!r}, got {actual[:80]!r}"
        return Evaluation(score=1.0 if matched else 0.0, reason=reason)

    def _normalise(self, value: Any) -> str:
        text = value if isinstance(value, str) else "" if value is None else str(value)
        if self.ignore_whitespace:
            text = re.sub(r"\s+", " ", text).strip()
        return text.casefold() if self.ignore_case else text

    async def _similarity(self, ctx: EvalContext, judge: Judge, endpoint: Endpoint) -> Evaluation:
        texts = [_as_text(ctx.output), _as_text(ctx.item.get(self.field))]
        vectors, tokens, calls = await judge.embed(endpoint, texts)
        cosine = _cosine(vectors[0], vectors[1])
        score = 1.0 if cosine >= self.threshold else max(0.0, cosine)
        return Evaluation(score=score, raw_score=cosine, reason=f"cosine similarity {cosine:.3f}",
                          judge_model=endpoint.label, input_tokens=tokens, judge_calls=calls,
                          cached=calls == 0, cost_usd=_embedding_cost(endpoint, tokens, judge))


#: Which evaluator types use each option (an option another type would silently ignore is an error).
_OPTION_TYPES = {
    "prompt": ("llm-judge",), "system": ("llm-judge",), "fn": ("function",),
    "model": ("llm-judge", "similarity"), "provider": ("llm-judge", "similarity"),
    "base_url": ("llm-judge", "similarity"), "field": ("exact-match", "similarity"),
    "ignore_case": ("exact-match",), "ignore_whitespace": ("exact-match",),
}


def _check_options_apply(where: str, type: str, **given: Any) -> None:
    for option, value in given.items():
        if value is not None and type not in _OPTION_TYPES[option]:
            raise EvaluatorError(f"{where} ({type}) does not use {option}=; it is for "
                                 f"{' and '.join(_OPTION_TYPES[option])} evaluators. Remove it or change type=.")


def _from_value(value: Any, name: str) -> Evaluation:
    """Turn what a function evaluator returned into an Evaluation."""
    reason = None
    if isinstance(value, EvalResult):
        value, reason = value.score, value.reason
    elif isinstance(value, Mapping):
        if "score" not in value:
            return Evaluation(status="eval-error", error=f"evaluator {name!r} returned a dict without 'score'",
                              raw_response=repr(value)[:500])
        value, reason = value["score"], value.get("reason")
    if isinstance(value, bool):
        value = 1.0 if value else 0.0
    if not isinstance(value, int | float):
        return Evaluation(status="eval-error", raw_response=repr(value)[:500],
                          error=f"evaluator {name!r} returned {type(value).__name__}; "
                                "return a float in 0..1, a bool, a dict with 'score' or an EvalResult")
    if math.isnan(value):
        return Evaluation(status="eval-error", raw_response="nan",
                          error=f"evaluator {name!r} returned NaN; return a float in 0..1")
    if not 0.0 <= value <= 1.0:
        return Evaluation(status="eval-error", raw_score=float(value), raw_response=repr(value),
                          error=f"evaluator {name!r} returned score {value}, outside 0..1")
    return Evaluation(score=float(value), reason=None if reason is None else str(reason))


def _as_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, default=str)


def _cosine(a: list[float], b: list[float]) -> float:
    dot = math.fsum(x * y for x, y in zip(a, b, strict=False))
    norm = math.sqrt(math.fsum(x * x for x in a)) * math.sqrt(math.fsum(y * y for y in b))
    return dot / norm if norm else 0.0


def _embedding_cost(endpoint: Endpoint, tokens: int, judge: Judge) -> float | None:
    return cost_usd(endpoint.model, tokens, 0, judge.prices)
