"""What the tools share: the project they serve, errors a model can act on, and answers within the budget."""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.shared.exceptions import MCPError
from mcp.types import INVALID_PARAMS, CallToolResult, GetPromptResult, InputRequiredResult, TextContent
from pydantic import BaseModel, Field, ValidationError

from .._errors import CobaltError
from ..config._config import Config, load_config
from ._budget import DEFAULT_TOKENS, MAX_TOKENS, MIN_TOKENS, budget_tokens, dumps, estimate_tokens, fit_any
from ._stdio import serve_stdio_until_eof

#: The `budget` argument every tool that can answer at length takes.
BudgetArg = Annotated[int, Field(ge=MIN_TOKENS, le=MAX_TOKENS, description=(
    f"The most this answer may take, in tokens (estimated from above; default {DEFAULT_TOKENS:,}): long "
    "fields are clipped and items left out, each with how to get the rest."))]


@dataclass(frozen=True)
class Project:
    """The project the server serves: its configuration is read again on every call, so edits count."""

    root: Path

    def config(self) -> Config:
        return load_config(self.root)


#: CLI advice in cobalt's messages, and the tool call that does the same over MCP.
_FOR_TOOLS = [
    (re.compile(r"`cobalt history` lists the stored runs"), "cobalt_results() lists the stored runs"),
    (re.compile(r"`cobalt history` shows each run's group"), "cobalt_results() lists the stored runs with their "
                                                            "group_id"),
    (re.compile(r"`cobalt history` lists the experiments"), "cobalt://experiments lists the experiments"),
    (re.compile(r"`cobalt run --resume (latest|[\w.-]+)`"), r"cobalt_run(resume='\1')"),
    (re.compile(r"`cobalt run --resume`"), "cobalt_run(resume=<the run id>)"),
    (re.compile(r"run `cobalt run` first"), "call cobalt_run first"),
    (re.compile(r"create one with `cobalt init` or pass a file"),
     "create one with cobalt_generate(agent_file=...), or pass file"),
    (re.compile(r"--(filter|tag|limit|top|resume)\b"), r"\1"),
]


def for_tools(message: str) -> str:
    """A message of cobalt's with its CLI advice turned into the tool calls that do the same; advice with no
    such call (a command a model cannot run here) is left out rather than passed on."""
    for pattern, replacement in _FOR_TOOLS:
        message = pattern.sub(replacement, message)
    return _CLI_ADVICE.sub("", message)


#: A clause still naming a `cobalt ...` command after the translations above.
_CLI_ADVICE = re.compile(r"[;,]?\s*[^;.]*`cobalt [^`]*`[^;.]*(?=[;.]|$)")


@contextmanager
def tool_errors() -> Iterator[None]:
    """cobalt's errors (an unknown run id, a bad path, a bad query) as tool errors carrying their message,
    which says what to call next; anything else is the SDK's generic error."""
    try:
        yield
    except CobaltError as exc:
        raise ToolError(for_tools(str(exc))) from None
    except OSError as exc:
        where = f"{exc.filename}: " if exc.filename else ""
        raise ToolError(f"{where}{exc.strerror or exc}") from None


def argument_error(tool: str, error: ValidationError) -> str:
    """A rejected argument as one sentence naming it and what it takes (the value itself is not repeated)."""
    first = error.errors()[0]
    name = ".".join(str(part) for part in first["loc"]) or "the arguments"
    what = first["msg"][0].lower() + first["msg"][1:]
    more = f" ({error.error_count() - 1} more arguments are wrong too)" if error.error_count() > 1 else ""
    return f"{tool}: argument {name!r} is not valid: {what}{more}; fix it and call {tool} again."


def answer(data: Any, summary: str, notes: list[str] | None = None) -> CallToolResult:
    """A tool result: a short summary for the reader, the data as JSON text (for clients that read text
    only) and as structured content (validated against the tool's output schema)."""
    text = "\n".join([summary, *(f"note: {n}" for n in notes or [])])
    return CallToolResult(content=[TextContent(type="text", text=text), TextContent(type="text", text=dumps(data))],
                          structured_content=data)


def budgeted(model: BaseModel, summary: str, tokens: int | None, pointer: str) -> CallToolResult:
    """`answer` for any model, within `tokens`: default fields left out, then strings and lists cut."""
    data, notes = fit_any(model.model_dump(mode="json", exclude_defaults=True),
                          budget_tokens(tokens) - estimate_tokens(summary) - 100, pointer)
    return answer(data, summary, notes)


class CobaltServer(MCPServer):
    """The SDK's server, with a rejected argument said in one sentence instead of pydantic's report, and
    (over stdio) the requests in flight cancelled when the client goes away."""

    async def run_stdio_async(self) -> None:
        await serve_stdio_until_eof(self)

    async def call_tool(self, name: str, arguments: dict[str, Any],
                        context: Context[Any, Any] | None = None) -> CallToolResult | InputRequiredResult:
        tool = self._tool_manager.get_tool(name)
        if tool is not None:
            known = list(tool.parameters.get("properties", {}))
            unknown = [key for key in arguments if key not in known]
            if unknown:
                # The SDK drops unknown keys silently: a misspelt `limt` would run with the default limit.
                raise ToolError(f"{name}: unknown argument{'s' if len(unknown) > 1 else ''} "
                                f"{', '.join(repr(k) for k in unknown)}; {name} takes {', '.join(known) or 'none'}.")
        try:
            return await super().call_tool(name, arguments, context)
        except ToolError as exc:
            if isinstance(exc.__cause__, ValidationError):
                raise ToolError(argument_error(name, exc.__cause__)) from exc.__cause__
            raise

    async def get_prompt(self, name: str, arguments: dict[str, Any] | None = None,
                         context: Context[Any, Any] | None = None) -> GetPromptResult | InputRequiredResult:
        """The SDK answers a missing argument as an internal error; here it is invalid params, naming it."""
        prompt = self._prompt_manager.get_prompt(name)
        if prompt is None:
            known = ", ".join(p.name for p in self._prompt_manager.list_prompts())
            raise MCPError(INVALID_PARAMS, f"No prompt is named {name!r}; the prompts are {known}.")
        declared = prompt.arguments or []
        missing = [a.name for a in declared if a.required and a.name not in (arguments or {})]
        if missing:
            raise MCPError(INVALID_PARAMS, f"Prompt {name!r} needs the argument{'s' if len(missing) > 1 else ''} "
                           f"{', '.join(repr(m) for m in missing)} ({_described(declared)}).", {"missing": missing})
        unknown = [key for key in arguments or {} if key not in {a.name for a in declared}]
        if unknown:
            raise MCPError(INVALID_PARAMS, f"Prompt {name!r} takes no argument {', '.join(map(repr, unknown))}; "
                           f"its arguments: {_described(declared) or 'none'}.", {"unknown": unknown})
        return await super().get_prompt(name, arguments, context)


def _described(arguments: list[Any]) -> str:
    """`experiment: The experiment to improve.; threshold: ...` (optional ones marked)."""
    return "; ".join(f"{a.name}: {a.description or ''}{'' if a.required else ' (optional)'}".strip()
                     for a in arguments)
