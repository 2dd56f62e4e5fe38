"""Who may talk to `cobalt mcp --http`: the Host and Origin checks, and a bearer token, always.

- **Host/Origin**: the SDK checks them only when told the host is loopback, and then accepts any
  port; here they are always on, for this server's own port: its loopback names, the address it
  is bound to, and, bound to every interface (`0.0.0.0`, `::`), the machine's name and addresses
  and the names in `COBALT_MCP_HOSTS` (comma-separated). Another Host gets 421, another Origin 403.
- **Token**: every request must carry `Authorization: Bearer TOKEN` (401 otherwise, compared in
  constant time), on loopback too: loopback is not a user boundary, any local user can reach it. The
  token is `COBALT_MCP_TOKEN` when set, else the one in `<output_dir>/mcp-token`, a file only its owner
  may read (0600), made with a new token (printed once, when made) on the first start: the user's own
  clients read it from there.
"""

from __future__ import annotations

import os
import secrets
import socket
from pathlib import Path

from mcp.server.transport_security import TransportSecuritySettings
from starlette.types import ASGIApp, Receive, Scope, Send

from ..ops._session import check_secret, owner_only_secret

TOKEN_VARIABLE = "COBALT_MCP_TOKEN"
HOSTS_VARIABLE = "COBALT_MCP_HOSTS"
LOOPBACK = ("127.0.0.1", "localhost", "::1")
WILDCARDS = ("0.0.0.0", "::", "")


#: The file under the project's output directory holding the server's token.
TOKEN_FILE = "mcp-token"


def server_token(directory: Path) -> tuple[str, str]:
    """(the token, the line telling the user how to send it); a bad COBALT_MCP_TOKEN or token file is a
    ConfigError."""
    given = os.environ.get(TOKEN_VARIABLE, "")
    if given:
        check_secret(given, TOKEN_VARIABLE, "unset it and the token file is used")
        return given, "cobalt mcp: every request needs 'Authorization: Bearer $COBALT_MCP_TOKEN'"
    path = directory / TOKEN_FILE
    token, made = owner_only_secret(path, TOKEN_VARIABLE)
    if made:
        return token, (f"cobalt mcp: every request needs the header 'Authorization: Bearer {token}' (kept in {path}, "
                       "readable by you alone; shown this once)")
    return token, f"cobalt mcp: every request needs 'Authorization: Bearer <the token in {path}>'"


def host_names(host: str) -> list[str]:
    """The names (without port) a client may send as Host for a server bound to `host`."""
    names = ["127.0.0.1", "localhost", "[::1]"]
    if host in WILDCARDS:
        names += [socket.gethostname(), socket.getfqdn(), *_addresses(socket.gethostname())]
        names += [n.strip() for n in os.environ.get(HOSTS_VARIABLE, "").split(",") if n.strip()]
    else:
        names.append(host)
    return list(dict.fromkeys(f"[{n}]" if ":" in n and not n.startswith("[") else n for n in names))


def _addresses(name: str) -> list[str]:
    try:
        return sorted({str(info[4][0]) for info in socket.getaddrinfo(name, None)})
    except OSError:
        return []


def security_settings(host: str, port: int) -> TransportSecuritySettings:
    names = host_names(host)
    return TransportSecuritySettings(enable_dns_rebinding_protection=True,
                                     allowed_hosts=[f"{n}:{port}" for n in names],
                                     allowed_origins=[f"http://{n}:{port}" for n in names])


class BearerToken:
    """ASGI middleware: an HTTP request without `Authorization: Bearer <token>` gets 401."""

    def __init__(self, app: ASGIApp, token: str) -> None:
        self.app = app
        self._expected = f"Bearer {token}".encode()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and not self._authorised(scope):
            body = b"Unauthorized: send the server's token as 'Authorization: Bearer TOKEN'.\n"
            await send({"type": "http.response.start", "status": 401,
                        "headers": [(b"content-type", b"text/plain; charset=utf-8"),
                                    (b"content-length", str(len(body)).encode()),
                                    (b"www-authenticate", b'Bearer realm="cobalt mcp"')]})
            await send({"type": "http.response.body", "body": body})
            return
        await self.app(scope, receive, send)

    def _authorised(self, scope: Scope) -> bool:
        given = [value for key, value in scope.get("headers", []) if key == b"authorization"]
        return len(given) == 1 and secrets.compare_digest(given[0], self._expected)
