"""`cobalt serve` refusing definitions that cannot load, and `cobalt request` telling whether a daemon will
pick the request up, as a user types them (nothing is started)."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

COBALT = str(Path(sys.executable).parent / "cobalt")

EXPERIMENT = '''
from cobalt_lib import Dataset, Evaluator, experiment
experiment("qa-agent", Dataset([{"expected_output": "x"}]), lambda ctx: "x",
           evaluators=[Evaluator(name="exact", type="exact-match")])
'''


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_a_schedule_naming_no_experiment_is_a_usage_error_before_anything_starts(project: Path) -> None:
    (project / "experiments").mkdir()
    (project / "experiments" / "qa.cobalt.py").write_text(EXPERIMENT)
    (project / "cobalt.toml").write_text('[schedules]\nqa-agnet = { cron = "0 2 * * *" }\n')
    # Before the check, serve started anyway and ran until stopped: the timeout would fail the test.
    result = subprocess.run([COBALT, "serve", "--port", str(free_port()), "--no-open"], cwd=project,
                            capture_output=True, text=True, timeout=60, env=dict(os.environ),
                            stdin=subprocess.DEVNULL)
    assert result.returncode == 2
    assert result.stderr.strip() == ("error: [schedules] names experiment 'qa-agnet', which does not exist; "
                                     "experiments: qa-agent.")
    assert "dashboard" not in result.stdout
    assert not (project / ".cobalt" / "dagster").exists()  # the Dagster instance was never even created


def request(project: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([COBALT, "request", "qa-agent", "-c", "3"], cwd=project, capture_output=True, text=True,
                          timeout=60, env=dict(os.environ), stdin=subprocess.DEVNULL)


def only_request(project: Path) -> dict[str, object]:
    [path] = (project / ".cobalt" / "requests").glob("*.json")
    data: dict[str, object] = json.loads(path.read_text())
    assert path.stem == data["run_id"]
    return data


def heartbeat(project: Path, age_seconds: float) -> None:
    """What the sensor daemon of `cobalt serve` writes every 30 s into the project's instance."""
    from dagster._daemon.types import DaemonHeartbeat

    from cobalt_dagster import local_instance
    from cobalt_lib import load_config

    instance = local_instance(load_config(project))
    try:
        instance.add_daemon_heartbeat(DaemonHeartbeat(time.time() - age_seconds, "SENSOR", "test-daemon", None))
    finally:
        instance.dispose()


def test_request_without_a_running_daemon_is_written_and_says_it_waits(project: Path) -> None:
    (project / "experiments").mkdir()
    (project / "experiments" / "qa.cobalt.py").write_text(EXPERIMENT)
    result = request(project)
    assert result.returncode == 0, result.stderr
    data = only_request(project)
    assert result.stdout == f"requested a run of qa-agent ({data['run_id']})\n"
    assert result.stderr == ("warning: no `cobalt serve` daemon is running for this project, so the request "
                             "waits until `cobalt serve` runs.\n")
    assert (data["experiment"], data["concurrency"]) == ("qa-agent", 3)
    assert not (project / ".cobalt" / "dagster").exists()  # asking did not create the Dagster instance


def test_request_with_a_live_daemon_says_it_will_start_and_a_stopped_one_does_not(project: Path) -> None:
    (project / "experiments").mkdir()
    (project / "experiments" / "qa.cobalt.py").write_text(EXPERIMENT)
    heartbeat(project, age_seconds=3600)  # a daemon that stopped an hour ago
    stopped = request(project)
    assert stopped.returncode == 0 and stopped.stderr.startswith("warning: no `cobalt serve` daemon is running")
    (project / ".cobalt" / "requests" / f"{only_request(project)['run_id']}.json").unlink()
    heartbeat(project, age_seconds=5)
    live = request(project)
    assert live.returncode == 0 and live.stderr == ""
    assert live.stdout == (f"requested a run of qa-agent ({only_request(project)['run_id']}); the daemon of "
                           "`cobalt serve` will start it\n")


def test_serve_pages_only_prints_its_url_serves_the_pages_and_stops_on_sigint(project: Path) -> None:
    import httpx

    port = free_port()
    server = subprocess.Popen([COBALT, "serve", "--pages-only", "--pages-port", str(port), "--no-open"], cwd=project,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=dict(os.environ),
                              stdin=subprocess.DEVNULL)
    try:
        line = server.stdout.readline() if server.stdout else ""
        session = (project / ".cobalt" / "pages-session").read_text().strip()  # 0600: the user's alone
        assert (project / ".cobalt" / "pages-session").stat().st_mode & 0o777 == 0o600
        assert line.startswith(f"cobalt pages:     http://127.0.0.1:{port}/?session={session}  (Ctrl-C stops it"), line
        page = httpx.get(f"http://127.0.0.1:{port}/", timeout=10)
        assert page.status_code == 200 and "No runs stored yet" in page.text
        assert "script-src 'self'" in page.headers["content-security-policy"]
    finally:
        server.send_signal(signal.SIGINT)
        assert server.wait(timeout=20) == 0
    assert not (project / ".cobalt" / "dagster").exists()  # no Dagster with --pages-only


def test_serve_on_a_pages_port_in_use_is_a_usage_error(project: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = subprocess.run([COBALT, "serve", "--pages-only", "--pages-port", str(port)], cwd=project,
                                capture_output=True, text=True, timeout=60, env=dict(os.environ),
                                stdin=subprocess.DEVNULL)
    assert result.returncode == 2
    assert result.stderr.startswith(f"error: Cannot serve cobalt's pages on 127.0.0.1:{port}: ")
    assert result.stderr.rstrip().endswith("pass --pages-port another port (or set [dashboard] pages_port).")
