"""A real Postgres server for the tests: started once per test session from the system's binaries, on
127.0.0.1 and a free port, stopped by pid. Each test module that needs one gets a fresh database in it
(`CREATE DATABASE` is cheap; a server start is a second).

The server refuses to run as root: when the tests run as root it runs as the `postgres` user, in a
directory outside pytest's 0700 temporary base (VERIFIED.md). The password is a random one, so a test
can check it appears in no output. xdist workers each start their own server (a lock-free, simple
choice: a server costs about a second and 30 MB).
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import signal
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest


def _bin() -> Path:
    """The server's binaries: COBALT_TEST_PG_BIN, else Debian's newest `/usr/lib/postgresql/<version>/bin`."""
    if named := os.environ.get("COBALT_TEST_PG_BIN"):
        return Path(named)
    found = sorted(Path("/usr/lib/postgresql").glob("*/bin/initdb"), key=lambda p: int(p.parts[-3]))
    return found[-1].parent if found else Path("/usr/lib/postgresql/15/bin")


BIN = _bin()
USER = "cobalt"


@dataclass
class Server:
    """A running server: `url(db)` a URL with the password, `port`, `password`, `directory`."""

    port: int
    password: str
    directory: Path
    run_as: list[str]

    def url(self, database: str = "postgres", *, password: bool = True) -> str:
        secret = f":{self.password}" if password else ""
        return f"postgresql://{USER}{secret}@127.0.0.1:{self.port}/{database}"

    def create_database(self, name: str) -> str:
        """A new empty database; its URL (with the password)."""
        import psycopg

        with psycopg.connect(self.url(), autocommit=True) as con:
            con.execute(f'DROP DATABASE IF EXISTS "{name}"')
            con.execute(f'CREATE DATABASE "{name}"')
        return self.url(name)

    def pid(self) -> int:
        return int((self.directory / "data" / "postmaster.pid").read_text().split()[0])

    def _ctl(self, *args: str) -> None:
        subprocess.run([*self.run_as, str(BIN / "pg_ctl"), "-D", str(self.directory / "data"), *args],
                       check=True, capture_output=True, text=True)

    def start(self) -> None:
        options = f"-p {self.port} -k {self.directory} -c listen_addresses=127.0.0.1 -c fsync=off " \
                  "-c max_connections=200 -c synchronous_commit=off"
        self._ctl("-w", "-l", str(self.directory / "log"), "-o", options, "start")

    def stop(self) -> None:
        """Stop the server by its pid (a fast shutdown), waiting until it has exited."""
        with contextlib.suppress(FileNotFoundError, ProcessLookupError, ValueError):
            pid = self.pid()
            os.kill(pid, signal.SIGINT)  # the postmaster's fast shutdown
            _wait_gone(pid)


def _wait_gone(pid: int) -> None:
    """Wait for process `pid` (not a child: the postmaster) to exit, on its /proc entry."""
    import select

    with contextlib.suppress(ProcessLookupError, OSError):
        fd = os.pidfd_open(pid)
        try:
            select.select([fd], [], [])
        finally:
            os.close(fd)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def available() -> bool:
    return (BIN / "initdb").exists()


@contextlib.contextmanager
def server() -> Iterator[Server]:
    """Start a server in a directory of its own (0755, outside pytest's 0700 base), and stop it after."""
    directory = Path(tempfile.mkdtemp(prefix="cobalt-pg-", dir="/tmp"))
    directory.chmod(0o755)
    run_as: list[str] = []
    if os.geteuid() == 0:
        run_as = ["runuser", "-u", "postgres", "--"]
        shutil.chown(directory, "postgres", "postgres")
    password = secrets.token_hex(12)
    pwfile = directory / "pw"
    pwfile.write_text(password + "\n")
    if run_as:
        shutil.chown(pwfile, "postgres", "postgres")
    subprocess.run([*run_as, str(BIN / "initdb"), "-D", str(directory / "data"), "-U", USER,
                    "--auth=scram-sha-256", f"--pwfile={pwfile}", "-E", "UTF8", "--no-sync"],
                   check=True, capture_output=True, text=True)
    pwfile.unlink()
    found = Server(_free_port(), password, directory, run_as)
    found.start()
    try:
        yield found
    finally:
        found.stop()
        shutil.rmtree(directory, ignore_errors=True)


@pytest.fixture(scope="session")
def pg_server() -> Iterator[Server]:
    """The session's Postgres server (skipped where the system has no Postgres binaries)."""
    if not available():
        pytest.skip(f"no Postgres binaries in {BIN} (apt-get install postgresql)")
    with server() as running:
        yield running


@pytest.fixture(scope="module")
def pg_url(pg_server: Server, request: pytest.FixtureRequest) -> str:
    """A fresh database for the test module: its URL, password included."""
    name = "t_" + request.module.__name__.rsplit(".", 1)[-1].lower()[:40] + "_" + secrets.token_hex(3)
    return pg_server.create_database(name)
