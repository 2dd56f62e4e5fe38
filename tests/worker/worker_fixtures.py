"""A real run worker of the test's own: its own socket directory (COBALT_WORKER_DIR, short enough for a
socket path), started with `cobalt worker start` and stopped by its pid at the end."""

from __future__ import annotations

import hashlib
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
from filelock import FileLock

from cobalt_lib.worker._launch import _ask

COBALT = str(Path(sys.executable).parent / "cobalt")
EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "dagster_project"
_DROPPED = ("COBALT_WORKER", "DAGSTER_HOME", "COBALT_PROJECT_DIR", "GITHUB_ACTIONS", "GITHUB_STEP_SUMMARY",
            "COBALT_TEST_PAUSE")


@dataclass
class Ran:
    """A finished `cobalt` process: exit code, output and its pid."""

    returncode: int
    stdout: str
    stderr: str
    pid: int


@dataclass
class Workers:
    directory: Path

    def env(self, **extra: str) -> dict[str, str]:
        """The environment of a `cobalt` that uses this directory's worker (the suite switches it off)."""
        clean = {k: v for k, v in os.environ.items() if k not in _DROPPED}
        return {**clean, "COBALT_WORKER_DIR": str(self.directory), "COBALT_TESTING": "1", **extra}

    def cobalt(self, *args: str, cwd: Path | None = None, **env: str) -> Ran:
        proc = subprocess.Popen([COBALT, *args], cwd=cwd, env=self.env(**env), text=True, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE)
        out, err = proc.communicate(timeout=120)
        return Ran(proc.returncode, out, err, proc.pid)

    def served(self, client: int) -> bool:
        """Whether the worker ran the run of the `cobalt` process `client` (it logs each run)."""
        return any(f"for `cobalt` pid {client} in" in log.read_text() for log in self.directory.glob("w-*.log"))

    def status(self, **env: str) -> list[dict[str, Any]]:
        done = self.cobalt("worker", "status", "--json", **env)
        found: list[dict[str, Any]] = json.loads(done.stdout)
        return found

    def answer(self) -> dict[str, Any] | None:
        """The worker's status, asked on its socket (cheaper than a `cobalt worker status`); None: none."""
        for sock in self.directory.glob("w-*.sock"):
            answer = _ask(sock, {"op": "status"})
            if answer:
                return answer
        return None

    def kill(self) -> None:
        """Stop this directory's worker by its pid (it unlinks its socket)."""
        answer = self.answer()
        if answer:
            os.kill(int(answer["pid"]), signal.SIGTERM)


@pytest.fixture(scope="session")
def workers(tmp_path_factory: pytest.TempPathFactory, worker_id: str) -> Iterator[Workers]:
    """One warm worker for the whole test run, shared by pytest-xdist's processes (the first one in
    starts it under a file lock, the last one out stops it by its pid): a start costs seconds.

    Its directory is short (pytest's tmp paths can pass the 107-byte socket path limit) and named
    after this test run's temporary directory, which every xdist process shares."""
    run_dir = tmp_path_factory.getbasetemp() if worker_id == "master" else tmp_path_factory.getbasetemp().parent
    directory = Path("/tmp") / f"cw-{hashlib.sha1(str(run_dir).encode()).hexdigest()[:12]}"
    users = run_dir / "cobalt-worker.users"
    pool = Workers(directory)
    with FileLock(str(run_dir / "cobalt-worker.lock")):
        directory.mkdir(mode=0o700, exist_ok=True)
        if pool.answer() is None:
            started = pool.cobalt("worker", "start", "--idle-timeout", "600")
            assert started.returncode == 0, started.stdout + started.stderr
        users.write_text(str(int(users.read_text()) + 1 if users.exists() else 1))
    try:
        yield pool
    finally:
        with FileLock(str(run_dir / "cobalt-worker.lock")):
            left = int(users.read_text()) - 1
            users.write_text(str(left))
            if left == 0:
                pool.kill()
                shutil.rmtree(directory, ignore_errors=True)


@pytest.fixture
def own_worker(workers: Workers) -> Iterator[Workers]:
    """A worker of the test's own (one it may stop), started quickly: the shared worker's module list
    is copied into its directory, so it skips the warm-up run."""
    pool = Workers(Path(tempfile.mkdtemp(prefix="cw-", dir="/tmp")))
    os.chmod(pool.directory, 0o700)
    for cached in workers.directory.glob("w-*.modules"):
        shutil.copy(cached, pool.directory / cached.name)
    started = pool.cobalt("worker", "start", "--idle-timeout", "600")
    assert started.returncode == 0, started.stdout + started.stderr
    try:
        yield pool
    finally:
        pool.kill()
        shutil.rmtree(pool.directory, ignore_errors=True)


@pytest.fixture(scope="module")
def example(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One copy of examples/dagster_project for the module's runs (its instance is created once)."""
    dest = tmp_path_factory.mktemp("worker") / "proj"
    shutil.copytree(EXAMPLE, dest, ignore=shutil.ignore_patterns(".cobalt", "__pycache__"))
    return dest
