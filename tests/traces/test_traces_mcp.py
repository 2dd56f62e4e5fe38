"""The MCP server's `cobalt_results` with trace=true, through the SDK's client over stdio: an item's trace in
the compact shape, within the response budget."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
from mcp import Client, StdioServerParameters
from test_traces_show import COBALT, EXPERIMENT, HERE
from traced_agent import per_city_replies

pytestmark = [pytest.mark.slow, pytest.mark.anyio]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def test_results_carry_an_items_trace_on_request(project: Path, llm: Any) -> None:
    llm.respond = per_city_replies
    (project / "experiments").mkdir()
    (project / "experiments" / "weather.cobalt.py").write_text(EXPERIMENT.format(here=str(HERE), url=llm.openai_url))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "OTEL_"))}
    ran = subprocess.run([COBALT, "run", "--no-dagster"], cwd=project, env=env, capture_output=True, text=True,
                         timeout=120, stdin=subprocess.DEVNULL)
    assert ran.returncode == 0, ran.stderr
    params = StdioServerParameters(command=COBALT, args=["mcp"], cwd=str(project), env=env)
    async with Client(params, read_timeout_seconds=120) as client:
        plain = await client.call_tool("cobalt_results", {"run_id": "latest", "item": 0})
        assert "traces" not in plain.structured_content["run"]
        traced = await client.call_tool("cobalt_results", {"run_id": "latest", "item": 0, "trace": True})
        assert not traced.is_error
        trace = traced.structured_content["run"]["traces"]["0:0"]
        assert [(s["depth"], s["name"], s["kind"]) for s in trace] == [
            (0, "invoke_agent weather", "agent"), (1, "chat gpt-4o-mini", "model"),
            (1, "execute_tool get_weather", "tool"), (1, "chat gpt-4o-mini", "model")]
        assert trace[0]["start_ms"] == 0
        assert {k: trace[1][k] for k in ("model", "input_tokens", "output_tokens", "messages")} == {
            "model": "gpt-4o-mini", "input_tokens": 5, "output_tokens": 3,
            "messages": ["user: weather in Paris",
                         'assistant: checking Paris [tool call get_weather({"city": "Paris"})]']}
        assert {k: trace[2][k] for k in ("tool", "arguments", "result")} == {
            "tool": "get_weather", "arguments": {"city": "Paris"}, "result": {"city": "Paris", "temperature": 25}}
        text = traced.content[1].text
        assert json.loads(text) == traced.structured_content
        # every item, traces within a small budget: what does not fit is cut, and the answer says so
        small = await client.call_tool("cobalt_results", {"run_id": "latest", "trace": True, "budget": 1000})
        assert not small.is_error
        assert len(small.content[0].text) + len(small.content[1].text) <= 1000 * 4
        assert set(small.structured_content["run"]["traces"]) <= {"0:0", "1:0"}
