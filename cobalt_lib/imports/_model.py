"""`Model`: the agent of an imported experiment, calling the model the source named through cobalt's
provider client (OpenAI, Anthropic, OpenRouter or any OpenAI-compatible `base_url`)."""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..llm import Endpoint


@dataclass(frozen=True)
class Model:
    """A provider and model, with the sampling the source set. The key and base URL come from the
    environment and `[judge]` in configuration as a judge's do (`OPENAI_API_KEY`, `OPENAI_BASE_URL`, ...)."""

    provider: str
    model: str
    base_url: str | None = None
    temperature: float | None = None
    max_tokens: int | None = None

    async def answer(self, prompt: str | list[dict[str, str]], item: Mapping[str, Any]) -> dict[str, Any]:
        """Fill `prompt`'s `{{field}}`s from `item`, send it, and return the answer with its token usage."""
        from ..evaluators._template import render

        if isinstance(prompt, str):
            return await self.send(render(prompt, item, where="the prompt"))
        return await self.send([{"role": m["role"], "content": render(m["content"], item, where=f"the {m['role']} "
                                                                      "message")} for m in prompt])

    async def send(self, messages: str | list[dict[str, str]]) -> dict[str, Any]:
        """Send `messages` (a text: one user message) as they are, no template filled."""
        from ..llm import agent_chat

        chat = [{"role": "user", "content": messages}] if isinstance(messages, str) else list(messages)
        completion = await agent_chat(self._endpoint(), chat)
        return {"output": completion.text, "metadata": {"model": completion.model,
                                                        "input_tokens": completion.input_tokens,
                                                        "output_tokens": completion.output_tokens}}

    def _endpoint(self) -> Endpoint:
        return _resolve(self)


@functools.lru_cache(maxsize=64)
def _resolve(model: Model) -> Endpoint:
    """The endpoint, resolved once per model and process (configuration is read from the project)."""
    from ..config import load_config
    from ..llm import resolve_judge

    endpoint = resolve_judge(load_config().judge, provider=model.provider, model=model.model,
                             base_url=model.base_url, who=f"the agent's model {model.provider}/{model.model}")
    changes: dict[str, Any] = {"temperature": model.temperature, "send_temperature": model.temperature is not None}
    if model.max_tokens is not None:
        changes["max_tokens"] = model.max_tokens
    return dataclasses.replace(endpoint, **changes)
