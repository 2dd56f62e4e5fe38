"""The judge's HTTP client: the OpenAI chat-completions and embeddings and the Anthropic messages wire
formats, spoken directly over one aiohttp session per event loop.

The SDKs' request machinery (httpx-style request and response models, URL parsing, header merging)
cost about 1 ms of CPU per call, several times what the POST itself costs, and made cobalt CPU-bound
at 200 calls in flight (benchmarks/RESULTS.md). What the SDKs gave is kept (docs/judge.md, "The
HTTP rules"): each provider's auth headers, the base-URL and key variables (`_providers`), the SDKs'
retry rules (`_retry`), certificates and proxies from the environment as httpx reads them
(`_network`), a timeout per request, typed errors that never hold a secret. Stricter than the SDKs:
redirects are refused (a key never leaves its origin), TLS failures are not retried, and an answer
is read up to `MAX_RESPONSE_BYTES`.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import ssl
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .._errors import JudgeError
from .._numbers import seconds
from .._secrets import safe_url
from ._network import certificate_source, environment_proxy, ssl_context
from ._providers import AZURE_KEY_VARIABLE, KEY_VARIABLES, Endpoint, basic_credentials, is_azure, redact
from ._retry import DEFAULT_TIMING, Failure, Timing, retry_after_seconds, retryable_status, retrying

if TYPE_CHECKING:
    import aiohttp

DEFAULT_URLS = {"openai": "https://api.openai.com/v1", "anthropic": "https://api.anthropic.com"}
ANTHROPIC_VERSION = "2023-06-01"

#: The most bytes of one answer read (`[judge]` answers are a few KB): more is an eval-error.
MAX_RESPONSE_BYTES = 10 * 2**20


class ProviderError(JudgeError, Failure):
    """A judge or embeddings call that failed; `retryable` when another attempt may succeed."""

    def __init__(self, message: str, *, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class HTTPStatusError(ProviderError):
    """The server answered with an error status (`status`); see `retryable_status`."""

    def __init__(self, message: str, status: int, *, retryable: bool, retry_after: float | None = None) -> None:
        super().__init__(message, retry_after=retry_after)
        self.status = status
        self.retryable = retryable


class ConnectionFailure(ProviderError):
    """No answer: refused, reset, unreachable, or cut off mid-answer."""

    retryable = True


class TLSFailure(ProviderError):
    """The server's certificate or the TLS handshake failed: another attempt would fail the same way."""


class BudgetExhausted(ProviderError):
    """The retry budget (`[judge] retry_max_seconds`, calls and waits together) ran out."""

    out_of_time = True

    def __init__(self, endpoint: Endpoint) -> None:
        super().__init__(f"{endpoint.label} call got no complete answer")


class RequestTimeout(ProviderError):
    """No complete answer within `[judge] timeout` seconds."""

    retryable = True


@dataclass
class Completion:
    text: str
    input_tokens: int
    output_tokens: int
    model: str
    #: Answered through the provider's batch API (billed at its discount).
    batched: bool = False



def chat_request(endpoint: Endpoint, system: str, messages: list[dict[str, str]]) -> tuple[str, dict[str, Any]]:
    """The path (under the base URL) and body of one chat call in the endpoint's wire format."""
    if endpoint.provider == "anthropic":
        return "/v1/messages", {"model": endpoint.model, "system": system, "messages": messages,
                                **endpoint.sampling()}
    return "/chat/completions", {"model": endpoint.model,
                                 "messages": [{"role": "system", "content": system}, *messages],
                                 **endpoint.sampling()}


def chat_answer(endpoint: Endpoint, data: Mapping[str, Any], *, batched: bool = False) -> Completion:
    """The text and token usage of one chat answer (a message, or a chat completion)."""
    if endpoint.provider == "anthropic":
        text = "".join(block.get("text", "") for block in data.get("content") or []
                       if isinstance(block, dict) and block.get("type") == "text")
        tokens = _usage(data, "input_tokens", "output_tokens")
    else:
        choices = data.get("choices") or [{}]
        message = choices[0].get("message") if isinstance(choices[0], dict) else None
        text = (message or {}).get("content") or ""
        tokens = _usage(data, "prompt_tokens", "completion_tokens")
    # A proxy or a debugging server can echo the request, headers included: the answer is kept
    # (raw_response, reason, cache), so no secret may survive in it.
    return Completion(redact(str(text), endpoint), *tokens, str(data.get("model") or endpoint.model), batched)


def request_headers(endpoint: Endpoint) -> dict[str, str]:
    """The headers every call to `endpoint` carries: JSON, and the provider's way of sending the key.
    A `user:password` in `base_url` goes as `Authorization: Basic`, in place of a Bearer key."""
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
    if (credentials := basic_credentials(endpoint.base_url)) is not None:
        import base64

        headers["Authorization"] = "Basic " + base64.b64encode(credentials.encode()).decode()
    return headers


@dataclass(frozen=True)
class _Target:
    """One endpoint's URL worked out once: `parsed` (a yarl.URL without user info), `shown` (for
    messages), the headers, TLS context and proxy."""

    shown: str
    parsed: Any
    headers: dict[str, str]
    ssl: ssl.SSLContext | bool
    proxy: Any = None  # yarl.URL
    proxy_auth: Any = None  # aiohttp.BasicAuth


def endpoint_url(endpoint: Endpoint, path: str) -> str:
    base = (endpoint.base_url or DEFAULT_URLS["anthropic" if endpoint.provider == "anthropic" else "openai"])
    if "?" in base:  # a query (`?api-version=...`) stays after the path
        base, query = base.split("?", 1)
        return base.rstrip("/") + path + "?" + query
    return base.rstrip("/") + path


class Clients:
    """The HTTP session of one run (created on first use inside its event loop, closed by `aclose`),
    with each endpoint's URLs and headers worked out once. `timing` is the retries' backoff and clock;
    `max_response_bytes` the most of one answer read."""

    def __init__(self, *, timing: Timing = DEFAULT_TIMING, max_response_bytes: int = MAX_RESPONSE_BYTES) -> None:
        self.timing = timing
        self.max_response_bytes = max_response_bytes
        self._sessions: dict[asyncio.AbstractEventLoop, aiohttp.ClientSession] = {}
        self._targets: dict[tuple[Endpoint, str], _Target] = {}
        self._ssl: ssl.SSLContext | None = None

    def session(self) -> aiohttp.ClientSession:
        loop = asyncio.get_running_loop()
        session = self._sessions.get(loop)
        if session is None or session.closed:
            import aiohttp

            # No pool limit (the judge's semaphore bounds the calls) and no aiohttp timeout (ours is per
            # call); proxies come from `_network`, not aiohttp's trust_env (which skips ALL_PROXY).
            connector = aiohttp.TCPConnector(limit=0, enable_cleanup_closed=False)
            session = self._sessions[loop] = aiohttp.ClientSession(
                connector=connector, timeout=aiohttp.ClientTimeout(total=None), raise_for_status=False,
                skip_auto_headers=("User-Agent",))
        return session

    def _ssl_context(self, endpoint: Endpoint) -> ssl.SSLContext:
        if self._ssl is None:
            try:
                self._ssl = ssl_context()
            except (OSError, ssl.SSLError) as exc:
                raise TLSFailure(f"{endpoint.label} call failed: the certificates in {certificate_source()} "
                                 f"cannot be loaded ({type(exc).__name__}: {exc}); check that variable") from None
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
        path, body = chat_request(endpoint, system, messages)
        return chat_answer(endpoint, await self._post_retrying(endpoint, path, body))

    async def embed(self, endpoint: Endpoint, texts: list[str]) -> tuple[list[list[float]], int]:
        data = await self._post_retrying(endpoint, "/embeddings", {"model": endpoint.model, "input": texts})
        rows = data.get("data")
        try:
            vectors = [row["embedding"] for row in sorted(rows, key=lambda r: r.get("index", 0))]  # type: ignore[arg-type]
        except (TypeError, KeyError, AttributeError):
            vectors = []
        if len(vectors) != len(texts):
            raise ProviderError(f"{endpoint.label} answered {len(vectors)} embeddings for {len(texts)} texts; "
                                f"check base_url {safe_url(endpoint_url(endpoint, ''))!r} and the model "
                                f"{endpoint.model!r}")
        return vectors, _usage(data, "prompt_tokens", "completion_tokens")[0]

    async def _post_retrying(self, endpoint: Endpoint, path: str, body: dict[str, Any]) -> dict[str, Any]:
        payload = json.dumps(body, ensure_ascii=False).encode("utf-8")
        return await retrying(lambda deadline: self._post(endpoint, path, payload, deadline),
                              retries=endpoint.max_retries, budget=endpoint.retry_max_seconds,
                              budget_name="[judge] retry_max_seconds", timing=self.timing)

    def _target(self, endpoint: Endpoint, path: str) -> _Target:
        """Worked out once per endpoint: parsing the URL and merging headers per call cost."""
        import yarl

        url = endpoint_url(endpoint, path)
        parsed = yarl.URL(url).with_user(None)  # its user info goes as Basic auth (request_headers)
        shown = safe_url(url)
        proxy, proxy_auth = _proxy(endpoint, url)
        tls = self._ssl_context(endpoint) if parsed.scheme == "https" else False
        return _Target(shown, parsed, request_headers(endpoint), tls, proxy, proxy_auth)

    async def _post(self, endpoint: Endpoint, path: str, payload: bytes, deadline: float) -> dict[str, Any]:
        """One POST, within `[judge] timeout` and what is left of the retry budget (one timer for both)."""
        target = self._targets.get((endpoint, path))
        if target is None:
            target = self._targets[(endpoint, path)] = self._target(endpoint, path)
        return _json_object(endpoint, target, await self.send(endpoint, target, "POST", payload, deadline))

    async def send(self, endpoint: Endpoint, target: _Target, method: str, data: Any, deadline: float, *,
                   headers: Mapping[str, str] | None = None, cap: int | None = None,
                   timeout: float | None = None) -> bytes:
        """One request's body, within `timeout` (default `[judge] timeout`) and what is left of the retry
        budget ending at `deadline`; redirects refused, the body read up to `cap`, failures typed."""
        import aiohttp

        limit = endpoint.timeout if timeout is None else timeout
        left = deadline - self.timing.monotonic()
        try:
            async with asyncio.timeout(min(limit, left)), self.session().request(
                    method, target.parsed, data=data, headers=target.headers if headers is None else headers,
                    ssl=target.ssl, proxy=target.proxy, proxy_auth=target.proxy_auth,
                    allow_redirects=False) as response:
                status = response.status
                if status == 407 and target.proxy is not None:  # the proxy's answer, not the judge's
                    raise _proxy_refused(endpoint, target, status, response.reason)
                if 300 <= status < 400:
                    raise _redirect_error(endpoint, target, status, response.headers.get("Location"))
                raw = await _read_capped(response, self.max_response_bytes if cap is None else cap, endpoint, target)
                if status >= 400:
                    raise _status_error(endpoint, target.shown, status, response.headers, raw)
        except TimeoutError:
            if left <= limit:
                raise BudgetExhausted(endpoint) from None
            raise RequestTimeout(f"{endpoint.label} call failed: TimeoutError: no complete answer from "
                                 f"{target.shown} within {seconds(limit)} ([judge] timeout)") from None
        except aiohttp.ClientHttpProxyError as exc:  # a CONNECT the proxy refused (an https judge)
            raise _proxy_refused(endpoint, target, exc.status, exc.message) from None
        except aiohttp.ClientSSLError as exc:
            raise TLSFailure(_tls_message(endpoint, target, exc)) from None
        except aiohttp.ClientError as exc:
            raise ConnectionFailure(_connection_message(endpoint, target, exc)) from None
        return raw


def _proxy(endpoint: Endpoint, url: str) -> tuple[Any, Any]:
    """The environment's proxy for `url` as aiohttp takes it: a URL without user info, and its auth."""
    import aiohttp
    import yarl

    proxy = environment_proxy(url)
    if proxy is None:
        return None, None
    parsed = yarl.URL(proxy)
    if parsed.scheme not in ("http", "https"):
        raise ProviderError(f"{endpoint.label} call failed: the proxy the environment names for {safe_url(url)} "
                            f"({safe_url(proxy)}) is a {parsed.scheme} proxy; cobalt's judge client takes http:// "
                            "or https:// proxies (HTTPS_PROXY, HTTP_PROXY, ALL_PROXY), or set NO_PROXY for this host")
    auth = aiohttp.BasicAuth(parsed.user or "", parsed.password or "") if parsed.user or parsed.password else None
    return parsed.with_user(None), auth


async def _read_capped(response: aiohttp.ClientResponse, cap: int, endpoint: Endpoint, target: _Target) -> bytes:
    """The answer's body, read up to `cap` bytes: more (announced or sent) is an error, and what was
    read so far is dropped with the connection."""
    length = response.content_length
    if length is None or length > cap:
        body = bytearray()
        async for chunk in response.content.iter_any():
            body += chunk
            if len(body) > cap:
                raise ProviderError(f"{endpoint.label} call failed: the answer from {target.shown} is larger than "
                                    f"{cap // 2**20} MB, the most a judge answer may be; check base_url")
        return bytes(body)
    return await response.read()


def _proxy_refused(endpoint: Endpoint, target: _Target, status: int, reason: str | None) -> ProviderError:
    """The environment's proxy refused the request: a proxy problem (its credentials, its rules), not the judge's."""
    said = f"HTTP {status}{f' {reason}' if reason else ''}"
    check = ("check the proxy's user and password in" if status == 407 else  # else it could not reach the host
             "check that the proxy may reach this host, the proxy in")
    return ProviderError(f"{endpoint.label} call failed: the proxy {safe_url(str(target.proxy))} refused the request "
                         f"to {target.shown} ({redact(said, endpoint)[:200]}); {check} "
                         "HTTPS_PROXY / HTTP_PROXY / ALL_PROXY, or set NO_PROXY for this host")


def _redirect_error(endpoint: Endpoint, target: _Target, status: int, location: str | None) -> ProviderError:
    """Redirects are not followed: the key would go with the request to the redirect's origin."""
    import yarl

    if not location:
        where = "without a Location"
    else:
        to = target.parsed.join(yarl.URL(location))
        where = f"to {to.host}{f':{to.port}' if to.port and not to.is_default_port() else ''}"
    return ProviderError(f"{endpoint.label} call failed: {target.shown} answered HTTP {status}, a redirect {where}; "
                         "cobalt does not follow a judge's redirects (its key would go along): set base_url to the "
                         "server that answers")


def _usage(data: Mapping[str, Any], first: str, second: str) -> tuple[int, int]:
    usage = data.get("usage")
    if not isinstance(usage, dict):
        return 0, 0
    return int(usage.get(first) or 0), int(usage.get(second) or 0)


def _json_object(endpoint: Endpoint, target: _Target, raw: bytes) -> dict[str, Any]:
    """The decoded JSON answer; a server that answers 200 with something else (an HTML page from a
    proxy, say) is a judge error, not a crash."""
    try:
        data = json.loads(raw)
    except ValueError:
        data = raw.decode("utf-8", errors="replace")
    if not isinstance(data, dict):
        raise ProviderError(f"{endpoint.label} answered with {type(data).__name__}, not a JSON object: "
                            f"{redact(str(data)[:2000], endpoint)[:200]!r}; check base_url {target.shown!r}")
    return data


def _status_error(endpoint: Endpoint, shown: str, status: int, headers: Mapping[str, str],
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
        hint = f"; check the model name {endpoint.model!r} and base_url ({shown} was not found)"
    else:
        hint = ""
    message = f"{endpoint.label} call failed: HTTP {status}: {redact(detail[:2000], endpoint)[:300]}{hint}"
    return HTTPStatusError(message, status, retryable=retryable_status(status, headers),
                           retry_after=retry_after_seconds(headers))


def _connection_message(endpoint: Endpoint, target: _Target, exc: BaseException) -> str:
    """One sentence for a connection that failed: through a proxy it names the proxy (it is the proxy that
    refused or hung up), and aiohttp's reprs of half-read messages (headers and all) are never shown."""
    import aiohttp

    shown = target.shown
    via = f" through the proxy {safe_url(str(target.proxy))}" if target.proxy is not None else ""
    cause = getattr(exc, "os_error", None)
    if isinstance(exc, aiohttp.ClientProxyConnectionError):
        where = (f"cannot connect to the proxy {safe_url(str(target.proxy))} for {shown} ({type(cause).__name__}: "
                 f"{cause}); check HTTPS_PROXY / HTTP_PROXY / ALL_PROXY, or set NO_PROXY for this host")
    elif isinstance(cause, ConnectionRefusedError):
        where = f"connection refused at {shown} ({type(cause).__name__}: {cause})"
    elif isinstance(cause, OSError):
        where = f"cannot connect to {shown}{via} ({type(cause).__name__}: {cause})"
    elif isinstance(exc, aiohttp.ServerDisconnectedError | aiohttp.ClientPayloadError):
        # their text is aiohttp's repr of the half-read message when the server hung up mid-way
        cut = re.search(r"received \d+ of \d+ bytes", str(exc))
        how = cut.group(0) if cut else type(exc).__name__
        where = (f"the proxy {safe_url(str(target.proxy))} closed the connection before the answer from {shown} was "
                 f"complete ({how})" if target.proxy is not None else
                 f"{shown} closed the connection before its answer was complete ({how})")
    elif isinstance(exc, aiohttp.ClientResponseError):  # a head aiohttp cannot parse: its message quotes the bytes
        said = (exc.message.splitlines() or [""])[0].rstrip(":") or "an unreadable head"
        where = f"{shown}{via} answered with something that is not HTTP ({said})"
    else:
        said = str(exc).splitlines()[0] if str(exc) else ""
        where = f"{type(exc).__name__} from {shown}{via}" + (f": {said}" if said and not said.startswith("<") else "")
    return f"{endpoint.label} call failed: {redact(where, endpoint)[:300]}"


def _tls_message(endpoint: Endpoint, target: _Target, exc: BaseException) -> str:
    reason = getattr(exc, "certificate_error", None) or getattr(exc, "os_error", None) or exc
    return (f"{endpoint.label} call failed: TLS with {target.parsed.host} failed ({type(reason).__name__}: "
            f"{redact(str(reason), endpoint)[:200]}); not retried. The server's certificate was checked against "
            f"{certificate_source()}: behind a TLS-inspecting proxy or with a private CA, set SSL_CERT_FILE to a "
            "bundle holding that CA")
