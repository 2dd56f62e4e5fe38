"""Fixtures for the MCP tests (import them into a test module): one `cobalt mcp` subprocess over stdio,
shared by a module's tests, in a temporary project.

The project holds offline experiments (`qa`: exact-match and a function evaluator; `judged`: an
LLM judge on the loopback server) and an agent file for `cobalt_generate`. Its agent prints to
stdout on purpose: nothing but the protocol may reach the client.
"""

from __future__ import annotations

import os
import sys
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from conftest import TEST_KEY, write_judge_config
from fakellm import FakeLLM
from mcp import Client, StdioServerParameters

from cobalt_lib import Store

COBALT = str(Path(sys.executable).parent / "cobalt")

#: `qa`: 4 items; the agent answers item i with ANSWERS[i] (the test rewrites the file between runs).
QA = '''
from cobalt_lib import Dataset, Evaluator, experiment, threshold

print("qa.cobalt.py imported")  # stdout on purpose: the server must keep it off the protocol stream
ANSWERS = {ANSWERS}
data = Dataset([{{"input": f"q{{i}}", "expected_output": f"a{{i}}"}} for i in range(4)])

@experiment("qa", data, tags=["smoke"], evaluators=[Evaluator(name="exact", type="exact-match"),
            Evaluator(name="short", type="function", fn=lambda ctx: 1.0 if len(str(ctx.output)) < 3 else 0.0)],
            assertions=[threshold("exact", 0.5)])
def agent(ctx):
    print("agent says hello on stdout")
    return ANSWERS[ctx.index]
'''

JUDGED = '''
from cobalt_lib import Dataset, Evaluator, experiment
data = Dataset([{"input": "Capital of France?", "expected_output": "Paris"}])
experiment("judged", data, lambda ctx: "Paris", evaluators=[
    Evaluator(name="correct", prompt="Q: {{input}} Expected: {{expected_output}} A: {{output}} Score it."),
    Evaluator(name="exact", type="exact-match")])
'''

AGENT = '''
def answer(question: str) -> str:
    """A toy agent: the capital of a country, by a lookup table."""
    return {"France": "Paris", "Japan": "Tokyo"}.get(question.rstrip("?").split()[-1], "I do not know")
'''


def token_of(root: Path) -> str:
    """The token of `cobalt mcp --http` in `root`, read from its file as the user's own clients read it."""
    return (root / ".cobalt" / "mcp-token").read_text(encoding="ascii").strip()


def http_client(url: str, root: Path, **options: Any) -> Client:
    """The SDK's client over streamable HTTP, sending the server's token (`Authorization: Bearer ...`)."""
    import httpx2
    from mcp.client.streamable_http import streamable_http_client

    auth = httpx2.AsyncClient(headers={"Authorization": f"Bearer {token_of(root)}"}, timeout=300)
    return Client(streamable_http_client(url, http_client=auth), **options)


def qa_source(answers: list[str]) -> str:
    return QA.format(ANSWERS=repr(dict(enumerate(answers))))


@dataclass
class Served:
    client: Client
    root: Path

    @property
    def store(self) -> Store:
        return Store(self.root / ".cobalt" / "cobalt.duckdb")


def make_project(root: Path, llm: FakeLLM) -> Path:
    (root / "experiments").mkdir(parents=True)
    (root / "experiments" / "qa.cobalt.py").write_text(qa_source(["a0", "a1", "a2", "wrong"]))
    (root / "experiments" / "judged.cobalt.py").write_text(JUDGED)
    (root / "agent.py").write_text(AGENT)
    write_judge_config(root, llm)
    return root


def server_env() -> dict[str, str]:
    """What the server subprocess gets on top of the SDK's default environment: the fake key, tests' hooks."""
    return {"OPENAI_API_KEY": TEST_KEY, "COBALT_TESTING": "1", "PATH": os.environ.get("PATH", "")}


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
async def served(tmp_path_factory: pytest.TempPathFactory, _llm_server: FakeLLM) -> AsyncIterator[Served]:
    """`cobalt mcp` over stdio in a fresh project, through the SDK's client."""
    root = make_project(tmp_path_factory.mktemp("mcp") / "proj", _llm_server)
    params = StdioServerParameters(command=COBALT, args=["mcp"], cwd=str(root), env=server_env())
    async with Client(params, read_timeout_seconds=120) as client:
        yield Served(client, root)


#: `slow`: item 3 reads the named pipe `go` in the project root, which blocks until the test writes to it,
#: so the test decides when the run ends (one item at a time: items 4-11 wait behind it).
SLOW = '''
from pathlib import Path
from cobalt_lib import Dataset, Evaluator, experiment

GO = Path(__file__).resolve().parents[1] / "go"

def agent(ctx):
    if ctx.index == 3:
        GO.read_text()
    return ctx.item["expected_output"]

experiment("slow", Dataset([{"input": f"q{i}", "expected_output": f"a{i}"} for i in range(12)]), agent,
           evaluators=[Evaluator(name="exact", type="exact-match")], concurrency=1)
'''
