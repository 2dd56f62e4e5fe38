"""The judge's HTTP client: the OpenAI chat-completions and embeddings and the Anthropic messages wire
formats, spoken directly over one aiohttp session per event loop.

The SDKs' request machinery (httpx-style request and response models, URL parsing, header merging)
cost about 1 ms of CPU per call, several times what the POST itself costs, and made cobalt CPU-bound
at 200 calls in flight (benchmarks/RESULTS.md). What the SDKs gave is kept: each provider's auth
headers, the base-URL and key variables (resolved in `_providers`), cobalt's own retries honouring
`Retry-After`, a timeout per request, typed errors with actionable messages that never hold the key.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import random
import ssl
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar
from urllib.parse import urlparse

from .._errors import JudgeError
from ._providers import AZURE_KEY_VARIABLE, KEY_VARIABLES, Endpoint, is_azure, redact, retry_after_seconds

if TYPE_CHECKING:
    import aiohttp

T = TypeVar("T")

DEFAULT_URLS = {"openai": "https://api.openai.com/v1", "anthropic": "https://api.anthropic.com"}
ANTHROPIC_VERSION = "2023-06-01"


class ProviderError(JudgeError):
    """A judge or embeddings call that failed; `retryable` when another attempt may succeed."""

    retryable = False

    def __init__(self, message: str, *, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class HTTPStatusError(ProviderError):
    """The server answered with an error status (`status`); 429 and 5xx are retryable."""

    def __init__(self, message: str, status: int, *, retry_after: float | None = None) -> None:
        super().__init__(message, retry_after=retry_after)
        self.status = status
        self.retryable = status == 429 or status >= 500


class ConnectionFailure(ProviderError):
    """No answer: refused, reset, unreachable, or cut off mid-answer."""

    retryable = True


class BudgetExhausted(ProviderError):
    """The retry budget (`[judge] retry_max_seconds`, calls and waits together) ran out."""

    def __init__(self, endpoint: Endpoint) -> None:
        super().__init__(f"{endpoint.label} call ran out of its retry budget")


class RequestTimeout(ProviderError):
    """No complete answer within `[judge] timeout` seconds."""

    retryable = True


@dataclass
class Completion:
    text: str
    input_tokens: int
    output_tokens: int
    model: str


def request_headers(endpoint: Endpoint) -> dict[str, str]:
    """The headers every call to `endpoint` carries: JSON, and the provider's way of sending the key."""
    headers = {"Content-Type": "application/json", "Accept": "application/json",
               "User-Agent": "cobalt-evals (aiohttp)"}
    if endpoint.provider == "anthropic":
        headers["x-api-key"] = endpoint.api_key
        headers["anthropic-version"] = ANTHROPIC_VERSION
    elif is_azure(endpoint.base_url):
        headers["api-key"] = endpoint.api_key
    else:
        headers["Authorization"] = f"Bearer {endpoint.api_key}"
        if endpoint.provider == "openai":  # as the openai SDK does
            for variable, header in (("OPENAI_ORG_ID", "OpenAI-Organization"), ("OPENAI_PROJECT_ID", "OpenAI-Project")):
                if value := os.environ.get(variable):
                    headers[header] = value
    return headers


@dataclass(frozen=True)
class _Target:
    url: str
    parsed: Any  # yarl.URL
    headers: dict[str, str]
    ssl: ssl.SSLContext | bool
    proxy: Any = None  # yarl.URL
    proxy_auth: Any = None  # aiohttp.BasicAuth


def _env_proxy(url: Any) -> tuple[Any, Any]:
    """The proxy HTTP(S)_PROXY / NO_PROXY name for `url` (as the SDKs honoured them), looked up once."""
    from aiohttp.helpers import get_env_proxy_for_url

    try:
        return get_env_proxy_for_url(url)
    except LookupError:
        return None, None


def _parsed(url: str) -> Any:
    import yarl

    return yarl.URL(url)


def endpoint_url(endpoint: Endpoint, path: str) -> str:
    base = (endpoint.base_url or DEFAULT_URLS["anthropic" if endpoint.provider == "anthropic" else "openai"])
    return base.rstrip("/") + path


class Clients:
    """The HTTP session of one run (created on first use inside its event loop, closed by `aclose`),
    with each endpoint's URLs and headers worked out once."""

    def __init__(self) -> None:
        self._sessions: dict[asyncio.AbstractEventLoop, aiohttp.ClientSession] = {}
        self._targets: dict[tuple[Endpoint, str], _Target] = {}
        self._ssl: ssl.SSLContext | None = None

    def session(self) -> aiohttp.ClientSession:
        loop = asyncio.get_running_loop()
        session = self._sessions.get(loop)
        if session is None or session.closed:
            import aiohttp

            # No pool limit (the judge's semaphore bounds the calls) and no aiohttp timeout (ours is per call).
            connector = aiohttp.TCPConnector(limit=0, enable_cleanup_closed=False)
            session = self._sessions[loop] = aiohttp.ClientSession(
                connector=connector, timeout=aiohttp.ClientTimeout(total=None), raise_for_status=False,
                skip_auto_headers=("User-Agent",))
        return session

    def _ssl_context(self) -> ssl.SSLContext:
        if self._ssl is None:
            try:
                import certifi  # the CA bundle the SDKs used, so a judge that worked through them still verifies

                self._ssl = ssl.create_default_context(cafile=certifi.where())
            except ImportError:
                self._ssl = ssl.create_default_context()
        return self._ssl

    async def aclose(self) -> None:
        sessions, self._sessions = list(self._sessions.items()), {}
        current = asyncio.get_running_loop()
        for loop, session in sessions:
            if loop is current:
                with contextlib.suppress(Exception):  # best effort: the run's results are already safe
                    await session.close()

    async def complete(self, endpoint: Endpoint, system: str, messages: list[dict[str, str]]) -> Completion:
        """One chat call with bounded retries; returns the text and token usage."""
        if endpoint.provider == "anthropic":
            body: dict[str, Any] = {"model": endpoint.model, "system": system, "messages": messages,
                                    **endpoint.sampling()}
            data = await self._post_retrying(endpoint, "/v1/messages", body)
            text = "".join(block.get("text", "") for block in data.get("content") or []
                           if isinstance(block, dict) and block.get("type") == "text")
            tokens = _usage(data, "input_tokens", "output_tokens")
        else:
            body = {"model": endpoint.model, "messages": [{"role": "system", "content": system}, *messages],
                    **endpoint.sampling()}
            data = await self._post_retrying(endpoint, "/chat/completions", body)
            choices = data.get("choices") or [{}]
            message = choices[0].get("message") if isinstance(choices[0], dict) else None
            text = (message or {}).get("content") or ""
            tokens = _usage(data, "prompt_tokens", "completion_tokens")
        # A proxy or a debugging server can echo the request, headers included: the answer is kept
        # (raw_response, reason, cache), so the key must not survive in it.
        return Completion(redact(str(text), endpoint), *tokens, str(data.get("model") or endpoint.model))

    async def embed(self, endpoint: Endpoint, texts: list[str]) -> tuple[list[list[float]], int]:
        data = await self._post_retrying(endpoint, "/embeddings", {"model": endpoint.model, "input": texts})
        rows = data.get("data")
        try:
            vectors = [row["embedding"] for row in sorted(rows, key=lambda r: r.get("index", 0))]  # type: ignore[arg-type]
        except (TypeError, KeyError, AttributeError):
            vectors = []
        if len(vectors) != len(texts):
            raise ProviderError(f"{endpoint.label} answered {len(vectors)} embeddings for {len(texts)} texts; "
                                f"check base_url {endpoint.base_url!r} and the model {endpoint.model!r}")
        return vectors, _usage(data, "prompt_tokens", "completion_tokens")[0]

    async def _post_retrying(self, endpoint: Endpoint, path: str, body: dict[str, Any]) -> dict[str, Any]:
        payload = json.dumps(body, ensure_ascii=False).encode("utf-8")
        return await with_retries(endpoint, lambda deadline: self._post(endpoint, path, payload, deadline))

    async def _post(self, endpoint: Endpoint, path: str, payload: bytes, deadline: float) -> dict[str, Any]:
        """One POST, within `[judge] timeout` and what is left of the retry budget (one timer for both)."""
        import aiohttp

        target = self._targets.get((endpoint, path))
        if target is None:  # worked out once per endpoint: parsing the URL and merging headers per call cost
            url = endpoint_url(endpoint, path)
            parsed = _parsed(url)
            target = self._targets[(endpoint, path)] = _Target(url, parsed, request_headers(endpoint),
                                                               self._ssl_for(url), *_env_proxy(parsed))
        left = deadline - time.monotonic()
        try:
            async with asyncio.timeout(min(endpoint.timeout, left)), self.session().post(
                    target.parsed, data=payload, headers=target.headers, ssl=target.ssl, proxy=target.proxy,
                    proxy_auth=target.proxy_auth) as response:
                status, raw = response.status, await response.read()
                if status >= 400:
                    raise _status_error(endpoint, target.url, status, response.headers, raw)
        except TimeoutError:
            if left <= endpoint.timeout:
                raise BudgetExhausted(endpoint) from None
            raise RequestTimeout(f"{endpoint.label} call failed: TimeoutError: no complete answer from "
                                 f"{safe_url(target.url)} within {endpoint.timeout:g} s ([judge] timeout)") from None
        except aiohttp.ClientError as exc:
            raise ConnectionFailure(_connection_message(endpoint, target.url, exc)) from None
        return _json_object(endpoint, raw)

    def _ssl_for(self, url: str) -> ssl.SSLContext | bool:
        return self._ssl_context() if url.startswith("https:") else False


def _usage(data: Mapping[str, Any], first: str, second: str) -> tuple[int, int]:
    usage = data.get("usage")
    if not isinstance(usage, dict):
        return 0, 0
    return int(usage.get(first) or 0), int(usage.get(second) or 0)


def _json_object(endpoint: Endpoint, raw: bytes) -> dict[str, Any]:
    """The decoded JSON answer; a server that answers 200 with something else (an HTML page from a
    proxy, say) is a judge error, not a crash."""
    try:
        data = json.loads(raw)
    except ValueError:
        data = raw.decode("utf-8", errors="replace")
    if not isinstance(data, dict):
        raise ProviderError(f"{endpoint.label} answered with {type(data).__name__}, not a JSON object: "
                            f"{redact(str(data), endpoint)[:200]!r}; check base_url {endpoint.base_url!r}")
    return data


def _status_error(endpoint: Endpoint, url: str, status: int, headers: Mapping[str, str],
                  raw: bytes) -> HTTPStatusError:
    try:
        data = json.loads(raw)
        error = data.get("error") if isinstance(data, dict) else None
        detail = str(error.get("message") if isinstance(error, dict) else (error or data))
    except ValueError:
        detail = raw.decode("utf-8", errors="replace")
    if status in (401, 403):
        variable = KEY_VARIABLES.get(endpoint.provider, "the API key")
        hint = f"; check {AZURE_KEY_VARIABLE} (or {variable})" if is_azure(endpoint.base_url) else f"; check {variable}"
    elif status == 404:
        hint = f"; check the model name {endpoint.model!r} and base_url ({safe_url(url)} was not found)"
    else:
        hint = ""
    message = f"{endpoint.label} call failed: HTTP {status}: {redact(detail, endpoint)[:300]}{hint}"
    return HTTPStatusError(message, status, retry_after=retry_after_seconds(headers))


def _connection_message(endpoint: Endpoint, url: str, exc: BaseException) -> str:
    cause = getattr(exc, "os_error", None)
    if isinstance(cause, ConnectionRefusedError):
        where = f"connection refused at {safe_url(url)} ({type(cause).__name__}: {cause})"
    elif isinstance(cause, OSError):
        where = f"cannot connect to {safe_url(url)} ({type(cause).__name__}: {cause})"
    else:
        where = f"{type(exc).__name__} from {safe_url(url)}: {exc}"
    return f"{endpoint.label} call failed: {redact(where, endpoint)[:300]}"


def safe_url(url: str) -> str:
    """`url` without user info or query (where a secret could sit)."""
    parts = urlparse(url)
    return f"{parts.scheme}://{parts.hostname or ''}{f':{parts.port}' if parts.port else ''}{parts.path}"


async def with_retries(endpoint: Endpoint, call: Callable[[float], Awaitable[T]], *,
                       sleep: Callable[[float], Awaitable[Any]] = asyncio.sleep) -> T:
    """`call(deadline)`, retried on retryable failures: at most `max_retries` times, waiting what the
    server's `Retry-After` asks or an exponential backoff with jitter, all (calls included) before the
    `deadline` of `retry_max_seconds` from now, a `time.monotonic()` value the call must keep to.
    `sleep` does the waiting (a test passes one that records the waits and returns at once)."""
    deadline = time.monotonic() + endpoint.retry_max_seconds
    attempt = 0
    while True:
        try:
            return await call(deadline)
        except BudgetExhausted as exc:
            exc.args = (f"{endpoint.label} call gave up after {attempt + 1} attempts: the retry budget of "
                        f"{endpoint.retry_max_seconds:g} s ([judge] retry_max_seconds) ran out",)
            raise
        except ProviderError as exc:
            if not exc.retryable:
                raise
            wait = exc.retry_after
            if wait is None:
                wait = min(30.0, 0.5 * 2**attempt) * (0.75 + random.random() / 2)
            attempt += 1
            if attempt > endpoint.max_retries or time.monotonic() + wait > deadline:
                exc.args = (f"{exc} (gave up after {attempt} attempts)",)
                raise exc from None
            await sleep(wait)
