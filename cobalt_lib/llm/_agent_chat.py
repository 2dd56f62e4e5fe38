"""An agent's own model call, through the judge's HTTP client: what an imported experiment's agent sends."""

from __future__ import annotations

from ._providers import Endpoint
from ._wire import Clients, Completion, chat_answer, chat_request

#: The roles whose leading message is the system prompt (the Evals API writes `developer`).
_SYSTEM_ROLES = ("system", "developer")


async def agent_chat(endpoint: Endpoint, messages: list[dict[str, str]]) -> Completion:
    """One chat call with the judge's retries, redaction and errors; a leading system (or developer)
    message goes as the system prompt, and without one none is sent."""
    system = ""
    if messages and messages[0].get("role") in _SYSTEM_ROLES:
        system, messages = messages[0].get("content", ""), messages[1:]
    path, body = chat_request(endpoint, system, messages)
    if not system:  # the source sent none: adding an empty one would change what the model sees
        body.pop("system", None)
        body["messages"] = [m for m in body["messages"] if m.get("role") != "system" or m.get("content")]
    clients = Clients()  # one session per call: the agent runs in the run's loop, its calls are few
    try:
        return chat_answer(endpoint, await clients._post_retrying(endpoint, path, body))
    finally:
        await clients.aclose()
