"""A real run worker of the test's own: its own socket directory (COBALT_WORKER_DIR, short enough for a
socket path), started with `cobalt worker start` and stopped by its pid at the end."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from cobalt_lib.worker._launch import _ask

COBALT = str(Path(sys.executable).parent / "cobalt")
EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "dagster_project"
_DROPPED = ("COBALT_WORKER", "DAGSTER_HOME", "COBALT_PROJECT_DIR", "GITHUB_ACTIONS", "GITHUB_STEP_SUMMARY",
            "COBALT_TEST_PAUSE")


@dataclass
class Workers:
    directory: Path

    def env(self, **extra: str) -> dict[str, str]:
        """The environment of a `cobalt` that uses this directory's worker (the suite switches it off)."""
        clean = {k: v for k, v in os.environ.items() if k not in _DROPPED}
        return {**clean, "COBALT_WORKER_DIR": str(self.directory), "COBALT_TESTING": "1", **extra}

    def cobalt(self, *args: str, cwd: Path | None = None, **env: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([COBALT, *args], cwd=cwd, env=self.env(**env), capture_output=True, text=True,
                              timeout=120, check=False)

    def status(self, **env: str) -> list[dict[str, Any]]:
        done = self.cobalt("worker", "status", "--json", **env)
        found: list[dict[str, Any]] = json.loads(done.stdout)
        return found

    def served(self) -> int:
        """Runs the worker has served, asked on its socket (cheaper than a `cobalt worker status`)."""
        [sock] = self.directory.glob("w-*.sock")
        answer = _ask(sock, {"op": "status"})
        assert answer is not None
        return int(answer["served"])


@pytest.fixture(scope="module")
def workers() -> Iterator[Workers]:
    """A warm worker in a fresh 0700 directory under /tmp (pytest's tmp paths can pass the 107-byte limit)."""
    directory = Path(tempfile.mkdtemp(prefix="cw-", dir="/tmp"))
    os.chmod(directory, 0o700)
    pool = Workers(directory)
    started = pool.cobalt("worker", "start", "--idle-timeout", "600")
    assert started.returncode == 0, started.stdout + started.stderr
    try:
        yield pool
    finally:
        for sock in directory.glob("w-*.sock"):
            answer = _ask(sock, {"op": "status"})
            if answer:
                os.kill(int(answer["pid"]), signal.SIGTERM)  # stopped by its pid; it unlinks its socket
        shutil.rmtree(directory, ignore_errors=True)


@pytest.fixture(scope="module")
def example(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One copy of examples/dagster_project for the module's runs (its instance is created once)."""
    dest = tmp_path_factory.mktemp("worker") / "proj"
    shutil.copytree(EXAMPLE, dest, ignore=shutil.ignore_patterns(".cobalt", "__pycache__"))
    return dest
