"""Who may talk to `cobalt mcp --http`: the Host and Origin checks always, and a bearer token off loopback.

- **Host/Origin**: the SDK checks them only when told the host is loopback, and then accepts any
  port; here they are always on, for this server's own port: its loopback names, the address it
  is bound to, and, bound to every interface (`0.0.0.0`, `::`), the machine's name and addresses
  and the names in `COBALT_MCP_HOSTS` (comma-separated). Another Host gets 421, another Origin 403.
- **Token**: bound to anything but 127.0.0.1, localhost or ::1, every request must carry
  `Authorization: Bearer TOKEN` (401 otherwise, compared in constant time). The token is
  `COBALT_MCP_TOKEN` when set (then it is required on loopback too), else a new one printed once to
  stderr when the server starts.
"""

from __future__ import annotations

import os
import secrets
import socket

from mcp.server.transport_security import TransportSecuritySettings
from starlette.types import ASGIApp, Receive, Scope, Send

from .._errors import ConfigError

TOKEN_VARIABLE = "COBALT_MCP_TOKEN"
HOSTS_VARIABLE = "COBALT_MCP_HOSTS"
LOOPBACK = ("127.0.0.1", "localhost", "::1")
WILDCARDS = ("0.0.0.0", "::", "")
MIN_TOKEN_LENGTH = 16


def needs_token(host: str) -> bool:
    return host not in LOOPBACK or bool(os.environ.get(TOKEN_VARIABLE))


def server_token() -> tuple[str, bool]:
    """(the token, whether it was generated here and must be shown); a bad COBALT_MCP_TOKEN is a ConfigError."""
    given = os.environ.get(TOKEN_VARIABLE, "")
    if not given:
        return secrets.token_urlsafe(32), True
    if len(given) < MIN_TOKEN_LENGTH or not given.isascii() or not given.isprintable() or " " in given:
        raise ConfigError(f"{TOKEN_VARIABLE} must be at least {MIN_TOKEN_LENGTH} printable ASCII characters without "
                         "spaces; unset it and one is generated.")
    return given, False


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
