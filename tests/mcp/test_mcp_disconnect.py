"""A client that goes away mid-`cobalt_run` stops its run as cancellation does: over stdio (the SDK's client
in a process of its own, `cobalt mcp` beneath it, the client killed with SIGKILL) and over streamable
HTTP (a client of the newest revision killed, and a 2025-era session that hangs up)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from mcp_project import COBALT, SLOW, server_env, token_of
from slowdown import deadline as deadline_in

from cobalt_lib import Store

pytestmark = pytest.mark.slow


#: The client: connect over stdio, call cobalt_run, say each progress notification on stdout.
CLIENT = '''
import json, sys
import anyio
from mcp import Client, StdioServerParameters

async def main():
    params = StdioServerParameters(command=sys.argv[1], args=["mcp"], cwd=sys.argv[2], env=json.loads(sys.argv[3]))
    async with Client(params, read_timeout_seconds=300) as client:
        async def heard(done, total, message):
            print(f"progress {done:g}", flush=True)
        await client.call_tool("cobalt_run", {"filter": "slow", "no_dagster": True}, progress_callback=heard)

anyio.run(main)
'''


def slow_project(tmp_path: Path) -> Path:
    """A project whose `slow` experiment cannot finish by itself: item 3 waits on the pipe `go`."""
    root = tmp_path / "proj"
    (root / "experiments").mkdir(parents=True)
    (root / "experiments" / "slow.cobalt.py").write_text(SLOW)
    os.mkfifo(root / "go")
    return root


#: A lease of an hour: only the server's stop can end the run.
LONG_LEASE = {"COBALT_LEASE_SECONDS": "3600"}


def stopped(root: Path) -> dict[str, Any]:
    """The run once it is no longer `running` (a condition to reach, within a deadline, not a timer)."""
    store = Store(root / ".cobalt" / "cobalt.duckdb")
    deadline = deadline_in(120)
    while store.runs()[0]["status"] == "running" and time.monotonic() < deadline:
        pass
    [run] = store.runs()
    return {"status": run["status"], "passed": run["passed"],
            "outputs": [r["item_index"] for r in store.rows("outputs", run["run_id"])]}


@contextmanager
def http_server(root: Path) -> Iterator[tuple[str, subprocess.Popen[str]]]:
    """`cobalt mcp --http` on a free port in `root`; yields its URL and process, killed at the end."""
    server = subprocess.Popen([COBALT, "mcp", "--http", "--port", "0"], cwd=root, env={**server_env(), **LONG_LEASE},
                              text=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True)
    try:
        assert server.stderr is not None
        line = server.stderr.readline()
        while "serving MCP over streamable HTTP at " not in line:
            assert line, "the server ended before it served"
            line = server.stderr.readline()
        yield line.split(" at ", 1)[1].split(" ", 1)[0], server
    finally:
        os.killpg(server.pid, signal.SIGKILL)
        server.wait()


def test_a_client_killed_mid_run_stops_the_run_and_keeps_what_finished(tmp_path: Path) -> None:
    root = slow_project(tmp_path)
    env = {**server_env(), **LONG_LEASE}
    client = subprocess.Popen([sys.executable, "-c", CLIENT, COBALT, str(root), json.dumps(env)],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert client.stdout is not None
    heard = [client.stdout.readline().strip() for _ in range(3)]
    assert heard == ["progress 1", "progress 2", "progress 3"], client.stderr.read() if client.stderr else ""
    os.kill(client.pid, signal.SIGKILL)  # the client goes away without a word: its end of the server's stdin closes
    client.communicate(timeout=30)
    run = stopped(root)
    # `incomplete` with an hour of lease left: the server stopped the run as Ctrl-C would.
    assert (run["status"], run["outputs"]) == ("incomplete", [0, 1, 2])
    assert run["passed"] is not True


#: The HTTP client: connect to `cobalt mcp --http`, call cobalt_run, say each progress notification.
HTTP_CLIENT = '''
import sys
import anyio
import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

async def main():
    auth = httpx2.AsyncClient(headers={"Authorization": "Bearer " + open(sys.argv[2]).read().strip()}, timeout=300)
    async with Client(streamable_http_client(sys.argv[1], http_client=auth), read_timeout_seconds=300) as client:
        async def heard(done, total, message):
            print(f"progress {done:g}", flush=True)
        await client.call_tool("cobalt_run", {"filter": "slow", "no_dagster": True}, progress_callback=heard)

anyio.run(main)
'''


def test_a_client_dropping_its_http_connection_mid_run_stops_the_run(tmp_path: Path) -> None:
    """Streamable HTTP: the close of the request's stream is its cancellation (MCP 2026-07-28). The SDK's
    client speaks that revision, whose requests the SDK's server watches itself; a 2025-era session
    is the next test's."""
    root = slow_project(tmp_path)
    with http_server(root) as (url, server):
        client = subprocess.Popen([sys.executable, "-c", HTTP_CLIENT, url, str(root / ".cobalt" / "mcp-token")],
                                  stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True)
        assert client.stdout is not None
        heard = [client.stdout.readline().strip() for _ in range(3)]
        assert heard == ["progress 1", "progress 2", "progress 3"], client.stderr.read() if client.stderr else ""
        os.kill(client.pid, signal.SIGKILL)  # its connection closes without a word
        client.communicate(timeout=30)
        run = stopped(root)
        assert (run["status"], run["outputs"]) == ("incomplete", [0, 1, 2])  # the server stopped the run
        assert server.poll() is None  # the server itself serves on


def _legacy_session_drops_mid_run(url: str, token: str) -> None:
    """A 2025-06-18 client by hand (the SDK's client speaks the newest revision): initialize, call
    cobalt_run on the session, read three progress notifications off its stream, then hang up."""
    import httpx

    headers = {"accept": "application/json, text/event-stream", "content-type": "application/json",
               "authorization": f"Bearer {token}"}
    with httpx.Client(timeout=60) as http:
        hello = http.post(url, headers=headers, json={
            "jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                       "clientInfo": {"name": "legacy", "version": "1"}}})
        assert hello.status_code == 200, hello.text
        session = {**headers, "mcp-session-id": hello.headers["mcp-session-id"],
                   "mcp-protocol-version": "2025-06-18"}
        http.post(url, headers=session, json={"jsonrpc": "2.0", "method": "notifications/initialized"})
        call = {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                "params": {"name": "cobalt_run", "arguments": {"filter": "slow", "no_dagster": True},
                           "_meta": {"progressToken": "p"}}}
        with http.stream("POST", url, headers=session, json=call) as stream:
            heard = 0
            for line in stream.iter_lines():
                heard += line.startswith("data:") and "notifications/progress" in line
                if heard == 3:
                    break
    # leaving both blocks closed the stream and the connection, with no cancellation sent


def test_a_2025_session_dropping_its_http_connection_mid_run_stops_the_run(tmp_path: Path) -> None:
    root = slow_project(tmp_path)
    with http_server(root) as (url, _):
        _legacy_session_drops_mid_run(url, token_of(root))
        run = stopped(root)
        assert (run["status"], run["outputs"]) == ("incomplete", [0, 1, 2])
