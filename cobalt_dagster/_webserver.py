"""Dagster's webserver as `cobalt serve` runs it: on a Unix socket in a directory only the user can enter, and
answering only requests that carry the proxy's secret header.

Dagster's webserver (1.13) checks neither Host nor Origin and can only listen on a TCP port, which every
local user and every web page can reach (a GET of `/graphql?query=mutation{wipeAssets...}` from
`Origin: evil` ran). `cobalt serve`'s proxy (`cobalt_lib.pages._proxy`) is the guarded door; this module makes
it the only one: `webserver_command(DAGSTER-WEBSERVER-ARGS)` runs `dagster-webserver`'s
own command with uvicorn bound to `COBALT_WEBSERVER_SOCKET` instead of a port, its app wrapped in a guard
that refuses (403) any request without `X-Cobalt-Proxy: $COBALT_WEBSERVER_SECRET`. The secret comes in the
environment (another user cannot read a process's environment; its command line, anyone can).
"""

from __future__ import annotations

import hmac
import os
import sys
from typing import Any

#: The header the proxy adds to every request it passes on, holding the secret.
SECRET_HEADER = "x-cobalt-proxy"
SOCKET_VARIABLE = "COBALT_WEBSERVER_SOCKET"
SECRET_VARIABLE = "COBALT_WEBSERVER_SECRET"


def webserver_command(target: list[str]) -> list[str]:
    """The command running Dagster's webserver for `target` (code location arguments) behind the proxy; its
    environment must hold `COBALT_WEBSERVER_SOCKET` and `COBALT_WEBSERVER_SECRET`."""
    return [sys.executable, "-c", "from cobalt_dagster._webserver import main; main()", *target]


class ProxyOnly:
    """An ASGI app passing on only the requests that carry the secret header; others get 403 (a WebSocket
    is closed before it opens). Lifespan events pass."""

    def __init__(self, app: Any, secret: str) -> None:
        self.app = app
        self.secret = secret.encode()

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] in ("http", "websocket") and not self._from_proxy(scope):
            if scope["type"] == "websocket":
                await send({"type": "websocket.close", "code": 1008})
                return
            body = b"Refused: Dagster's webserver answers only cobalt serve's proxy.\n"
            await send({"type": "http.response.start", "status": 403,
                        "headers": [(b"content-type", b"text/plain"), (b"content-length", str(len(body)).encode())]})
            await send({"type": "http.response.body", "body": body})
            return
        await self.app(scope, receive, send)

    def _from_proxy(self, scope: dict[str, Any]) -> bool:
        given = [value for name, value in scope.get("headers", ()) if name.lower() == SECRET_HEADER.encode()]
        return len(given) == 1 and hmac.compare_digest(given[0], self.secret)


def main() -> None:
    socket_path = os.environ.pop(SOCKET_VARIABLE)
    secret = os.environ.pop(SECRET_VARIABLE)  # not passed on to the code servers it starts
    import uvicorn

    serve = uvicorn.run

    def on_the_socket(app: Any, **options: Any) -> None:
        options.pop("host", None)
        options.pop("port", None)
        serve(ProxyOnly(app, secret), uds=socket_path, **options)

    uvicorn.run = on_the_socket  # dagster-webserver's command calls `uvicorn.run(app, host=..., port=...)`
    from ._code_server import WATCH_SECONDS
    from ._private import watch_code_servers_every

    watch_code_servers_every(WATCH_SECONDS)
    from dagster_webserver.cli import main as dagster_webserver

    sys.argv = ["dagster-webserver", *sys.argv[1:]]
    dagster_webserver()

