"""Requests from other sites refused: the rule the pages server and `cobalt serve`'s Dagster proxy share.

- **Host**: a server on 127.0.0.1:PORT answers only `127.0.0.1:PORT`, `localhost:PORT` and `[::1]:PORT`
  (421 otherwise). A DNS-rebinding page (evil.example resolving to 127.0.0.1) sends its own name as
  Host, so it never reads an answer.
- **Origin**: a request that changes state comes from this server's own origin. A browser sends
  `Origin` with every cross-origin POST and WebSocket, and `Sec-Fetch-Site` with every request;
  a request naming another origin, or marked `cross-site`/`same-site` (another port of the same
  host is another origin but the same site), is refused with 403.
"""

from __future__ import annotations

import hmac
import ipaddress
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from aiohttp import web

#: The names a loopback server answers to, besides the address it was bound to.
LOOPBACK_NAMES = ("127.0.0.1", "localhost", "[::1]")
#: Methods that do not change state (anything else needs the server's own origin).
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
CSRF_HEADER = "X-CSRF-Token"


def allowed_hosts(port: int, bound: str = "127.0.0.1") -> frozenset[str]:
    """The Host values a server bound to `bound`:`port` answers (port 80 may be left out, as browsers do)."""
    names = {*LOOPBACK_NAMES, f"[{bound}]" if ":" in bound and not bound.startswith("[") else bound}
    hosts = {f"{name}:{port}" for name in names}
    return frozenset(hosts | (names if port == 80 else set()))


def host_allowed(host: str | None, port: int, bound: str = "127.0.0.1") -> bool:
    return host is not None and host.lower() in allowed_hosts(port, bound)


def from_elsewhere(headers: Mapping[str, str], host: str) -> bool:
    """Whether a request whose Host was checked comes from another origin's page. A request with no
    `Origin` and no `Sec-Fetch-Site` (curl, a script, Dagster's own clients) is not a browser's."""
    origin = headers.get("Origin")
    if origin is not None:
        return origin.lower() != f"http://{host.lower()}"
    return headers.get("Sec-Fetch-Site", "none") not in ("none", "same-origin")


def token_matches(given: str | None, token: str) -> bool:
    """A constant-time comparison of a presented token with the server's."""
    return given is not None and hmac.compare_digest(given.encode(), token.encode())


def refusal(status: int, what: str, port: int) -> tuple[int, str]:
    """The status and short plain-text body of a refused request."""
    return status, f"{what}: this server answers only http://127.0.0.1:{port} and its own pages.\n"


#: The largest JSON request body the pages' writes read (a label's note of 4,000 characters fits with room to spare).
MAX_BODY = 64 * 1024


def is_loopback(remote: str | None) -> bool:
    """Whether the client is on this machine (the pages' writes answer no other)."""
    try:
        return remote is not None and ipaddress.ip_address(remote.split("%")[0]).is_loopback
    except ValueError:
        return False


async def json_body(request: web.Request) -> dict[str, Any] | None:
    """The request's JSON object (None: another type, too large, not JSON, or not an object)."""
    if request.content_type != "application/json" or (request.content_length or 0) > MAX_BODY:
        return None
    try:
        body = await request.json()
    except ValueError:
        return None
    return body if isinstance(body, dict) else None


def person(value: object) -> str | None:
    """The name the page asked its person for once (None: the server's own default, `who_default`)."""
    if not isinstance(value, str) or not value.strip():
        return None
    return value.strip()[:200]
