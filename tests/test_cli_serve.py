"""`cobalt serve` refusing definitions that cannot load, as a user types it (nothing is started)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
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
