"""pydantic-ai's own instrumentation, as it emits it (a real pydantic-ai agent on a FunctionModel, spans
collected by cobalt's processor during a run): its output-function span (`final_result`, the model's answer
given through a tool) is not a tool call; a call deferred for approval (`ApprovalRequired`) was not made;
the arguments of instrumentation version 2 (`tool_arguments`) are read as those of version 5
(`gen_ai.tool.call.arguments`). Issue 34 item 14."""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import pytest
from pydantic_ai import Agent, ApprovalRequired, DeferredToolRequests, RunContext, ToolOutput
from pydantic_ai.messages import ModelMessage, ModelResponse, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.models.instrumented import InstrumentationSettings

from cobalt_lib import Dataset, Evaluator, experiment


def _agent(version: int) -> Any:
    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        """First the tools (and, for a question about deleting, the call that needs approval), then the answer
        through the output tool."""
        question = str(messages[0].parts[-1].content)  # type: ignore[union-attr]
        if not any(m.kind == "response" for m in messages):
            calls = [ToolCallPart("search", {"q": "Paris"})]
            return ModelResponse(parts=calls + ([ToolCallPart("delete_all", {})] if "delete" in question else []))
        return ModelResponse(parts=[ToolCallPart(info.output_tools[0].name, {"city": "Paris"})])

    def answer(city: str) -> str:
        return f"It is {city}"

    agent = Agent(FunctionModel(model), output_type=[ToolOutput(answer), DeferredToolRequests])
    with warnings.catch_warnings():  # version 2 is deprecated, and still what some users' settings say
        warnings.simplefilter("ignore")
        agent.instrument = InstrumentationSettings(version=version)

    @agent.tool_plain
    def search(q: str) -> str:
        return "found"

    @agent.tool
    def delete_all(ctx: RunContext[None]) -> str:
        if not ctx.tool_call_approved:
            raise ApprovalRequired
        return "deleted"

    return agent


TOOLS = {"search": {"type": "object", "required": ["q"], "properties": {"q": {"type": "string"}}},
         "delete_all": {"type": "object"}}


@pytest.mark.parametrize("version", [2, 5])
def test_pydantic_ai_spans_count_only_the_tool_calls_made(project: Path, version: int) -> None:
    agent = _agent(version)

    async def run(ctx: Any) -> str:
        result = await agent.run(ctx.input)
        return str(result.output)

    expected = [{"name": "search", "arguments": {"q": "Paris"}}]
    data = Dataset([{"id": "answer", "input": "where is it?", "expected_tool_calls": expected},
                    {"id": "approval", "input": "delete it all", "expected_tool_calls": expected}])
    report = experiment(f"pydantic-ai-v{version}", data, run, evaluators=[
        Evaluator(name="valid", type="tool_calls_valid", source="trace", schema=TOOLS),
        Evaluator(name="calls", type="max_tool_calls", n=1, source="trace"),
        Evaluator(name="match", type="tool_call_match", source="trace", arguments="exact", order="lcs"),
    ]).run()
    answered, deferred = report.items
    assert answered.output == "It is Paris" and "DeferredToolRequests" in str(deferred.output)
    for item in (answered, deferred):
        scores = {name: (e.score, e.reason) for name, e in item.evaluations.items()}
        assert scores == {"valid": (1.0, "all 1 tool calls valid"), "calls": (1.0, "1 tool call, within 1"),
                          "match": (1.0, "longest common sequence 1 of 1 expected and 1 made (precision 1.00, "
                                         "recall 1.00): expected search, made search")}, item.index
