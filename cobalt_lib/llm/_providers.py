"""One client module for every LLM provider: OpenAI, Anthropic, OpenRouter, any OpenAI-compatible URL.

Calls go through the official SDKs over their aiohttp transport (one client per provider and
URL for the whole run), with the SDKs' own retries off: cobalt retries 429, 5xx and connection
errors itself so the count and the total time are bounded and `Retry-After` is honoured.
"""

from __future__ import annotations

import asyncio
import contextlib
import email.utils
import os
import random
import re
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlparse

from .._errors import ConfigError, JudgeError, MissingApiKeyError
from ..config._config import EmbeddingsConfig, JudgeConfig

KEY_VARIABLES = {"openai": "OPENAI_API_KEY", "anthropic": "ANTHROPIC_API_KEY", "openrouter": "OPENROUTER_API_KEY"}
BASE_URL_VARIABLES = {"openai": "OPENAI_BASE_URL", "anthropic": "ANTHROPIC_BASE_URL"}
OPENROUTER_URL = "https://openrouter.ai/api/v1"
#: The judge model when neither the evaluator nor `[judge] model` (for its provider) names one.
DEFAULT_MODELS = {"openai": "gpt-4o-mini", "anthropic": "claude-haiku-4-5", "openrouter": "openai/gpt-4o-mini"}
_LOCAL_HOSTS = {"localhost", "127.0.0.1", "::1", "0.0.0.0"}
_PLACEHOLDER_KEY = "cobalt-local-placeholder"


@dataclass(frozen=True)
class Endpoint:
    """A resolved provider: where to send calls and with which key. The key never leaves here."""

    provider: str
    model: str
    base_url: str | None
    api_key: str = field(repr=False)
    max_tokens: int = 512
    temperature: float | None = None
    send_temperature: bool = True
    max_retries: int = 4
    retry_max_seconds: float = 120.0
    timeout: float = 60.0

    @property
    def label(self) -> str:
        return f"{self.provider}/{self.model}"

    def sampling(self) -> dict[str, Any]:
        if self.provider != "anthropic" and is_reasoning_model(self.model):
            # OpenAI's reasoning models reject max_tokens and temperature, and spend part of the
            # budget thinking: a judge answer needs more room than 512 tokens there.
            return {"max_completion_tokens": max(self.max_tokens, REASONING_MIN_TOKENS)}
        params: dict[str, Any] = {"max_tokens": self.max_tokens}
        if self.temperature is not None and self.send_temperature:
            params["temperature"] = self.temperature
        return params


#: The least output budget a reasoning-model judge gets (its reasoning tokens count against it).
REASONING_MIN_TOKENS = 4096
_REASONING = re.compile(r"^(o\d+|gpt-5)(\b|-|$)")


def is_reasoning_model(model: str) -> bool:
    """OpenAI's o-series and gpt-5 family, also behind a `vendor/` prefix (OpenRouter)."""
    return bool(_REASONING.match(model.rsplit("/", 1)[-1]))


def resolve_judge(judge: JudgeConfig, *, provider: str | None = None, model: str | None = None,
                  base_url: str | None = None, who: str = "the judge") -> Endpoint:
    """Combine config and per-evaluator overrides; raise if the provider's key is missing."""
    prov = provider or judge.provider
    if prov not in KEY_VARIABLES:
        raise ConfigError(f"{who}: unknown provider {prov!r}; use one of {', '.join(KEY_VARIABLES)}.")
    same_provider = prov == judge.provider
    url = base_url or (judge.base_url if same_provider else None) or _default_base_url(prov)
    if prov == "anthropic" and url:
        # The SDK adds /v1/messages itself; a base_url written the OpenAI way (…/v1) would call /v1/v1/messages.
        url = re.sub(r"/v1/?$", "", url.rstrip("/")) or url
    configured_key = judge.api_key.get_secret_value() if (judge.api_key and same_provider) else None
    key = configured_key or os.environ.get(KEY_VARIABLES[prov]) or (_PLACEHOLDER_KEY if _is_local(url) else None)
    if not key:
        raise MissingApiKeyError(
            f"{who} uses the {prov} provider but {KEY_VARIABLES[prov]} is not set; "
            f"set {KEY_VARIABLES[prov]} in the environment (or point [judge] base_url at a local server)."
        )
    return Endpoint(
        provider=prov,
        model=model or (judge.model if same_provider else None) or DEFAULT_MODELS[prov],
        base_url=url,
        api_key=key,
        max_tokens=judge.max_tokens,
        temperature=judge.temperature,
        send_temperature=prov != "anthropic" or "temperature" in judge.model_fields_set,
        max_retries=judge.max_retries,
        retry_max_seconds=judge.retry_max_seconds,
        timeout=judge.timeout,
    )


def resolve_embeddings(judge: JudgeConfig, embeddings: EmbeddingsConfig, *, model: str | None = None,
                       who: str = "the similarity evaluator") -> Endpoint:
    provider = embeddings.provider or judge.provider
    if provider == "anthropic":
        raise ConfigError(
            f"{who} needs embeddings, which Anthropic does not offer; set [embeddings] provider = "
            "'openai' (or 'openrouter') and, if needed, its base_url."
        )
    base_url = embeddings.base_url or (judge.base_url if provider == judge.provider else None)
    return resolve_judge(judge, provider=provider, model=model or embeddings.model, base_url=base_url, who=who)


def _default_base_url(provider: str) -> str | None:
    if provider == "openrouter":
        return OPENROUTER_URL
    variable = BASE_URL_VARIABLES.get(provider)
    return os.environ.get(variable) if variable else None


def _is_local(url: str | None) -> bool:
    return bool(url) and (urlparse(url).hostname or "") in _LOCAL_HOSTS


@dataclass
class Completion:
    text: str
    input_tokens: int
    output_tokens: int
    model: str


class Clients:
    """The SDK clients of one run, created on first use inside its event loop, closed by `aclose`."""

    def __init__(self) -> None:
        self._clients: dict[tuple[str, str | None, str], Any] = {}

    def get(self, endpoint: Endpoint) -> Any:
        key = ((endpoint.provider == "anthropic" and "anthropic") or "openai", endpoint.base_url, endpoint.api_key)
        client = self._clients.get(key)
        if client is None:
            client = self._clients[key] = _make_client(endpoint)
        return client

    async def aclose(self) -> None:
        clients, self._clients = list(self._clients.values()), {}
        for client in clients:
            with contextlib.suppress(Exception):  # best effort: the run's results are already safe
                await client.close()

    async def complete(self, endpoint: Endpoint, system: str, messages: list[dict[str, str]]) -> Completion:
        """One chat call with bounded retries; returns the text and token usage."""
        client = self.get(endpoint)
        call = _anthropic_call if endpoint.provider == "anthropic" else _openai_call
        completion = await _with_retries(endpoint, lambda: call(client, endpoint, system, messages))
        # A proxy or a debugging server can echo the request, headers included: the answer is kept
        # (raw_response, reason, cache), so the key must not survive in it.
        completion.text = redact(completion.text, endpoint)
        return completion

    async def embed(self, endpoint: Endpoint, texts: list[str]) -> tuple[list[list[float]], int]:
        client = self.get(endpoint)

        async def call() -> tuple[list[list[float]], int]:
            body = {"model": endpoint.model, "input": texts}
            data = _object(endpoint, await client.post("/embeddings", cast_to=object, body=body))
            vectors = [row["embedding"] for row in sorted(data["data"], key=lambda r: r.get("index", 0))]
            return vectors, int((data.get("usage") or {}).get("prompt_tokens") or 0)

        return await _with_retries(endpoint, call)


def import_sdks(endpoints: Iterable[Endpoint | None]) -> None:
    """Import the SDKs these endpoints need now, before any agent call: `import openai` takes about
    0.6 s, and done lazily inside the event loop it would stall every agent call in flight."""
    providers = {e.provider for e in endpoints if e is not None}
    if providers - {"anthropic"}:
        import openai  # noqa: F401
    if "anthropic" in providers:
        import anthropic  # noqa: F401


def _make_client(endpoint: Endpoint) -> Any:
    common: dict[str, Any] = {"api_key": endpoint.api_key, "base_url": endpoint.base_url, "max_retries": 0,
              "timeout": endpoint.timeout}
    if endpoint.provider == "anthropic":
        import anthropic

        return anthropic.AsyncAnthropic(http_client=anthropic.DefaultAioHttpClient(), **common)
    import openai

    return openai.AsyncOpenAI(http_client=openai.DefaultAioHttpClient(), **common)


# Both calls go through the SDK client's own `post` (its documented way to reach any endpoint):
# auth, base URL, headers, timeouts, error types and the aiohttp transport are the SDK's, but the
# typed `create()` wrappers walk every request through a TypedDict transform and every response
# through pydantic models, which cost about 2 ms of CPU per call: more than everything else
# cobalt does per item (see benchmarks/RESULTS.md).


async def _openai_call(client: Any, endpoint: Endpoint, system: str, messages: list[dict[str, str]]) -> Completion:
    body = {"model": endpoint.model, "messages": [{"role": "system", "content": system}, *messages],
            **endpoint.sampling()}
    data = _object(endpoint, await client.post("/chat/completions", cast_to=object, body=body))
    choices = data.get("choices") or [{}]
    text = (choices[0].get("message") or {}).get("content") or ""
    usage = data.get("usage") or {}
    return Completion(text, int(usage.get("prompt_tokens") or 0), int(usage.get("completion_tokens") or 0),
                      data.get("model") or endpoint.model)


async def _anthropic_call(client: Any, endpoint: Endpoint, system: str,
                          messages: list[dict[str, str]]) -> Completion:
    body = {"model": endpoint.model, "system": system, "messages": messages, **endpoint.sampling()}
    data = _object(endpoint, await client.post("/v1/messages", cast_to=object, body=body))
    text = "".join(block.get("text", "") for block in data.get("content") or [] if block.get("type") == "text")
    usage = data.get("usage") or {}
    return Completion(text, int(usage.get("input_tokens") or 0), int(usage.get("output_tokens") or 0),
                      data.get("model") or endpoint.model)


def _object(endpoint: Endpoint, data: Any) -> dict[str, Any]:
    """The decoded JSON answer; a server that answers 200 with something else (an HTML page from a
    proxy, say) is a judge error, not a crash."""
    if not isinstance(data, dict):
        raise JudgeError(f"{endpoint.label} answered with {type(data).__name__}, not a JSON object: "
                         f"{redact(str(data), endpoint)[:200]!r}; check base_url {endpoint.base_url!r}")
    return data


async def _with_retries(endpoint: Endpoint, call: Any) -> Any:
    deadline = time.monotonic() + endpoint.retry_max_seconds
    attempt = 0
    while True:
        budget = asyncio.timeout(max(0.0, deadline - time.monotonic()))
        try:
            # retry_max_seconds bounds the calls as well as the waits between them.
            async with budget:
                return await call()
        except TimeoutError as exc:
            if not budget.expired():
                raise JudgeError(_describe(endpoint, exc)) from None
            raise JudgeError(f"{endpoint.label} call gave up after {attempt + 1} attempts: the retry budget "
                             f"of {endpoint.retry_max_seconds:g} s ([judge] retry_max_seconds) ran out") from None
        except JudgeError:
            raise
        except Exception as exc:
            status = getattr(exc, "status_code", None)
            retryable = _is_connection_error(exc) or status == 429 or (status is not None and status >= 500)
            if not retryable:
                raise JudgeError(_describe(endpoint, exc)) from None
            wait = retry_after_seconds(getattr(getattr(exc, "response", None), "headers", None))
            if wait is None:
                wait = min(30.0, 0.5 * 2**attempt) * (0.75 + random.random() / 2)
            attempt += 1
            if attempt > endpoint.max_retries or time.monotonic() + wait > deadline:
                raise JudgeError(f"{_describe(endpoint, exc)} (gave up after {attempt} attempts)") from None
            await asyncio.sleep(wait)


def _is_connection_error(exc: Exception) -> bool:
    return type(exc).__name__ in {"APIConnectionError", "APITimeoutError"}


def retry_after_seconds(headers: Mapping[str, str] | None) -> float | None:
    """The wait a 429 or 5xx response asks for (`retry-after-ms`, `retry-after` seconds or HTTP date);
    None when it asks for none or says something unreadable (the caller's own backoff applies)."""
    if headers is None:
        return None
    if (ms := headers.get("retry-after-ms")) is not None:
        try:
            return max(0.0, float(ms) / 1000)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:  # an HTTP date; a header that is neither falls back to our own backoff
        parsed = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    return max(0.0, parsed.timestamp() - time.time())


def redact(text: str, endpoint: Endpoint) -> str:
    """`text` with the endpoint's API key replaced by `***`."""
    return text.replace(endpoint.api_key, "***") if endpoint.api_key and len(endpoint.api_key) >= 8 else text


def _describe(endpoint: Endpoint, exc: Exception) -> str:
    status = getattr(exc, "status_code", None)
    if status in (401, 403):
        hint = f"; check {KEY_VARIABLES.get(endpoint.provider, 'the API key')}"
    elif status == 404:
        hint = f"; check the model name {endpoint.model!r} and base_url"
    else:
        hint = ""
    what = f"HTTP {status}" if status else type(exc).__name__
    detail = str(exc)
    if status is None and (cause := _os_cause(exc)) is not None:
        # The SDKs say "Request timed out." or "Connection error." for a refused connection too:
        # the real cause sits at the bottom of the exception chain.
        reason = "connection refused" if isinstance(cause, ConnectionRefusedError) else "cannot connect"
        detail = f"{reason} at {_request_url(endpoint, exc)} ({type(cause).__name__}: {cause})"
    return f"{endpoint.label} call failed: {what}: {redact(detail, endpoint)[:300]}{hint}"


def _os_cause(exc: BaseException) -> OSError | None:
    """The deepest OS-level error (refused, unreachable, DNS) in `exc`'s cause/context chain."""
    found: OSError | None = None
    seen: set[int] = set()
    link = exc.__cause__ or exc.__context__
    while link is not None and id(link) not in seen:
        seen.add(id(link))
        if isinstance(link, OSError) and not isinstance(link, TimeoutError):
            found = link
        link = link.__cause__ or link.__context__
    return found


def _request_url(endpoint: Endpoint, exc: BaseException) -> str:
    """The URL the failed call went to, without user info or query (where a secret could sit)."""
    request = getattr(exc, "request", None)
    url = urlparse(str(getattr(request, "url", None) or endpoint.base_url or ""))
    host = url.hostname or ""
    return f"{url.scheme}://{host}{f':{url.port}' if url.port else ''}{url.path}"
