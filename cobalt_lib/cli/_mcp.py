"""`cobalt mcp`: the MCP server for coding assistants (stdio, or streamable HTTP with --http)."""

from __future__ import annotations

from typing import Annotated

import typer

from ._app import app


@app.command()
def mcp(
    http: Annotated[bool, typer.Option("--http", help="Serve streamable HTTP at http://HOST:PORT/mcp instead "
                                       "of stdio.")] = False,
    port: Annotated[int | None, typer.Option("--port", "-p", min=0, max=65535,
                                             help="Port for --http (default 8765; 0: any free port).")] = None,
    host: Annotated[str, typer.Option("--host", help="Address for --http; anything but 127.0.0.1 is warned "
                                      "about (the tools run your code) and needs a bearer token: "
                                      "$COBALT_MCP_TOKEN, else one printed at start.")] = "127.0.0.1",
) -> None:
    """Serve cobalt to Claude Code or any MCP client: run experiments, read and query results, compare runs,
    score one output, generate experiment files.

    Example: `claude mcp add cobalt -- cobalt mcp` (stdio); `cobalt mcp --http --port 8765`
    """
    from .._errors import ConfigError
    from ..config._config import load_config

    if not http and (port is not None or host != "127.0.0.1"):
        raise ConfigError("--port and --host apply to --http; add --http, or leave them out for stdio.")
    root = load_config().root  # the project from the working directory upward; a bad config stops here
    from ..mcp import DEFAULT_PORT, serve_http, serve_stdio

    if http:
        serve_http(root, host, DEFAULT_PORT if port is None else port)
    else:
        serve_stdio(root)
