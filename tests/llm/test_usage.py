"""track_usage(): the agent's own SDK client, its tokens and cost recorded into each item's metadata,
through the real openai and anthropic SDKs against the loopback server."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anthropic
import openai
import pytest
from conftest import TEST_KEY
from fakellm import FakeLLM, Reply

from cobalt_lib import Dataset, experiment, load_config, track_usage

GPT_MINI = (0.15, 0.60)  # list prices per million tokens, input and output
HAIKU = (1.0, 5.0)


def _cost(prices: tuple[float, float], tokens_in: int, tokens_out: int) -> float:
    return (tokens_in * prices[0] + tokens_out * prices[1]) / 1e6


def _run(agent: Any, n: int = 2) -> Any:
    exp = experiment("usage", Dataset([{"input": f"q{i}"} for i in range(n)]), agent, evaluators=[], concurrency=1)
    return exp.run(config=load_config())


def test_an_async_openai_client_records_every_call_of_the_item(project: Path, llm: FakeLLM) -> None:
    client = track_usage(openai.AsyncOpenAI(api_key=TEST_KEY, base_url=llm.openai_url, max_retries=0))

    async def agent(ctx: Any) -> str:
        first = await client.chat.completions.create(model="gpt-4o-mini", messages=[{"role": "user", "content": "a"}])
        await client.chat.completions.create(model="gpt-4o-mini", messages=[{"role": "user", "content": "b"}])
        return str(first.choices[0].message.content)

    llm.script(Reply(text="x", prompt_tokens=100, completion_tokens=7))
    report = _run(agent)
    first, second = report.items
    assert first.metadata == {"llm_calls": 2, "input_tokens": 120, "output_tokens": 17, "model": "gpt-4o-mini",
                              "cost_usd": pytest.approx(_cost(GPT_MINI, 120, 17))}
    assert (first.tokens, first.cost_usd) == (137, pytest.approx(_cost(GPT_MINI, 120, 17)))
    assert second.metadata["input_tokens"] == 40 and second.metadata["llm_calls"] == 2  # its own calls only
    assert report.summary.agent_cost == pytest.approx(_cost(GPT_MINI, 160, 37))
    assert report.summary.agent_tokens == 197


def test_a_sync_client_in_a_sync_agent_and_embeddings(project: Path, llm: FakeLLM) -> None:
    client = track_usage(openai.OpenAI(api_key=TEST_KEY, base_url=llm.openai_url, max_retries=0))

    def agent(ctx: Any) -> str:
        client.embeddings.create(model="text-embedding-3-small", input="three words here")
        answer = client.chat.completions.create(model="gpt-4o-mini", messages=[{"role": "user", "content": "a"}])
        return str(answer.choices[0].message.content)

    item = _run(agent, n=1).items[0]
    assert (item.metadata["llm_calls"], item.metadata["input_tokens"], item.metadata["output_tokens"]) == (2, 23, 10)
    assert "model" not in item.metadata  # two models answered
    assert item.cost_usd == pytest.approx(_cost(GPT_MINI, 20, 10) + 3 * 0.02 / 1e6)


def test_an_anthropic_client_and_the_agents_own_metadata_wins(project: Path, llm: FakeLLM) -> None:
    client = track_usage(anthropic.AsyncAnthropic(api_key=TEST_KEY, base_url=llm.anthropic_url, max_retries=0))

    async def agent(ctx: Any) -> dict[str, Any]:
        message = await client.messages.create(model="claude-haiku-4-5", max_tokens=100,
                                               messages=[{"role": "user", "content": "hi"}])
        own = {"model": "my-label"} if ctx.index == 1 else {}
        return {"output": message.content[0].text, "metadata": own}  # type: ignore[union-attr]

    first, second = _run(agent).items
    assert first.metadata == {"llm_calls": 1, "input_tokens": 20, "output_tokens": 10, "model": "claude-haiku-4-5",
                              "cost_usd": pytest.approx(_cost(HAIKU, 20, 10))}
    assert second.metadata["model"] == "my-label" and second.cost_usd == pytest.approx(_cost(HAIKU, 20, 10))
    assert llm.count("messages") == 2


def test_calls_outside_an_agent_call_and_a_second_wrap_change_nothing(llm: FakeLLM) -> None:
    client = openai.OpenAI(api_key=TEST_KEY, base_url=llm.openai_url, max_retries=0)
    assert track_usage(track_usage(client)) is client
    answer = client.chat.completions.create(model="gpt-4o-mini", messages=[{"role": "user", "content": "a"}])
    assert answer.usage is not None and answer.usage.prompt_tokens == 20  # the SDK's answer, untouched
    with pytest.raises(TypeError, match="openai or anthropic SDK client, not dict"):
        track_usage({})
