"""cobalt's MCP server (`cobalt mcp`): tools to run, read, query, compare, evaluate and generate experiments."""

from ._server import DEFAULT_PORT, build_server, serve_http, serve_stdio

__all__ = ["DEFAULT_PORT", "build_server", "serve_http", "serve_stdio"]
