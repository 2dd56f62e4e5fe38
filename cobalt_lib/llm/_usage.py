"""The agent's own token usage: `track_usage(client)` instruments a user's openai or anthropic SDK
client so that every call made during an agent call adds its tokens to that item's metadata."""

from __future__ import annotations

import functools
import inspect
from collections.abc import Awaitable, Callable, Mapping
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, TypeVar

from ._pricing import cost_usd

C = TypeVar("C")

#: The methods that answer with a `usage`, per SDK, as attribute paths on the client.
TRACKED_METHODS = {
    "openai": ("chat.completions.create", "chat.completions.parse", "responses.create", "responses.parse",
               "completions.create", "embeddings.create"),
    "anthropic": ("messages.create",),
}
_MARK = "_cobalt_usage_tracked"


@dataclass
class UsageMeter:
    """What one agent call spent through tracked clients: tokens per model, and the number of calls."""

    calls: int = 0
    tokens: dict[str, list[int]] = field(default_factory=dict)

    def add(self, model: str, input_tokens: int, output_tokens: int) -> None:
        self.calls += 1
        tally = self.tokens.setdefault(model, [0, 0])
        tally[0] += input_tokens
        tally[1] += output_tokens

    def metadata(self, prices: Mapping[str, tuple[float, float]]) -> dict[str, Any]:
        """The item metadata these calls amount to: `llm_calls`, `input_tokens`, `output_tokens`,
        `model` (when one model answered them all) and `cost_usd` (when every model has a price)."""
        found: dict[str, Any] = {"llm_calls": self.calls,
                                 "input_tokens": sum(t[0] for t in self.tokens.values()),
                                 "output_tokens": sum(t[1] for t in self.tokens.values())}
        if len(self.tokens) == 1:
            found["model"] = next(iter(self.tokens))
        costs = [cost_usd(model, t[0], t[1], prices) for model, t in self.tokens.items()]
        if costs and all(c is not None for c in costs):
            found["cost_usd"] = sum(c for c in costs if c is not None)
        return found


#: The meter of the agent call running in this context (an asyncio task or a worker thread).
current_meter: ContextVar[UsageMeter | None] = ContextVar("cobalt_usage_meter", default=None)
#: Whether any client was ever tracked: until then the run spends nothing on meters.
tracking = [False]


def track_usage(client: C) -> C:
    """Record the token usage and cost of every call `client` makes inside an agent call into that
    item's metadata (`input_tokens`, `output_tokens`, `llm_calls`, `model`, `cost_usd`), where the
    agent does not set them itself. `client` is an `openai.OpenAI`/`AsyncOpenAI` (also Azure) or an
    `anthropic.Anthropic`/`AsyncAnthropic` client; it is instrumented in place and returned.

        client = track_usage(AsyncOpenAI())
    """
    sdk = type(client).__module__.split(".", 1)[0]
    if sdk not in TRACKED_METHODS:
        raise TypeError(f"track_usage() takes an openai or anthropic SDK client, not {type(client).__qualname__}")
    if getattr(client, _MARK, False):
        return client
    for path in TRACKED_METHODS[sdk]:
        *parents, name = path.split(".")
        owner: Any = client
        try:
            for part in parents:
                owner = getattr(owner, part)
            method = getattr(owner, name)
        except AttributeError:  # an older SDK without this API
            continue
        setattr(owner, name, _tracked(method))
    setattr(client, _MARK, True)
    tracking[0] = True
    return client


def _tracked(method: Callable[..., Any]) -> Callable[..., Any]:
    # The async SDK methods are plain functions returning a coroutine (behind the SDKs' own decorators):
    # what they return is awaited here, in the caller's task, where the meter is.
    @functools.wraps(method)
    def tracked(*args: Any, **kwargs: Any) -> Any:
        response = method(*args, **kwargs)
        if inspect.isawaitable(response):
            return _recorded(response, kwargs.get("model"))
        record_response(response, kwargs.get("model"))
        return response

    return tracked


async def _recorded(awaitable: Awaitable[Any], requested_model: Any) -> Any:
    response = await awaitable
    record_response(response, requested_model)
    return response


def record_response(response: Any, requested_model: Any) -> None:
    """Add a response's usage to the current agent call's meter (none outside an agent call)."""
    meter = current_meter.get()
    usage = getattr(response, "usage", None)
    if meter is None or usage is None:  # outside a run, or a stream (whose usage comes with its last event)
        return
    input_tokens = _count(usage, "prompt_tokens", "input_tokens")
    output_tokens = _count(usage, "completion_tokens", "output_tokens")
    # Anthropic counts prompt-cache reads and writes apart from input_tokens.
    input_tokens += _count(usage, "cache_creation_input_tokens") + _count(usage, "cache_read_input_tokens")
    model = getattr(response, "model", None) or requested_model or "unknown"
    meter.add(str(model), input_tokens, output_tokens)


def _count(usage: Any, *names: str) -> int:
    for name in names:
        value = getattr(usage, name, None)
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    return 0
