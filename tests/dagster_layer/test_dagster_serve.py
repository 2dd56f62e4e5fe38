"""`cobalt serve` end to end: the real webserver answers GraphQL through the proxy in front of it, which
refuses other sites (issue 22, finding 11), and Ctrl-C stops it and its children."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
from slowdown import deadline as deadline_in
from slowdown import scaled

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "dagster_project"
COBALT = str(Path(sys.executable).parent / "cobalt")
QUERY = """{ assetNodes { assetKey { path }
             assetChecksOrError { ... on AssetChecks { checks { name blocking } } } } }"""

pytestmark = pytest.mark.slow


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def processes() -> dict[int, tuple[int, str]]:
    """pid -> (parent pid, full command line) of every process, from /proc.

    Not `ps`: it cuts `args` to the terminal width (80 columns under CI), which hid the command names.
    """
    table = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            args = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip()
        except OSError:  # exited while we looked
            continue
        table[int(entry.name)] = (int(stat.rsplit(")", 1)[-1].split()[1]), args)
    return table


def descendants(root: int) -> dict[int, str]:
    table = processes()
    found: dict[int, str] = {}
    frontier = [root]
    while frontier:
        parent = frontier.pop()
        for pid, (ppid, args) in table.items():
            if ppid == parent and pid not in found:
                found[pid] = args
                frontier.append(pid)
    return found


def still_running(seen: dict[int, str]) -> dict[int, str]:
    """Those of `seen` still alive with the same command line (not a reused pid), zombies excluded."""
    table = processes()
    alive = {}
    for pid, args in seen.items():
        if pid in table and table[pid][1] == args:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[-1].split()[0] \
                if Path(f"/proc/{pid}/stat").exists() else "?"
            if state != "Z":
                alive[pid] = args
    return alive


def poll(what: str, deadline: float, probe: Any, interval: float = 0.5) -> Any:
    """Call `probe` until it returns something truthy or the deadline passes."""
    last: Any = None
    while time.monotonic() < deadline:
        last = probe()
        if last:
            return last
        time.sleep(interval)
    raise AssertionError(f"timed out waiting for {what}; last: {last!r}")


def _as_a_background_job() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # what a shell does to `cobalt serve &`


@pytest.fixture(params=["foreground", "background"])
def served(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[tuple[subprocess.Popen[bytes], int, Path]]:
    """`cobalt serve` as typed at a terminal, and as a shell's background job (SIGINT ignored, inherited)."""
    with serving(tmp_path, background=request.param == "background") as started:
        yield started


@contextmanager
def serving(tmp_path: Path, *, background: bool) -> Iterator[tuple[subprocess.Popen[bytes], int, Path]]:
    root = tmp_path / "proj"
    shutil.copytree(EXAMPLE, root, ignore=shutil.ignore_patterns(".cobalt", "__pycache__"))
    port = free_port()
    env = {k: v for k, v in os.environ.items() if k not in ("DAGSTER_HOME", "COBALT_PROJECT_DIR")}
    log = (tmp_path / "serve.log").open("wb")
    proc = subprocess.Popen([COBALT, "serve", "--port", str(port), "--no-open"], cwd=root, env=env,
                            stdout=log, stderr=subprocess.STDOUT,
                            preexec_fn=_as_a_background_job if background else None)
    seen: dict[int, str] = {}
    try:
        yield proc, port, root
    finally:
        seen = descendants(proc.pid)
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        for pid in still_running(seen):  # only what this test started
            os.kill(pid, signal.SIGKILL)
        log.close()


def graphql(port: int) -> dict[str, Any] | None:
    try:
        response = httpx.post(f"http://127.0.0.1:{port}/graphql", json={"query": QUERY}, timeout=5)
    except httpx.HTTPError:
        return None
    if response.status_code != 200:
        return None
    data = response.json().get("data") or {}
    nodes = data.get("assetNodes") or []
    return {"/".join(n["assetKey"]["path"]): [c["name"] for c in (n.get("assetChecksOrError") or {}).get(
        "checks", [])] for n in nodes} or None


def test_serve_lists_assets_and_checks_guards_the_webserver_and_stops_on_ctrl_c(
        served: tuple[subprocess.Popen[bytes], int, Path], request: pytest.FixtureRequest) -> None:
    proc, port, root = served
    background = "background" in request.node.callspec.id
    nodes = poll("the webserver to list the experiment's assets", deadline_in(120),
                 lambda: (graphql(port) or {}) if proc.poll() is None else {"exited": proc.returncode})
    assert "exited" not in nodes, (root.parent / "serve.log").read_text(errors="replace")
    expected = {f"{name}/{stage}" for name in ("support_bot", "my_summarizer_agent")
                for stage in ("dataset", "outputs", "scores", "aggregates")}
    assert expected <= set(nodes)
    assert "support_bot/deploy" in nodes  # the project's own definitions.py, which serve found and loaded
    # its gate, and the check every experiment has (an evaluator that scored nothing fails it)
    assert sorted(nodes["support_bot/aggregates"]) == ["gate_error_rate_max_0", "gate_every_evaluator_scored",
                                                       "gate_exact_min_0_75"]
    assert sorted(nodes["my_summarizer_agent/aggregates"]) == ["gate_error_rate_max_0", "gate_every_evaluator_scored"]
    assert (root / ".cobalt" / "dagster").is_dir()  # DAGSTER_HOME is the project's local instance

    if not background:  # the proxy's guard, on the same server: a `cobalt serve` start costs a minute
        _another_sites_wipe_assets_is_refused_and_the_history_kept(proc, port)
    children = descendants(proc.pid)
    assert any("cobalt_dagster._webserver" in args for args in children.values()), children  # on its Unix socket
    assert any("daemon_main()" in args for args in children.values()), children  # Dagster's, watching less often
    # One code server, the webserver's and the daemon's: neither starts one of its own (the daemon's
    # every minute or so made most of an idle serve's CPU).
    shared = [args for args in children.values() if "code-server start" in args]
    assert len(shared) == 1 and sum(" api grpc " in args for args in children.values()) == 1, children
    proc.send_signal(signal.SIGINT)
    code = proc.wait(timeout=scaled(60))  # stops promptly; how promptly is no test's business under load
    assert code == 0
    left = poll("no child process left", deadline_in(5), lambda: not still_running(children) or None,
                interval=0.2)
    assert left is True and still_running(children) == {}


HISTORY = """{ assetOrError(assetKey: {path: ["support_bot", "deploy"]}) {
               ... on Asset { assetMaterializations(limit: 10) { partition } } } }"""
WIPE = """mutation Wipe($ranges: [PartitionsByAssetSelector!]!) { wipeAssets(assetPartitionRanges: $ranges) {
            __typename ... on AssetWipeSuccess { assetPartitionRanges { assetKey { path } } } } }"""
DEPLOY = {"ranges": [{"assetKey": {"path": ["support_bot", "deploy"]}}]}


def _history(url: str) -> list[str | None]:
    answer = httpx.post(f"{url}/graphql", json={"query": HISTORY}, timeout=30).json()
    return [m["partition"] for m in answer["data"]["assetOrError"]["assetMaterializations"]]


def _another_sites_wipe_assets_is_refused_and_the_history_kept(proc: subprocess.Popen[bytes], port: int) -> None:
    """Dagster's webserver ran `wipeAssets` for `Origin: evil`; behind `cobalt serve`'s proxy it is refused
    (POST with a foreign Origin, a GET that a cross-site `<img>` would send, a rebinding Host), while the
    UI's own origin and a script without Origin still reach it."""
    url = f"http://127.0.0.1:{port}"
    reported = httpx.post(f"{url}/report_asset_materialization/support_bot/deploy", json={"partition": "p1"},
                          timeout=30)  # a script (no Origin, no Sec-Fetch-Site) is not a browser page
    assert reported.status_code == 200
    assert _history(url) == ["p1"]

    wipe = {"query": WIPE, "variables": DEPLOY}
    foreign = httpx.post(f"{url}/graphql", json=wipe, headers={"Origin": "http://evil.example"}, timeout=30)
    assert foreign.status_code == 403 and "another site" in foreign.text
    pages_origin = httpx.post(f"{url}/graphql", json=wipe, headers={"Origin": f"http://127.0.0.1:{port + 1}"},
                              timeout=30)
    assert pages_origin.status_code == 403  # another port is another origin
    as_image = httpx.get(f"{url}/graphql", params={"query": WIPE, "variables": json.dumps(DEPLOY)},
                         headers={"Sec-Fetch-Site": "cross-site", "Sec-Fetch-Mode": "no-cors"}, timeout=30)
    assert as_image.status_code == 403
    rebound = httpx.post(f"{url}/graphql", json=wipe, headers={"Host": f"evil.example:{port}"}, timeout=30)
    assert rebound.status_code == 421 and "wipeAssets" not in rebound.text
    assert _history(url) == ["p1"]  # intact

    # The webserver itself: on a Unix socket only (no TCP port), in a directory of the user's alone, and a
    # request sent straight to it (not through the proxy, so without its secret header) is refused.
    webserver = next(pid for pid, args in descendants(proc.pid).items() if "cobalt_dagster._webserver" in args)
    sockets = _sockets_of(webserver)
    assert sockets["tcp"] == [] and len(sockets["unix"]) == 1, sockets
    inner = sockets["unix"][0]
    assert os.stat(Path(inner).parent).st_mode & 0o077 == 0  # no one else may enter its directory
    with httpx.Client(transport=httpx.HTTPTransport(uds=inner)) as direct:
        straight = direct.post("http://localhost/graphql", json=wipe, headers={"Origin": "http://evil.example"})
        forged = direct.post("http://localhost/graphql", json=wipe, headers={"X-Cobalt-Proxy": "guessed"})
    assert (straight.status_code, forged.status_code) == (403, 403) and "wipeAssets" not in straight.text
    assert _history(url) == ["p1"]

    own = httpx.post(f"{url}/graphql", json=wipe, headers={"Origin": url, "Sec-Fetch-Site": "same-origin"},
                     timeout=30)
    assert own.status_code == 200
    assert own.json()["data"]["wipeAssets"]["__typename"] == "AssetWipeSuccess"
    assert _history(url) == []


def _sockets_of(pid: int) -> dict[str, list[str]]:
    """The listening sockets process `pid` holds: TCP addresses (/proc/net/tcp*) and Unix socket paths."""
    inodes = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        try:
            target = os.readlink(fd)
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[8:-1])
    found: dict[str, list[str]] = {"tcp": [], "unix": []}
    for table in ("tcp", "tcp6"):
        for line in Path(f"/proc/net/{table}").read_text().splitlines()[1:]:
            fields = line.split()
            if fields[3] == "0A" and fields[9] in inodes:  # LISTEN
                found["tcp"].append(fields[1])
    for line in Path("/proc/net/unix").read_text().splitlines()[1:]:
        fields = line.split()
        if len(fields) >= 8 and fields[6] in inodes and fields[7].endswith("webserver.sock"):
            found["unix"].append(fields[7])  # the listening socket and each accepted connection name it
    found["unix"] = sorted(set(found["unix"]))
    return found
