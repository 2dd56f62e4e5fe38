"""The MCP server: cobalt's tools, resources and prompts over stdio or streamable HTTP.

Nothing but the protocol reaches stdout: the SDK points file descriptor 1 at stderr while it serves
stdio, so a `print` in user code (an experiment file loaded for a resource) cannot corrupt the stream.
"""

import socket
import sys
from pathlib import Path

from mcp.server.mcpserver import MCPServer

from .. import __version__
from . import (
    _calibration_tool,
    _dataset_tool,
    _model_tools,
    _prompts,
    _read_tools,
    _resources,
    _run_tool,
    _variant_tools,
)
from ._common import CobaltServer, Project
from ._http_cancel import CancelOnDisconnect
from ._http_guard import LOOPBACK, BearerToken, security_settings, server_token

INSTRUCTIONS = """cobalt evaluates AI agents: experiments run the agent over a dataset, score every output with
evaluators (LLM judges, code, exact match...), aggregate the scores and apply quality gates; every run is stored.
The improvement loop: cobalt_run, then cobalt_results(only_failures=true) to read why items failed, change the
agent's code, cobalt_run again, cobalt_compare(run_a="previous", run_b="latest"). cobalt://experiments lists the
experiments, cobalt://schema the tables cobalt_query reads. Runs are named by id, unique prefix, "latest" or
"previous". Before trusting an LLM judge, cobalt_calibration shows how far it agrees with the people who labelled
its items, and where it does not. cobalt_datasets reads the stored datasets' versions and their diffs."""

#: The port `cobalt mcp --http` listens on when given none.
DEFAULT_PORT = 8765


def build_server(root: Path) -> MCPServer:
    """The server for the project at `root` (its configuration is read again on every call)."""
    server: MCPServer = CobaltServer("cobalt", instructions=INSTRUCTIONS, version=__version__, log_level="WARNING")
    project = Project(root)
    _run_tool.register(server, project)
    _read_tools.register(server, project)
    _variant_tools.register(server, project)
    _model_tools.register(server, project)
    _calibration_tool.register(server, project)
    _dataset_tool.register(server, project)
    _resources.register(server, project)
    _prompts.register(server)
    return server


def serve_stdio(root: Path) -> None:
    """Serve over stdin/stdout until the client closes the stream."""
    build_server(root).run()


def bind_warning(host: str) -> str | None:
    """What to say when the HTTP server is told to bind anything but the loopback interface."""
    if host in LOOPBACK:
        return None
    return (f"cobalt mcp is binding {host}, not 127.0.0.1: anyone who can reach it and holds the token can run "
            "your experiments and the code they import, and read every stored result. Bind 127.0.0.1 unless you "
            "mean it.")


def serve_http(root: Path, host: str = "127.0.0.1", port: int = DEFAULT_PORT) -> None:
    """Serve streamable HTTP at http://HOST:PORT/mcp (port 0: any free port); say where on stderr.

    Host and Origin are checked for this port whatever the address, and every request needs the bearer
    token, on loopback too (`_http_guard`)."""
    import anyio
    import uvicorn

    from ..config._config import load_config

    token, how = server_token(load_config(root).output_path)  # a bad COBALT_MCP_TOKEN or file stops here (exit 2)
    warning = bind_warning(host)
    if warning:
        _say(f"warning: {warning}")
    sock = _bind(host, port)
    bound = sock.getsockname()[1]
    # A client that drops a request's connection cancels it (the SDK does so itself for 2026-07-28 clients).
    app = CancelOnDisconnect(build_server(root).streamable_http_app(host=host,
                                                                    transport_security=security_settings(host, bound)))
    shown = f"[{host}]" if ":" in host else host
    _say(f"cobalt mcp: serving MCP over streamable HTTP at http://{shown}:{bound}/mcp (Ctrl-C stops it)")
    _say(how)
    served = BearerToken(app, token)
    config = uvicorn.Config(served, log_level="warning", lifespan="on")
    anyio.run(uvicorn.Server(config).serve, [sock])


def _bind(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    sock.listen(128)
    return sock


def _say(line: str) -> None:
    """One line for the person who started the server. Always stderr, never print(): under stdio,
    stdout is the protocol stream and a stray line there corrupts it."""
    sys.stderr.write(line + "\n")
    sys.stderr.flush()
