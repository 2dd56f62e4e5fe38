"""The judge's own HTTP client against the loopback server: the headers each provider gets, the wire
formats, and errors that say what to do without ever holding the key."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from conftest import TEST_KEY
from fakellm import FakeLLM, Reply, answer, error

from cobalt_lib import MissingApiKeyError
from cobalt_lib.config._config import JudgeConfig
from cobalt_lib.llm import Endpoint, resolve_judge
from cobalt_lib.llm._wire import ANTHROPIC_VERSION, Clients, HTTPStatusError, request_headers

AUTH_HEADERS = {"authorization", "api-key", "x-api-key"}


def _endpoint(provider: str, base_url: str, **options: Any) -> Endpoint:
    config = JudgeConfig(provider=provider, base_url=base_url, max_retries=1, retry_max_seconds=5, timeout=5,
                         **options)  # type: ignore[arg-type]
    return resolve_judge(config)


def _complete(endpoint: Endpoint) -> Any:
    async def call() -> Any:
        clients = Clients()
        try:
            return await clients.complete(endpoint, "be fair", [{"role": "user", "content": "rate this"}])
        finally:
            await clients.aclose()

    return asyncio.run(call())


def _auth(llm: FakeLLM, index: int = 0) -> dict[str, str]:
    headers = llm.requests[index]["headers"]
    return {name: value for name, value in headers.items() if name in AUTH_HEADERS or name.startswith("openai-")}


def test_openai_gets_a_bearer_token_and_json(llm: FakeLLM, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", TEST_KEY)
    monkeypatch.delenv("OPENAI_ORG_ID", raising=False)
    monkeypatch.delenv("OPENAI_PROJECT_ID", raising=False)
    completion = _complete(_endpoint("openai", llm.openai_url, model="gpt-4o-mini"))
    assert (completion.text, completion.input_tokens, completion.output_tokens) == (answer().text, 20, 10)
    assert _auth(llm) == {"authorization": f"Bearer {TEST_KEY}"}
    request = llm.requests[0]
    assert request["headers"]["content-type"] == "application/json"
    assert request["body"]["messages"] == [{"role": "system", "content": "be fair"},
                                           {"role": "user", "content": "rate this"}]
    assert (request["body"]["model"], request["body"]["max_tokens"], request["body"]["temperature"]) == (
        "gpt-4o-mini", 512, 0.0)


def test_openai_organization_and_project_variables_become_headers(llm: FakeLLM,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", TEST_KEY)
    monkeypatch.setenv("OPENAI_ORG_ID", "org-123")
    monkeypatch.setenv("OPENAI_PROJECT_ID", "proj-456")
    _complete(_endpoint("openai", llm.openai_url))
    assert _auth(llm) == {"authorization": f"Bearer {TEST_KEY}", "openai-organization": "org-123",
                          "openai-project": "proj-456"}


def test_anthropic_gets_x_api_key_and_its_version_header(llm: FakeLLM, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", TEST_KEY)
    completion = _complete(_endpoint("anthropic", llm.anthropic_url, model="claude-haiku-4-5"))
    assert completion.text == answer().text and completion.model == "claude-haiku-4-5"
    assert _auth(llm) == {"x-api-key": TEST_KEY}
    assert llm.requests[0]["headers"]["anthropic-version"] == ANTHROPIC_VERSION == "2023-06-01"
    body = llm.requests[0]["body"]
    assert body["system"] == "be fair" and body["messages"] == [{"role": "user", "content": "rate this"}]


def test_openrouter_gets_its_own_key_as_a_bearer_token(llm: FakeLLM, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-not-this-one-0000")
    monkeypatch.setenv("OPENROUTER_API_KEY", "sk-or-this-one-1111")
    _complete(_endpoint("openrouter", llm.openai_url, model="openai/gpt-4o-mini"))
    assert _auth(llm) == {"authorization": "Bearer sk-or-this-one-1111"}


def test_azure_openai_gets_the_key_in_an_api_key_header(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-openai-0000000")
    monkeypatch.setenv("AZURE_OPENAI_API_KEY", "azure-key-1111111")
    endpoint = _endpoint("openai", "https://my-resource.openai.azure.com/openai/v1")
    assert endpoint.api_key == "azure-key-1111111"  # the Azure variable wins for an Azure resource
    headers = request_headers(endpoint)
    assert headers["api-key"] == "azure-key-1111111" and "Authorization" not in headers
    monkeypatch.delenv("AZURE_OPENAI_API_KEY")
    assert _endpoint("openai", "https://x.cognitiveservices.azure.com/openai/v1").api_key == "sk-openai-0000000"
    monkeypatch.delenv("OPENAI_API_KEY")
    with pytest.raises(MissingApiKeyError, match="AZURE_OPENAI_API_KEY or OPENAI_API_KEY is not set"):
        _endpoint("openai", "https://my-resource.openai.azure.com/openai/v1")


def test_embeddings_keep_the_order_and_count_tokens(llm: FakeLLM, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", TEST_KEY)
    endpoint = _endpoint("openai", llm.openai_url, model="text-embedding-3-small")

    async def call() -> tuple[list[list[float]], int]:
        clients = Clients()
        try:
            return await clients.embed(endpoint, ["one two", "three"])
        finally:
            await clients.aclose()

    vectors, tokens = asyncio.run(call())
    assert len(vectors) == 2 and len(vectors[0]) == 64 and tokens == 3
    assert _auth(llm) == {"authorization": f"Bearer {TEST_KEY}"}
    assert llm.requests[0]["body"] == {"model": "text-embedding-3-small", "input": ["one two", "three"]}


def test_errors_are_typed_and_never_hold_the_key(llm: FakeLLM, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", TEST_KEY)
    echo = {"error": {"message": f"no such model (you sent Bearer {TEST_KEY})"}}
    llm.script(Reply(status=404, body=echo), error(503, retry_after=0), error(503, retry_after=0))
    endpoint = _endpoint("openai", llm.openai_url)
    with pytest.raises(HTTPStatusError) as not_found:
        _complete(endpoint)
    assert not_found.value.status == 404 and not not_found.value.retryable
    assert "HTTP 404: no such model (you sent Bearer ***)" in str(not_found.value)
    assert "check the model name 'gpt-4o-mini'" in str(not_found.value) and TEST_KEY not in str(not_found.value)
    with pytest.raises(HTTPStatusError) as unavailable:
        _complete(endpoint)
    assert unavailable.value.status == 503 and "gave up after 2 attempts" in str(unavailable.value)
    assert llm.count("chat") == 3


def test_the_proxy_variables_are_honoured(llm: FakeLLM, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", TEST_KEY)
    monkeypatch.setenv("HTTP_PROXY", f"http://127.0.0.1:{llm.port}")  # the loopback server plays the proxy
    monkeypatch.delenv("NO_PROXY", raising=False)
    monkeypatch.delenv("no_proxy", raising=False)
    completion = _complete(_endpoint("openai", "http://judge.example.invalid/v1", model="gpt-4o-mini"))
    assert completion.text == answer().text  # judge.example.invalid cannot resolve: the proxy answered
    assert llm.requests[0]["headers"]["host"] == "judge.example.invalid"
