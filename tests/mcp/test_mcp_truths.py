"""What the MCP answers say is what they hold, through the SDK's client (in memory, on a real project):
`cobalt_query`'s row_count and note count the rows returned and the note is never clipped (issue 34 item 17);
a prompt missing an argument is an invalid-params error naming it, an unknown tool argument is refused naming
the tool's arguments, no error tells a model to run a CLI command, and `cobalt_generate` refuses a file whose
experiment is not the one asked (item 18)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from fakellm import FakeLLM, Reply, text
from mcp import Client
from mcp.shared.exceptions import MCPError
from mcp.types import INVALID_PARAMS

from cobalt_lib import Dataset, Evaluator, experiment
from cobalt_lib.mcp._server import build_server

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def _stored_run(root: Path) -> None:
    """173 items with 300-character outputs: more rows than a 1,000-token answer holds."""
    experiment("wide", Dataset([{"input": f"q{i}"} for i in range(173)]), lambda ctx: f"{ctx.index} " + "o" * 300,
               evaluators=[Evaluator(name="ok", type="function", fn=lambda ctx: 1.0)]).run()


async def test_query_counts_and_notes_what_it_returned(project: Path) -> None:
    _stored_run(project)
    async with Client(build_server(project)) as client:
        result = await client.call_tool("cobalt_query", {"sql": "SELECT item_index, output FROM outputs",
                                                         "limit": 500, "budget": 1000})
    assert not result.is_error, result.content
    data = result.structured_content or {}
    rows = data["rows"]
    assert 0 < len(rows) < 173 and data["row_count"] == len(rows) and data["truncated"] is True
    note = data["note"]
    assert note == (f"{len(rows)} of the 173 rows the query returned fit the response budget and are shown "
                    "(select fewer or shorter columns, raise budget, or aggregate)")
    summary = result.content[0].text  # type: ignore[union-attr]
    assert summary.startswith(f"{len(rows)} rows (more rows matched; see the note); columns: item_index, output")


async def test_a_prompt_without_its_argument_is_invalid_params_naming_it(project: Path) -> None:
    async with Client(build_server(project)) as client:
        with pytest.raises(MCPError) as missing:
            await client.get_prompt("improve-agent", {"experiment": "qa"})
        with pytest.raises(MCPError) as unknown:
            await client.get_prompt("regression-check", {"experimnet": "qa"})
        fine = await client.get_prompt("improve-agent", {"experiment": "qa", "threshold": "0.8"})
    assert missing.value.code == INVALID_PARAMS
    assert missing.value.message == ("Prompt 'improve-agent' needs the argument 'threshold' (experiment: The "
                                     "experiment to improve.; threshold: The mean score every evaluator should "
                                     "reach, e.g. 0.8.).")
    assert unknown.value.code == INVALID_PARAMS and "takes no argument 'experimnet'" in unknown.value.message
    assert "cobalt_run(filter='qa')" in fine.messages[0].content.text  # type: ignore[union-attr]


async def test_unknown_tool_arguments_are_refused_naming_the_tools_arguments(project: Path) -> None:
    _stored_run(project)
    async with Client(build_server(project)) as client:
        refused = await client.call_tool("cobalt_query", {"sql": "SELECT 1 AS one", "limt": 5})
        fine = await client.call_tool("cobalt_query", {"sql": "SELECT 1 AS one", "limit": 5})
    assert refused.is_error
    assert refused.content[0].text == ("cobalt_query: unknown argument 'limt'; cobalt_query takes sql, limit, "  # type: ignore[union-attr]
                                       "budget.")
    assert not fine.is_error and (fine.structured_content or {})["rows"] == [{"one": 1}]


async def test_the_variants_error_points_at_a_tool_not_a_command(project: Path) -> None:
    _stored_run(project)
    async with Client(build_server(project)) as client:
        missing = await client.call_tool("cobalt_variants", {"group": "g-nothing"})
    message = missing.content[0].text  # type: ignore[union-attr]
    assert missing.is_error and "No run group has id 'g-nothing'" in message
    assert "cobalt_results() lists the stored runs with their group_id" in message and "`cobalt" not in message


def _answers_with(name: str) -> Any:
    def respond(kind: str, body: dict[str, Any]) -> Reply:
        return text(f'''```python
from cobalt_lib import Dataset, Evaluator, experiment
from agent import answer

experiment({name!r}, Dataset([{{"input": "Capital of France?", "expected_output": "Paris"}}]),
           lambda ctx: answer(ctx.input), evaluators=[Evaluator(name="exact", type="exact-match")])
```''')
    return respond


async def test_generate_refuses_a_file_whose_experiment_is_not_the_one_asked(judged_project: Path,
                                                                           llm: FakeLLM) -> None:
    (judged_project / "agent.py").write_text('def answer(q):\n    return "Paris"\n', encoding="utf-8")
    llm.respond = _answers_with("something-else")
    async with Client(build_server(judged_project)) as client:
        wrong = await client.call_tool("cobalt_generate", {"agent_file": "agent.py"})
        llm.respond = _answers_with("agent")
        right = await client.call_tool("cobalt_generate", {"agent_file": "agent.py"})
    message = wrong.content[0].text  # type: ignore[union-attr]
    assert wrong.is_error and "agent.cobalt.py declares experiment 'something-else', not 'agent' as asked" in message
    assert "Nothing was written" in message and llm.count() >= 2
    assert not right.is_error and (right.structured_content or {})["experiments"][0]["name"] == "agent"
    assert (judged_project / "experiments" / "agent.cobalt.py").is_file()
