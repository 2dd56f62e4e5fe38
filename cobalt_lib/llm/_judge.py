"""The LLM judge: prompt, cache, call, parse `{score, reason}`, retry once, or record `eval-error`."""

from __future__ import annotations

import asyncio
import json
import math
import re
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Generic, NamedTuple, TypeVar

from .._errors import JudgeError
from ..results._report import Evaluation
from ._batch import BATCH_PRICE_FACTOR, BatchJudging
from ._cache import ResponseCache, cache_key
from ._pricing import cost_usd
from ._providers import Endpoint
from ._wire import Clients

SYSTEM_PROMPT = (
    "You are an impartial evaluator of an AI system's output. Judge the output against the "
    "criteria in the user message. Reply with only a JSON object of the form "
    '{"score": <number from 0.0 (worst) to 1.0 (best)>, "reason": "<one or two sentences>"}.'
)
STRICT_RETRY = (
    "Your previous answer could not be used: {problem}. Reply again with only a JSON object of the "
    'form {{"score": <number between 0 and 1>, "reason": "<short reason>"}} and no other text.'
)

_FENCE = re.compile(r"```(?:json|JSON)?\s*(.*?)```", re.DOTALL)


def parse_judgement(text: str) -> tuple[float, str | None] | str:
    """`(score, reason)` from a judge's answer, or a string saying why it is unusable.

    Tolerates code fences and prose around the JSON object; the score must be within 0..1.
    """
    found = scored(text)
    if isinstance(found, str):
        return found
    obj, score = found
    if not 0.0 <= score <= 1.0:
        return f"the score {score} is outside 0..1"
    reason = obj.get("reason")
    return score, (reason if isinstance(reason, str) else None if reason is None else str(reason))


def scored(text: str) -> tuple[dict[str, Any], float] | str:
    """The answer's scored JSON object and its score as a finite number, or why there is none: the one
    reading of a scored answer the judge and the graders share, each then checking its own scale."""
    obj = scored_object(text)
    if obj is None:
        return "no JSON object with a 'score' field was found"
    score = score_number(obj)
    return score if isinstance(score, str) else (obj, score)


def scored_object(text: str) -> dict[str, Any] | None:
    """The first JSON object with a `score` field in a model's answer: inside a code fence first, then in the
    text itself (prose around it is tolerated); None when there is none."""
    for candidate in [m.group(1) for m in _FENCE.finditer(text)] + [text]:
        for obj in json_objects(candidate):
            if "score" in obj:
                return obj
    return None


def score_number(obj: dict[str, Any]) -> float | str:
    """The object's `score` as a finite number (a numeric string is read as one), or why it is not one.
    The judge and the graders read scores through this one function, so they refuse the same answers."""
    score = obj["score"]
    if isinstance(score, str):
        try:
            score = float(score.strip())
        except ValueError:
            return f"the score {obj['score']!r} is not a number"
    if isinstance(score, bool) or not isinstance(score, int | float) or not math.isfinite(score):
        return f"the score {obj['score']!r} is not a number"
    return float(score)


def json_objects(text: str) -> list[dict[str, Any]]:
    """Every JSON object in `text`, in order, among whatever prose surrounds them."""
    decoder = json.JSONDecoder()
    found = []
    start = text.find("{")
    while start != -1:
        try:
            obj, end = decoder.raw_decode(text, start)
        except ValueError:
            start = text.find("{", start + 1)
            continue
        if isinstance(obj, dict):
            found.append(obj)
        start = text.find("{", end)
    return found


T = TypeVar("T")


@dataclass(frozen=True)
class Answer(Generic[T]):
    """A parsed model answer (`value`, None when unusable) and its cost, tokens, calls and raw text."""

    value: T | None
    evaluation: Evaluation


#: Joins the first answer and the one after the stricter retry in an eval-error's raw_response.
RETRY_SEPARATOR = "\n--- after the stricter retry ---\n"


class Judge:
    """Judge and embeddings calls of one run: shared clients, cache, concurrency limit and prices."""

    def __init__(self, cache: ResponseCache, concurrency: int,
                 prices: Mapping[str, tuple[float, float]] | None = None, *, clients: Clients | None = None,
                 batch: Callable[[Clients], BatchJudging] | None = None) -> None:
        self.clients = clients or Clients()
        self.cache = cache
        self.prices = dict(prices or {})
        self._limit = asyncio.Semaphore(concurrency)
        #: Set for a run that judges through the provider's batch API (`[judge] batch`).
        self.batch = batch(self.clients) if batch is not None else None
        #: Model calls sent and not answered yet, and those answered (or failed), for a live count.
        self.in_flight = 0
        self.answered = 0
        self._watchers: list[Callable[[int, int], None]] = []

    def watch(self, watcher: Callable[[int, int], None]) -> Callable[[], None]:
        """Call `watcher(in flight, answered)` as each model call starts and ends; returns the unwatch."""
        self._watchers.append(watcher)
        return lambda: self._watchers.remove(watcher)

    def _moved(self, started: int) -> None:
        self.in_flight += started
        self.answered += started < 0
        for watcher in list(self._watchers):
            watcher(self.in_flight, self.answered)

    async def aclose(self) -> None:
        if self.batch is not None:
            await self.batch.aclose()
        await self.clients.aclose()

    async def score(self, endpoint: Endpoint, prompt: str, *, system: str = SYSTEM_PROMPT,
                    salt: Mapping[str, Any] | None = None) -> Evaluation:
        """Judge one rendered prompt. Never raises for a bad answer or failed call: records it."""
        answer = await self.ask(endpoint, prompt, parse_judgement, system=system, retry=STRICT_RETRY, salt=salt)
        if answer.value is None:
            return answer.evaluation
        # The evaluation is this call's own: set in place (a model_copy per score kept a copied
        # field set alive per evaluation and made garbage of the rest).
        evaluation = answer.evaluation
        evaluation.score, evaluation.reason = answer.value
        return evaluation

    async def ask(self, endpoint: Endpoint, prompt: str, parse: Callable[[str], T | str], *,
                  system: str, retry: str, salt: Mapping[str, Any] | None = None,
                  purpose: str = "judge") -> Answer[T]:
        """Ask the model one prompt and parse its answer, retrying once with `retry` (formatted with
        `{problem}`: what `parse` said was wrong) when `parse` returns a string instead of a value.

        The building block of every model-judged evaluator: cache (keyed by `purpose`, the endpoint,
        prompt, system and `salt`), the concurrency bound, bounded retries of failed calls, tokens
        and cost. Never raises for a bad answer or a failed call: `value` is None and `evaluation`
        is an `eval-error` holding the raw answers. On success `evaluation` carries the cost, tokens,
        calls and raw answer but no score: the caller sets it from `value`.
        """
        params = {**endpoint.sampling(), "system": system, **(salt or {})}
        # No key to compute when the cache is off: hashing the prompt costs more than the lookup.
        key = cache_key(purpose, endpoint.provider, endpoint.model, prompt, params, endpoint.base_url) \
            if self.cache.enabled else ""
        hit = self.cache.get(key) if key else None
        if hit is not None and isinstance(hit.get("raw"), str):
            parsed = parse(hit["raw"])
            if not isinstance(parsed, str):
                return Answer(parsed, Evaluation(raw_response=hit["raw"], cached=True,
                                                 judge_model=endpoint.label, latency_ms=0.0))
        started = time.perf_counter()
        messages = [{"role": "user", "content": prompt}]
        usage = [0, 0]
        calls = 0
        batched = False
        raw = ""
        answers: list[str] = []
        try:
            for attempt in range(2):
                if self.batch is not None:  # waits for hours, holding no slot: the batch is the limit
                    self._moved(1)
                    try:
                        completion = await self.batch.complete(endpoint, system, messages)
                    finally:
                        self._moved(-1)
                    batched = True
                else:
                    async with self._limit:
                        self._moved(1)
                        try:
                            completion = await self.clients.complete(endpoint, system, messages)
                        finally:
                            self._moved(-1)
                calls += 1
                usage[0] += completion.input_tokens
                usage[1] += completion.output_tokens
                raw = completion.text
                answers.append(raw)
                parsed = parse(raw)
                if not isinstance(parsed, str):
                    self.cache.put(key, {"raw": raw})
                    return Answer(parsed, self._record(endpoint, started, usage, calls, raw_response=raw,
                                                       batched=batched))
                if attempt == 0:
                    messages = [*messages, {"role": "assistant", "content": raw},
                                {"role": "user", "content": retry.format(problem=parsed)}]
            return Answer(None, self._record(endpoint, started, usage, calls, status="eval-error", batched=batched,
                                             raw_response=RETRY_SEPARATOR.join(answers),
                                             error=f"unusable judge answer after a stricter retry: {parsed}"))
        except JudgeError as exc:
            return Answer(None, self._record(endpoint, started, usage, calls, status="eval-error", batched=batched,
                                             error=str(exc), raw_response=raw or None))

    def _record(self, endpoint: Endpoint, started: float, usage: list[int], calls: int, *, batched: bool = False,
                **fields: Any) -> Evaluation:
        cost = cost_usd(endpoint.model, usage[0], usage[1], self.prices)
        return Evaluation(
            judge_model=endpoint.label,
            latency_ms=(time.perf_counter() - started) * 1000,
            input_tokens=usage[0],
            output_tokens=usage[1],
            cost_usd=cost * BATCH_PRICE_FACTOR if cost is not None and batched else cost,
            judge_calls=calls,
            **fields,
        )

    async def embed(self, endpoint: Endpoint, texts: list[str]) -> Embedded:
        """Vectors for `texts`, each text cached. The uncached texts of every caller within
        `EMBED_BATCH_WINDOW` seconds go out together, one request per batch of up to
        `EMBED_BATCH_SIZE` texts, under the concurrency bound and with the judge's retries.

        The caller that opened a batch carries its request (`calls` 1) and all its `tokens`; the others
        get 0 and 0, so that summed over a run they count the requests sent and the tokens paid.
        """
        found, missing = self.cached_vectors(endpoint, texts)
        tokens = calls = 0
        if missing:
            # Kept on the instance through vars(): the batches live only as long as this run's judge.
            batches: dict[Endpoint, _EmbeddingBatch] = vars(self).setdefault("_embedding_batches", {})
            batch = batches.get(endpoint)
            if batch is None or batch.closed:
                batch = batches[endpoint] = _EmbeddingBatch(self, endpoint)
            fresh, tokens, calls = await batch.add(missing)
            found.update(fresh)
        return Embedded([found[t] for t in texts], tokens, calls, cached=not missing)


    def cached_vectors(self, endpoint: Endpoint, texts: list[str]) -> tuple[dict[str, list[float]], list[str]]:
        """The cached vector of each text that has one, and the other texts (once each, in order)."""
        found: dict[str, list[float]] = {}
        for text in texts:
            hit = self.cache.get(_embedding_key(endpoint, text))
            if hit:
                found[text] = hit["vector"]
        return found, list(dict.fromkeys(t for t in texts if t not in found))

    def cache_vectors(self, endpoint: Endpoint, vectors: Mapping[str, list[float]]) -> None:
        """Cache each text's vector, under the key `cached_vectors` reads."""
        for text, vector in vectors.items():
            self.cache.put(_embedding_key(endpoint, text), {"vector": vector})


def _embedding_key(endpoint: Endpoint, text: str) -> str:
    return cache_key("embedding", endpoint.provider, endpoint.model, text, {}, endpoint.base_url)


#: Embedding requests arriving within this many seconds share one request (the items of a run are
#: scored as their agent calls finish: batching them is what keeps it one request per batch, not per item).
EMBED_BATCH_WINDOW = 0.05
#: The most texts in one embeddings request (OpenAI accepts up to 2048 inputs).
EMBED_BATCH_SIZE = 256


class Embedded(NamedTuple):
    """`Judge.embed`'s answer: one vector per text, this caller's tokens and requests, and whether every
    vector came from the cache."""

    vectors: list[list[float]]
    tokens: int
    calls: int
    cached: bool


class _EmbeddingBatch:
    """The texts of the callers that asked within one window, sent as one request."""

    def __init__(self, judge: Judge, endpoint: Endpoint) -> None:
        self.judge, self.endpoint = judge, endpoint
        self.texts: dict[str, None] = {}
        self.callers: list[tuple[list[str], asyncio.Future[tuple[dict[str, list[float]], int, int]]]] = []
        self.closed = False
        self.loop = asyncio.get_running_loop()
        self.loop.call_later(EMBED_BATCH_WINDOW, self.close)
        self.task: asyncio.Task[None] | None = None

    async def add(self, texts: list[str]) -> tuple[dict[str, list[float]], int, int]:
        future: asyncio.Future[tuple[dict[str, list[float]], int, int]] = self.loop.create_future()
        self.callers.append((texts, future))
        self.texts.update(dict.fromkeys(texts))
        if len(self.texts) >= EMBED_BATCH_SIZE:
            self.close()
        return await future

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            self.task = self.loop.create_task(self._send())

    async def _send(self) -> None:
        texts = list(self.texts)
        try:
            async with self.judge._limit:
                vectors, tokens = await self.judge.clients.embed(self.endpoint, texts)
        except BaseException as exc:
            for _, future in self.callers:
                if not future.done():
                    future.set_exception(exc if isinstance(exc, Exception) else JudgeError("embeddings cancelled"))
            return
        by_text = dict(zip(texts, vectors, strict=True))
        self.judge.cache_vectors(self.endpoint, by_text)
        for i, (own, future) in enumerate(self.callers):
            if not future.done():
                future.set_result(({t: by_text[t] for t in own}, tokens if i == 0 else 0, 1 if i == 0 else 0))
