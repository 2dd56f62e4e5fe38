"""A client that goes away mid-`cobalt_run` stops its run as cancellation does: the SDK's client runs in a
process of its own, `cobalt mcp` over stdio beneath it, and the test kills the client (SIGKILL)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from mcp_project import COBALT, server_env

from cobalt_lib import Store

pytestmark = pytest.mark.slow

#: Item 3 waits on the named pipe `go`, which nobody writes: the run cannot finish by itself.
SLOW = '''
from pathlib import Path
from cobalt_lib import Dataset, Evaluator, experiment

GO = Path(__file__).resolve().parents[1] / "go"

def agent(ctx):
    if ctx.index == 3:
        GO.read_text()
    return ctx.item["expected_output"]

experiment("slow", Dataset([{"input": f"q{i}", "expected_output": f"a{i}"} for i in range(12)]), agent,
           evaluators=[Evaluator(name="exact", type="exact-match")], concurrency=1)
'''

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


def test_a_client_killed_mid_run_stops_the_run_and_keeps_what_finished(tmp_path: Path) -> None:
    root = tmp_path / "proj"
    (root / "experiments").mkdir(parents=True)
    (root / "experiments" / "slow.cobalt.py").write_text(SLOW)
    os.mkfifo(root / "go")
    env = {**server_env(), "COBALT_LEASE_SECONDS": "3600"}  # so only the server's stop can end the run
    client = subprocess.Popen([sys.executable, "-c", CLIENT, COBALT, str(root), json.dumps(env)],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert client.stdout is not None
    heard = [client.stdout.readline().strip() for _ in range(3)]
    assert heard == ["progress 1", "progress 2", "progress 3"], client.stderr.read() if client.stderr else ""
    os.kill(client.pid, signal.SIGKILL)  # the client goes away without a word: its end of the server's stdin closes
    client.communicate(timeout=30)
    store = Store(root / ".cobalt" / "cobalt.duckdb")
    deadline = time.monotonic() + 120  # a condition to reach, not a timer
    status = "running"
    while status == "running" and time.monotonic() < deadline:
        status = store.runs()[0]["status"]
    # `incomplete` with an hour of lease left: the server stopped the run as Ctrl-C would.
    assert status == "incomplete"
    [run] = store.runs()
    assert [r["item_index"] for r in store.rows("outputs", run["run_id"])] == [0, 1, 2]
    assert run["passed"] is not True
