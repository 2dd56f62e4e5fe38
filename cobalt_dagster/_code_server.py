"""One code server for `cobalt serve`, shared by Dagster's webserver and daemon.

Given a module or a file, the webserver and the daemon each run the code location in servers of their
own, and the daemon starts a fresh one every minute or so to pick up code changes (3-4 CPU-s and about
245 MB each on 2 cores: most of an idle `cobalt serve`'s CPU). Instead `cobalt serve` starts one
`dagster code-server start` on a Unix socket in its private directory and hands both a workspace
file naming that server (`grpc_server`), under the location name Dagster would have given the
module or file, so runs and recordings keep their `repository@location`. Reloading the definitions
(the UI's button, `DefinitionsWatcher`) reloads that server's code. A project's own `workspace.yaml`
is left as it is: it says where its code locations run.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

#: How long a code server may take to answer its first ping (seconds); loading the code comes after.
START_SECONDS = 120.0
#: How often the webserver and the daemon ask the shared server for its id (Dagster's default: every second,
#: about 0.5 CPU-s a minute in an idle `cobalt serve`'s code server, its proxy and the two callers). The id
#: changes only when the server restarts; a reload through the UI or `DefinitionsWatcher` tells them itself.
WATCH_SECONDS = 10
#: How often the daemon reloads the code location's snapshot from the shared server unasked (Dagster: every
#: minute; the server builds the whole repository snapshot for it, the daemon reads it back: a tenth of an idle
#: daemon's CPU). It needs none: its watcher sees a restarted or reloaded server by its id within `WATCH_SECONDS`
#: and reloads the snapshot then; this is the fallback.
REFRESH_SECONDS = 300
#: How often the code server heartbeats the gRPC server it loads the code in (Dagster's default: every second,
#: a round trip between two processes, each a share of an idle `cobalt serve`'s CPU). That server stops after
#: 30 s without one (`--heartbeat-ttl`): three beats in its window.
HEARTBEAT_SECONDS = 10


@dataclass(frozen=True)
class CodeServer:
    """The code server's command, and the workspace target (`-w FILE`) the webserver and daemon load."""

    command: list[str]
    target: list[str]
    socket: str


def shared_code_server(target: list[str], directory: Path, root: Path) -> CodeServer | None:
    """The code server for `target` (`-m MODULE` or `-f FILE`, as `dagster-webserver` takes them), its
    socket and workspace file in `directory` (the caller's private one); None for a `-w` workspace."""
    if len(target) != 2 or target[0] not in ("-m", "-f"):
        return None
    from ._private import location_name

    kind, value = target
    location = location_name(kind, value, str(root))
    socket = str(directory / "code.sock")
    workspace = directory / "workspace.yaml"
    # JSON is YAML: no quoting rules of our own for a path or a name.
    workspace.write_text(json.dumps({"load_from": [{"grpc_server": {
        "host": "localhost", "socket": socket, "location_name": location}}]}), encoding="utf-8")
    command = [sys.executable, "-c", "from cobalt_dagster._code_server import code_server_main; code_server_main()",
               "code-server", "start", "--socket", socket, "--location-name", location, "--working-directory",
               str(root), *target]
    return CodeServer(command, ["-w", str(workspace)], socket)


def daemon_command(target: list[str]) -> list[str]:
    """`dagster-daemon run` for `target` (code location arguments), asking the code server for its id every
    `WATCH_SECONDS`, reloading its snapshot unasked every `REFRESH_SECONDS`, one SQLAlchemy engine per SQLite
    database."""
    return [sys.executable, "-c", "from cobalt_dagster._code_server import daemon_main; daemon_main()", "run",
            *target]


def daemon_main() -> None:
    """Dagster's `dagster-daemon` command, as `daemon_command` runs it."""
    from ._private import dagster_daemon_cli, refresh_workspace_every, reuse_sqlite_engines, watch_code_servers_every

    watch_code_servers_every(WATCH_SECONDS)
    refresh_workspace_every(REFRESH_SECONDS)
    reuse_sqlite_engines()  # the daemon's loops call the instance's SQLite storages every few seconds
    sys.argv = ["dagster-daemon", *sys.argv[1:]]
    dagster_daemon_cli()


def code_server_main() -> None:
    """Dagster's `dagster` command (for `code-server start`), heartbeating its gRPC server every
    `HEARTBEAT_SECONDS`."""
    from ._private import dagster_cli, heartbeat_code_servers_every

    heartbeat_code_servers_every(HEARTBEAT_SECONDS)
    sys.argv = ["dagster", *sys.argv[1:]]
    dagster_cli()


def wait_for_code_server(socket: str, alive: Callable[[], bool]) -> bool:
    """Wait until the code server on `socket` answers a ping (its proxy answers at once and loads the
    code behind it); False when `alive()` turns false first or it does not answer in `START_SECONDS`."""
    from ._private import code_server_answers

    deadline = time.monotonic() + START_SECONDS
    pause = 0.05
    while alive() and time.monotonic() < deadline:
        if Path(socket).exists() and code_server_answers(socket):
            return True
        time.sleep(pause)
        pause = min(pause * 2, 1.0)
    return False
