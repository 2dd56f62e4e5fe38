"""What the tools share: the project they serve, errors a model can act on, and answers with a summary."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import CallToolResult, TextContent
from pydantic import BaseModel

from .._errors import CobaltError
from ..config._config import Config, load_config


@dataclass(frozen=True)
class Project:
    """The project the server serves: its configuration is read again on every call, so edits count."""

    root: Path

    def config(self) -> Config:
        return load_config(self.root)


@contextmanager
def tool_errors() -> Iterator[None]:
    """cobalt's errors (an unknown run id, a bad path, a bad query) as tool errors carrying their message,
    which says what to do next; anything else is the SDK's generic error."""
    try:
        yield
    except CobaltError as exc:
        raise ToolError(str(exc)) from None
    except OSError as exc:
        where = f"{exc.filename}: " if exc.filename else ""
        raise ToolError(f"{where}{exc.strerror or exc}") from None


def answer(model: BaseModel, summary: str) -> CallToolResult:
    """A tool result: a short summary for the reader, the data as JSON text (for clients that read text
    only) and as structured content (validated against the tool's output schema)."""
    data = model.model_dump(mode="json")
    return CallToolResult(content=[TextContent(type="text", text=summary),
                                   TextContent(type="text", text=json.dumps(data, ensure_ascii=False))],
                          structured_content=data)
