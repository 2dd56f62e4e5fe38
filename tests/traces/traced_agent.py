"""An agent instrumented by hand with the OpenTelemetry API, as the GenAI semantic conventions say
(what the OpenAI instrumentation, pydantic-ai or LangChain emit): an `invoke_agent` span holding a `chat`
span, an `execute_tool` span and a second `chat` span. It calls the loopback LLM server for real.

Each item's question is `weather in CITY`: the model is asked, the agent runs `get_weather(city=CITY)`,
and the model is asked again with the tool's result; the answer is the second reply's text.
"""

from __future__ import annotations

import json
from typing import Any

import httpx
from opentelemetry import trace

tracer = trace.get_tracer("traced-agent")
MODEL = "gpt-4o-mini"


def city_of(ctx: Any) -> str:
    return str(ctx.item["input"]).removeprefix("weather in ")


def _messages(question: str, tool_result: str | None) -> list[dict[str, Any]]:
    messages = [{"role": "user", "content": question}]
    if tool_result is not None:
        messages.append({"role": "tool", "content": tool_result})
    return messages


def _chat_span_attributes(question: str, tool_result: str | None) -> dict[str, Any]:
    parts = [{"role": "user", "parts": [{"type": "text", "content": question}]}]
    if tool_result is not None:
        parts.append({"role": "tool", "parts": [{"type": "tool_call_response", "id": "call_1",
                                                  "response": tool_result}]})
    return {"gen_ai.operation.name": "chat", "gen_ai.provider.name": "openai", "gen_ai.request.model": MODEL,
            "gen_ai.input.messages": json.dumps(parts)}


def _record_answer(span: Any, answer: dict[str, Any], city: str, first: bool) -> str:
    text = answer["choices"][0]["message"]["content"]
    usage = answer["usage"]
    out: list[dict[str, Any]] = [{"type": "text", "content": text}]
    if first:
        out.append({"type": "tool_call", "id": "call_1", "name": "get_weather", "arguments": {"city": city}})
    span.set_attributes({"gen_ai.response.model": answer["model"], "gen_ai.response.id": answer["id"],
                         "gen_ai.usage.input_tokens": usage["prompt_tokens"],
                         "gen_ai.usage.output_tokens": usage["completion_tokens"],
                         "gen_ai.output.messages": json.dumps([{"role": "assistant", "parts": out}])})
    return str(text)


def get_weather(city: str) -> str:
    return json.dumps({"city": city, "temperature": 20 + len(city)})


def _tool_span(city: str) -> str:
    with tracer.start_as_current_span("execute_tool get_weather") as span:
        span.set_attributes({"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "get_weather",
                             "gen_ai.tool.call.id": "call_1",
                             "gen_ai.tool.call.arguments": json.dumps({"city": city})})
        result = get_weather(city)
        span.set_attribute("gen_ai.tool.call.result", result)
        return result


def sync_agent(base_url: str) -> Any:
    def agent(ctx: Any) -> str:
        city = city_of(ctx)
        question = str(ctx.item["input"])
        with tracer.start_as_current_span("invoke_agent weather") as root, httpx.Client(base_url=base_url) as http:
            root.set_attributes({"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "weather"})
            result: str | None = None
            answer = ""
            for first in (True, False):
                with tracer.start_as_current_span(f"chat {MODEL}") as span:
                    span.set_attributes(_chat_span_attributes(question, result))
                    reply = http.post("/chat/completions", json={"model": MODEL,
                                                                 "messages": _messages(question, result)})
                    answer = _record_answer(span, reply.json(), city, first)
                if first:
                    result = _tool_span(city)
            return answer
    return agent


def async_agent(base_url: str) -> Any:
    async def agent(ctx: Any) -> str:
        city = city_of(ctx)
        question = str(ctx.item["input"])
        with tracer.start_as_current_span("invoke_agent weather") as root:
            root.set_attributes({"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "weather"})
            async with httpx.AsyncClient(base_url=base_url) as http:
                result: str | None = None
                answer = ""
                for first in (True, False):
                    with tracer.start_as_current_span(f"chat {MODEL}") as span:
                        span.set_attributes(_chat_span_attributes(question, result))
                        reply = await http.post("/chat/completions", json={"model": MODEL,
                                                                           "messages": _messages(question, result)})
                        answer = _record_answer(span, reply.json(), city, first)
                    if first:
                        result = _tool_span(city)
            return answer
    return agent


def per_city_replies(kind: str, body: dict[str, Any]) -> Any:
    """The loopback server's answers: each names the city it was asked about, with the city's length as its
    prompt tokens, so a span that landed on another item shows it."""
    from fakellm import Reply

    question = str(body["messages"][0]["content"])
    city = question.removeprefix("weather in ")
    second = len(body["messages"]) > 1
    return Reply(text=f"{'final' if second else 'checking'} {city}", prompt_tokens=len(city) * (2 if second else 1),
                 completion_tokens=3, delay=0.02)
