"""`cobalt mcp --http` through the SDK's client, and a CLI run in progress while the server answers in a loop."""

from __future__ import annotations

import os
import re
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest
from fakellm import FakeLLM
from mcp_project import COBALT, SLOW, anyio_backend, http_client, make_project, server_env  # noqa: F401  (anyio_backend: fixture)

pytestmark = pytest.mark.anyio



class HttpServer:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.process = subprocess.Popen([COBALT, "mcp", "--http", "--port", "0"], cwd=root, text=True,
                                        stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                        env={**os.environ, **server_env()})
        self.stderr: list[str] = []
        self.url = ""
        self._ready = threading.Event()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.process.stderr is not None
        for line in self.process.stderr:
            self.stderr.append(line)
            found = re.search(r"at (http://127\.0\.0\.1:\d+/mcp)", line)
            if found:
                self.url = found.group(1)
            if self.url and "Bearer" in line:  # its token is in its file by now
                self._ready.set()
        self._ready.set()  # the process ended: the wait below returns, and the assertion says why

    def wait_ready(self) -> str:
        assert self._ready.wait(60) and self.url, "".join(self.stderr)
        return self.url


@pytest.fixture(scope="module")
def http_server(tmp_path_factory: pytest.TempPathFactory, _llm_server: FakeLLM) -> Iterator[HttpServer]:
    root = make_project(tmp_path_factory.mktemp("mcp-http") / "proj", _llm_server)
    (root / "experiments" / "slow.cobalt.py").write_text(SLOW)
    os.mkfifo(root / "go")
    server = HttpServer(root)
    try:
        server.wait_ready()
        yield server
    finally:
        server.process.terminate()
        server.process.wait(30)
    assert server.process.stdout is not None and server.process.stdout.read() == ""  # nothing on stdout


async def test_streamable_http_serves_the_tools_on_loopback(http_server: HttpServer) -> None:
    assert http_server.url.startswith("http://127.0.0.1:")
    async with http_client(http_server.url, http_server.root) as client:
        names = {t.name for t in (await client.list_tools()).tools}
        assert "cobalt_query" in names and "cobalt_run" in names
        empty = await client.call_tool("cobalt_query", {"sql": "SELECT * FROM runs"})
        assert empty.is_error and "run an experiment first" in empty.content[0].text  # type: ignore[union-attr]
        listed = await client.call_tool("cobalt_results", {})
        assert not listed.is_error and listed.structured_content == {"runs": []}  # null fields left out


def test_binding_anything_but_loopback_is_warned_about() -> None:
    from cobalt_lib.mcp._server import bind_warning

    assert bind_warning("127.0.0.1") is None and bind_warning("localhost") is None
    warning = bind_warning("0.0.0.0")
    assert warning is not None and "binding 0.0.0.0, not 127.0.0.1" in warning and "run your experiments" in warning


def test_port_and_host_without_http_are_a_usage_error(tmp_path: Path) -> None:
    done = subprocess.run([COBALT, "mcp", "--port", "9"], cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and "--port and --host apply to --http" in done.stderr and done.stdout == ""


async def test_a_cli_run_in_progress_while_the_server_answers_in_a_loop(http_server: HttpServer) -> None:
    root = http_server.root
    cli = subprocess.Popen([COBALT, "run", "--filter", "slow"], cwd=root, text=True,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, env={**os.environ, **server_env()})
    answers = 0
    seen_running = released = False
    try:
        async with http_client(http_server.url, http_server.root) as client:
            while cli.poll() is None:
                listed = await client.call_tool("cobalt_results", {})
                assert not listed.is_error, listed.content
                answers += 1
                runs = [r for r in (listed.structured_content or {}).get("runs") or [] if r["experiment"] == "slow"]
                if not runs:
                    continue
                run_id = runs[0]["run_id"]
                seen_running = seen_running or runs[0]["status"] == "running"
                counted = await client.call_tool("cobalt_query", {
                    "sql": f"SELECT count(*) AS n FROM outputs WHERE run_id = '{run_id}'"})
                assert not counted.is_error, counted.content
                answers += 1
                # Release the agent once the server has read the run while it was running and writing.
                if seen_running and (counted.structured_content or {})["rows"][0]["n"] >= 1 and not released:
                    # Opening the pipe for writing waits for item 3 to read it: a thread of its own, so a run
                    # that died before item 3 fails the assertions below instead of hanging the test.
                    threading.Thread(target=(root / "go").write_text, args=("go",), daemon=True).start()
                    released = True
    finally:
        if cli.poll() is None:
            cli.kill()
        stdout, stderr = cli.communicate(timeout=60)
    assert cli.returncode == 0, stderr
    assert seen_running and answers >= 4
    assert "error" not in stderr.lower() and "run id:" in stdout
    from cobalt_lib import Store

    store = Store(root / ".cobalt" / "cobalt.duckdb")
    [run] = store.runs("slow")
    assert run["status"] == "completed" and len(store.rows("outputs", run["run_id"])) == 12


async def test_a_cancelled_run_call_stops_the_run_and_keeps_what_finished(http_server: HttpServer) -> None:
    from cobalt_lib import Store

    store = Store(http_server.root / ".cobalt" / "cobalt.duckdb")
    # Item 3 waits on the pipe `go`, which nobody writes here: the run cannot finish by itself.
    before = {r["run_id"] for r in store.runs("slow", missing_ok=True)}
    async with http_client(http_server.url, http_server.root) as client:
        with anyio.CancelScope() as scope:
            async def heard(done: float, total: float | None, message: str | None) -> None:
                if done >= 3:
                    scope.cancel()  # the assistant gives up on the call

            await client.call_tool("cobalt_run", {"filter": "slow", "no_dagster": True}, progress_callback=heard)
        assert scope.cancelled_caught
        # The server stops the child as Ctrl-C would: the run is kept, incomplete, with its finished items.
        with anyio.fail_after(60):
            while True:  # each check is a round trip to the server, not a timer
                listed = await client.call_tool("cobalt_results", {"experiment": "slow"})
                runs = [r for r in (listed.structured_content or {})["runs"] if r["run_id"] not in before]
                if runs and runs[0]["status"] == "incomplete":
                    break
    assert len(store.rows("outputs", runs[0]["run_id"])) >= 3
