"""The judge's HTTP client keeps every rule of the SDKs it replaced (and refuses what they let
through), one row per rule, each naming the behaviour it matches, against real servers on
127.0.0.1 through `Judge.score` (what an evaluator calls). Retries wait on a virtual clock."""

from __future__ import annotations

import asyncio
import base64
import email.utils
import socket
import time
import tracemalloc
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from conftest import TEST_KEY
from http_world import CutBody, Drop, Endless, HalfHeaders, LocalCA, NotHTTP, Say, counting_proxy, judge_server, make_ca

from cobalt_lib.config._config import JudgeConfig
from cobalt_lib.llm import Judge, ResponseCache, resolve_judge
from cobalt_lib.llm._retry import Timing
from cobalt_lib.llm._wire import Clients
from cobalt_lib.results._report import Evaluation

# Rows with TLS make a test CA with `openssl` in a subprocess: the table is in the slow tier.
pytestmark = pytest.mark.slow

PROXY_VARIABLES = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY", "http_proxy", "https_proxy", "all_proxy",
                   "no_proxy", "SSL_CERT_FILE", "SSL_CERT_DIR", "AZURE_OPENAI_API_KEY")
PATHS = {"openai": "/v1/chat/completions", "anthropic": "/v1/messages"}


class VirtualClock:
    """Monotonic time that only the retries' sleeps advance; the backoff is the SDKs' without jitter."""

    def __init__(self) -> None:
        self.now = 1000.0
        self.waits: list[float] = []

    def monotonic(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.waits.append(seconds)
        self.now += seconds

    def timing(self) -> Timing:
        return Timing(backoff=lambda retry: min(0.5 * 2**retry, 8.0), monotonic=self.monotonic, sleep=self.sleep)


@dataclass
class World:
    """What a row gets: the environment, a temporary directory, and a judge call on a virtual clock."""

    monkeypatch: pytest.MonkeyPatch
    tmp_path: Path
    clock: VirtualClock = field(default_factory=VirtualClock)

    def score(self, base_url: str, provider: str = "openai", *, retries: int = 3, budget: float = 120) -> Evaluation:
        config = JudgeConfig(provider=provider, base_url=base_url, model="m", max_retries=retries,  # type: ignore[arg-type]
                             retry_max_seconds=budget, timeout=10)
        endpoint = resolve_judge(config)

        async def call() -> Evaluation:
            judge = Judge(ResponseCache(self.tmp_path / "cache", 0, enabled=False), 1,
                          clients=Clients(timing=self.clock.timing()))
            try:
                return await judge.score(endpoint, "rate this")
            finally:
                await judge.aclose()

        return asyncio.run(call())

    def ca(self) -> LocalCA:
        return make_ca(self.tmp_path)


def ok(evaluation: Evaluation) -> bool:
    return (evaluation.status, evaluation.score) == ("ok", 0.9)


def failed(evaluation: Evaluation, *parts: str) -> str:
    error = evaluation.error or ""
    assert evaluation.status == "eval-error" and all(part in error for part in parts), error
    assert TEST_KEY not in error and "1 attempts" not in error
    return error


# -- the rows' checks ---------------------------------------------------------------------------


def _redirected(world: World, status: int, provider: str) -> None:
    """307 and 302: not followed, nothing reaches the Location, the error names its host."""
    with judge_server() as elsewhere:
        location = f"{elsewhere.url}/v1/chat/completions?stolen=1"
        with judge_server(Say(status, {"Location": location})) as origin:
            if provider == "azure":  # an Azure host (api-key header), reached through the origin as its proxy
                world.monkeypatch.setenv("AZURE_OPENAI_API_KEY", TEST_KEY)
                world.monkeypatch.setenv("HTTP_PROXY", origin.url)
                evaluation = world.score("http://res.openai.azure.com/openai/v1")
                header = "api-key"
            else:
                evaluation = world.score(origin.url + ("" if provider == "anthropic" else "/v1"), provider)
                header = "x-api-key" if provider == "anthropic" else "authorization"
            failed(evaluation, f"HTTP {status}, a redirect to 127.0.0.1:{elsewhere.port}",
                   "does not follow a judge's redirects")
            assert TEST_KEY in origin.received[0]["headers"][header]  # the key went to its origin only
            assert len(origin.received) == 1 and elsewhere.received == [] and world.clock.waits == []


def _retried(world: World, reply: Say, waits: list[float]) -> None:
    """The status is retried after `waits`, then the answer is scored."""
    with judge_server(reply) as server:
        evaluation = world.score(server.url + "/v1")
    assert ok(evaluation), evaluation.error
    assert len(server.received) == 2 and world.clock.waits == waits


def _not_retried(world: World, reply: Say, *message: str) -> None:
    with judge_server(reply, Say()) as server:
        evaluation = world.score(server.url + "/v1")
    error = failed(evaluation, *message)
    assert len(server.received) == 1 and world.clock.waits == [] and "gave up" not in error


def _retry_after_beyond_budget(world: World) -> None:
    with judge_server(Say(429, {"Retry-After": "3600"}), Say()) as server:
        evaluation = world.score(server.url + "/v1", budget=120)
    error = failed(evaluation, "HTTP 429", "the server asked to wait 1h 00m, more than the 2m 00s left")
    assert "gave up after 1" not in error and len(server.received) == 1 and world.clock.waits == []


def _gives_up(world: World) -> None:
    with judge_server(*[Say(500)] * 5) as server:
        evaluation = world.score(server.url + "/v1", retries=3)
    failed(evaluation, "HTTP 500", "(gave up after 4 attempts)")
    assert len(server.received) == 4 and world.clock.waits == [0.5, 1.0, 2.0]


def _dropped_connection(world: World) -> None:
    with judge_server(Drop()) as server:
        evaluation = world.score(server.url + "/v1")
    assert ok(evaluation) and len(server.received) == 2 and world.clock.waits == [0.5]


def _endless_body(world: World) -> None:
    with judge_server(Endless(), Say()) as server:
        tracemalloc.start()
        try:
            evaluation = world.score(server.url + "/v1")
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        server.handler.hung_up.wait(timeout=30)  # the server notices the hang-up
    failed(evaluation, "larger than 10 MB, the most a judge answer may be")
    assert len(server.received) == 1 and world.clock.waits == []  # a body too large is not retried
    assert peak < 40 * 2**20, peak  # read up to the cap, not to the server's 2 GB
    assert server.handler.sent and server.handler.sent[0] < 64 * 2**20


def _tls(world: World, variable: str | None, *, proxied: bool = False) -> None:
    ca = world.ca()
    if variable:
        world.monkeypatch.setenv(variable, str(ca.ca_file if variable == "SSL_CERT_FILE" else ca.ca_dir))
    with judge_server(tls=ca.server) as server, counting_proxy() as (proxy, seen):
        if proxied:
            world.monkeypatch.setenv("HTTPS_PROXY", proxy)
        evaluation = world.score(server.url + "/v1")
    if variable is None:  # certifi's bundle does not hold the test CA
        error = failed(evaluation, "TLS with 127.0.0.1 failed", "not retried", "set SSL_CERT_FILE")
        assert "CERTIFICATE_VERIFY_FAILED" in error and world.clock.waits == [] and server.received == []
        return
    assert ok(evaluation), evaluation.error
    assert len(server.received) == 1 and world.clock.waits == []
    assert seen == ([f"CONNECT 127.0.0.1:{server.port} HTTP/1.1"] if proxied else [])


def _proxied(world: World, no_proxy: str | None) -> None:
    """ALL_PROXY names the proxy of every scheme; NO_PROXY hosts go direct."""
    with judge_server() as server, counting_proxy() as (proxy, seen):
        world.monkeypatch.setenv("ALL_PROXY", proxy.removeprefix("http://"))  # a proxy without a scheme is http
        if no_proxy:
            world.monkeypatch.setenv("NO_PROXY", no_proxy)
        evaluation = world.score(server.url + "/v1")
    assert ok(evaluation), evaluation.error
    assert seen == ([] if no_proxy else [f"POST {server.url}/v1/chat/completions HTTP/1.1"])
    assert len(server.received) == 1


def _half_headers(world: World) -> None:
    """A server closing mid-headers is one sentence (retried as a dropped connection), not aiohttp's repr."""
    with judge_server(HalfHeaders(), HalfHeaders()) as server:
        evaluation = world.score(server.url + "/v1", retries=1)
    error = failed(evaluation, f"{server.url}/v1/chat/completions closed the connection before its answer was "
                               "complete")
    assert "RawResponseMessage" not in error and "CIMultiDict" not in error and len(server.received) == 2


def _proxy_refusing(world: World) -> None:
    """A proxy that answers 407 is a proxy problem, said so, and not sent on to the judge; its echo is scrubbed."""
    with judge_server() as server, counting_proxy(refuse=True) as (proxy, seen):
        world.monkeypatch.setenv("HTTP_PROXY", proxy.replace("://", "://puser:SECRET-proxy-pw-31415@"))
        evaluation = world.score(server.url + "/v1")
    error = failed(evaluation, f"the proxy {proxy} refused the request to {server.url}/v1/chat/completions "
                               "(HTTP 407 Proxy Authentication Required); check the proxy's user and password")
    assert "SECRET-proxy-pw" not in error and server.received == [] and len(seen) == 1  # not retried either


def _cut_short(world: World, reply: CutBody | NotHTTP, said: str) -> None:
    """A body cut short or a head that is not HTTP is one sentence (retried), not aiohttp's repr of it."""
    with judge_server(reply, reply) as server:
        evaluation = world.score(server.url + "/v1", retries=1)
    error = failed(evaluation, f"{server.url}/v1/chat/completions {said}")
    assert not any(part in error for part in ("<", "b'", "\\x", "message=", "\n")), error
    assert len(server.received) == 2


def _proxy_refusing_connect(world: World) -> None:
    """An https judge behind a proxy that answers the CONNECT with 407: the proxy's refusal, not the judge's."""
    with counting_proxy(refuse=True) as (proxy, seen):
        world.monkeypatch.setenv("HTTPS_PROXY", proxy.replace("://", "://puser:SECRET-proxy-pw-31415@"))
        evaluation = world.score("https://127.0.0.1:9/v1")
    error = failed(evaluation, f"the proxy {proxy} refused the request to https://127.0.0.1:9/v1/chat/completions "
                               "(HTTP 407 Proxy Authentication Required); check the proxy's user and password")
    assert "SECRET-proxy-pw" not in error and seen == ["CONNECT 127.0.0.1:9 HTTP/1.1"]


def _proxy_hanging_up(world: World, scheme: str) -> None:
    """A proxy that closes the connection unanswered is named as the one that closed it (the judge never heard)."""
    with judge_server() as server, counting_proxy(hang_up=True) as (proxy, seen):
        world.monkeypatch.setenv("HTTP_PROXY" if scheme == "http" else "HTTPS_PROXY", proxy)
        url = f"{server.url if scheme == 'http' else 'https://127.0.0.1:9'}/v1"
        evaluation = world.score(url, retries=1)
    failed(evaluation, f"the proxy {proxy} closed the connection before the answer from {url}/chat/completions was "
                       "complete")
    assert server.received == [] and len(seen) == 2


def _proxy_unreachable(world: World) -> None:
    """Nothing listens where the proxy should be: the proxy is named, not the judge."""
    with socket.socket() as free:
        free.bind(("127.0.0.1", 0))
        proxy = f"http://127.0.0.1:{free.getsockname()[1]}"
    with judge_server() as server:
        world.monkeypatch.setenv("HTTP_PROXY", proxy)
        evaluation = world.score(server.url + "/v1", retries=0)
    failed(evaluation, f"cannot connect to the proxy {proxy} for {server.url}/v1/chat/completions "
                       "(ConnectionRefusedError", "check HTTPS_PROXY / HTTP_PROXY / ALL_PROXY, or set NO_PROXY")
    assert server.received == []


def _user_info(world: World, provider: str) -> None:
    """user:password in base_url is sent as Basic auth, never in the URL; with a Bearer key it replaces the key."""
    with judge_server() as server:
        url = server.url.replace("://", "://svc:p%40ss-SECRET-42@") + ("" if provider == "anthropic" else "/v1")
        evaluation = world.score(url, provider)
    assert ok(evaluation), evaluation.error
    headers = server.received[0]["headers"]
    assert headers["authorization"] == "Basic " + base64.b64encode(b"svc:p@ss-SECRET-42").decode()
    assert headers.get("x-api-key") == (TEST_KEY if provider == "anthropic" else None)
    assert TEST_KEY not in headers["authorization"] and server.received[0]["path"] == PATHS[provider]


@dataclass(frozen=True)
class Rule:
    name: str
    #: The SDK (or httpx, which the SDKs send through) behaviour the row matches, or where cobalt is stricter.
    source: str
    check: Callable[[World], None]


def past_date() -> str:
    return email.utils.formatdate(time.time() - 60, usegmt=True)


SHOULD_RETRY = "openai/anthropic _base_client.py _should_retry"
REDIRECTS = ("stricter: the SDKs pass follow_redirects=True and httpx _client.py _redirect_headers strips only "
             "Authorization across origins; cobalt sends allow_redirects=False")
RULES = [
    *[Rule(f"{status} with {provider}'s key header is not followed", REDIRECTS,
           lambda w, s=status, p=provider: _redirected(w, s, p))
      for status in (307, 302) for provider in ("openai", "anthropic", "azure")],
    *[Rule(f"{status} is retried", f"{SHOULD_RETRY}: 408, 409, 429 and >= 500 retry",
           lambda w, s=status: _retried(w, Say(s), [0.5])) for status in (408, 409, 429, 500, 503)],
    Rule("x-should-retry: true retries a 400", f"{SHOULD_RETRY}: x-should-retry obeyed before the status",
         lambda w: _retried(w, Say(400, {"x-should-retry": "true"}), [0.5])),
    Rule("x-should-retry: false stops a 503", f"{SHOULD_RETRY}: x-should-retry obeyed before the status",
         lambda w: _not_retried(w, Say(503, {"x-should-retry": "false"}), "HTTP 503")),
    Rule("a 400 is not retried", f"{SHOULD_RETRY}: other 4xx raise at once",
         lambda w: _not_retried(w, Say(400), "HTTP 400")),
    Rule("Retry-After: 0 counts as absent", "openai _base_client.py _calculate_retry_timeout: only 0 < Retry-After "
         "is waited, else the backoff (INITIAL_RETRY_DELAY 0.5 s)",
         lambda w: _retried(w, Say(429, {"Retry-After": "0"}), [0.5])),
    Rule("Retry-After in the past counts as absent", "openai _base_client.py _parse_retry_after_header (date) and "
         "_calculate_retry_timeout", lambda w: _retried(w, Say(503, {"Retry-After": past_date()}), [0.5])),
    Rule("Retry-After seconds are waited", "openai _base_client.py _calculate_retry_timeout",
         lambda w: _retried(w, Say(429, {"Retry-After": "3"}), [3.0])),
    Rule("retry-after-ms wins over Retry-After", "openai _base_client.py _parse_retry_after_header: ms first",
         lambda w: _retried(w, Say(429, {"retry-after-ms": "1500", "Retry-After": "9"}), [1.5])),
    Rule("Retry-After beyond the time left says so", "openai _base_client.py _should_retry: no retry past "
         "MAX_RETRY_AFTER_DELAY (120 s); cobalt: past what is left of [judge] retry_max_seconds",
         _retry_after_beyond_budget),
    Rule("max_retries then give up, exponential backoff", "openai/anthropic _base_client.py max_retries, "
         "_calculate_retry_timeout: 0.5 s doubled, at most 8 s", _gives_up),
    Rule("a dropped connection is retried", "openai/anthropic _base_client.py: request_exceptions() retried "
         "(APIConnectionError)", _dropped_connection),
    Rule("an endless body is cut at 10 MB, an eval-error", "stricter: the SDKs read any size; cobalt reads "
         "MAX_RESPONSE_BYTES", _endless_body),
    Rule("a certificate failure is not retried and names SSL_CERT_FILE", "stricter: the SDKs retry it as "
         "APIConnectionError; the hint is httpx _config.py's SSL_CERT_FILE", lambda w: _tls(w, None)),
    Rule("SSL_CERT_FILE with a test CA", "httpx _config.py create_ssl_context: SSL_CERT_FILE",
         lambda w: _tls(w, "SSL_CERT_FILE")),
    Rule("SSL_CERT_DIR with a test CA", "httpx _config.py create_ssl_context: SSL_CERT_DIR",
         lambda w: _tls(w, "SSL_CERT_DIR")),
    Rule("HTTPS_PROXY tunnels with CONNECT", "httpx _utils.py get_environment_proxies: https://",
         lambda w: _tls(w, "SSL_CERT_FILE", proxied=True)),
    Rule("ALL_PROXY proxies every scheme", "httpx _utils.py get_environment_proxies: all://",
         lambda w: _proxied(w, None)),
    Rule("NO_PROXY hosts go direct", "httpx _utils.py get_environment_proxies: NO_PROXY entries",
         lambda w: _proxied(w, "localhost,127.0.0.1")),
    Rule("half-sent headers are one sentence", "stricter: the SDKs show httpx's RemoteProtocolError", _half_headers),
    Rule("a proxy's 407 is the proxy's refusal", "stricter: the SDKs raise the 407 as the API's own error",
         _proxy_refusing),
    Rule("a body cut short is one sentence", "stricter: the SDKs show httpx's RemoteProtocolError",
         lambda w: _cut_short(w, CutBody(), "closed the connection before its answer was complete (received 11 of "
                                            "100 bytes)")),
    Rule("a head that is not HTTP is one sentence", "stricter: the SDKs show httpx's RemoteProtocolError",
         lambda w: _cut_short(w, NotHTTP(), "answered with something that is not HTTP (Bad status line)")),
    Rule("a proxy's 407 to CONNECT is the proxy's refusal", "stricter: httpx raises ProxyError with the status",
         _proxy_refusing_connect),
    Rule("a proxy hanging up on a request is the proxy's", "stricter: the SDKs show httpx's RemoteProtocolError",
         lambda w: _proxy_hanging_up(w, "http")),
    Rule("a proxy hanging up on a CONNECT is the proxy's", "stricter: the SDKs show httpx's RemoteProtocolError",
         lambda w: _proxy_hanging_up(w, "https")),
    Rule("a proxy nothing listens at is named", "stricter: the SDKs show APIConnectionError",
         _proxy_unreachable),
    Rule("user:password is Basic auth in place of the Bearer key", "httpx2 _client.py _build_request_auth: URL "
         "user info becomes BasicAuth, which replaces the SDK's Authorization header",
         lambda w: _user_info(w, "openai")),
    Rule("user:password is Basic auth beside x-api-key", "httpx2 _client.py _build_request_auth (anthropic's key "
         "is its own header)", lambda w: _user_info(w, "anthropic")),
]


@pytest.mark.parametrize("rule", RULES, ids=[rule.name for rule in RULES])
def test_the_judge_keeps_the_sdks_http_rules(rule: Rule, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for variable in PROXY_VARIABLES:
        monkeypatch.delenv(variable, raising=False)
    monkeypatch.setenv("OPENAI_API_KEY", TEST_KEY)
    monkeypatch.setenv("ANTHROPIC_API_KEY", TEST_KEY)
    rule.check(World(monkeypatch, tmp_path))
