"""`cobalt mcp --http` needs a bearer token, on loopback too (any local user can reach loopback), and keeps its
Host and Origin checks for its own port (issue 22, finding 13; issue 33, item 13). Through the SDK's client over
HTTP, and as another Unix user.

The "outside" address is 127.0.0.2: not one of the loopback names the server trusts (127.0.0.1,
localhost, ::1), so it is served as any other address would be, yet no other machine can reach it."""

from __future__ import annotations

import os
import re
import subprocess
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp_project import COBALT, anyio_backend  # noqa: F401  (anyio_backend: fixture)

pytestmark = [pytest.mark.anyio, pytest.mark.slow]
INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}
HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


@dataclass
class Server:
    process: subprocess.Popen[str]
    stderr: list[str] = field(default_factory=list)
    url: str = ""
    ready: threading.Event = field(default_factory=threading.Event)

    def read(self) -> None:
        assert self.process.stderr is not None
        for line in self.process.stderr:
            self.stderr.append(line)
            found = re.search(r"at (http://[^ ]+/mcp)", line)
            if found:
                self.url = found.group(1)
            if self.url and "Bearer" in line:
                self.ready.set()
        self.ready.set()

    @property
    def token(self) -> str:
        found = re.search(r"Bearer ([A-Za-z0-9_-]{40,})'", "".join(self.stderr))
        assert found, "".join(self.stderr)
        return found.group(1)


Start = Callable[..., "Server"]


@pytest.fixture
def start(tmp_path: Path) -> Iterator[Start]:
    (tmp_path / "cobalt.toml").write_text("")
    started: list[Server] = []

    def run(host: str, **env: str) -> Server:
        process = subprocess.Popen([COBALT, "mcp", "--http", "--host", host, "--port", "0"], cwd=tmp_path, text=True,
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, env={**os.environ, **env})
        server = Server(process)
        started.append(server)
        threading.Thread(target=server.read, daemon=True).start()
        assert server.ready.wait(60) and server.url, "".join(server.stderr)
        return server

    yield run
    for server in started:
        server.process.terminate()
        server.process.wait(30)


def _client(url: str, token: str | None = None) -> Client:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    return Client(streamable_http_client(url, http_client=httpx2.AsyncClient(headers=headers, timeout=30)))


async def test_off_loopback_the_sdk_client_needs_the_printed_token(start: Start) -> None:
    server = start("127.0.0.2")
    assert server.url.startswith("http://127.0.0.2:")
    text = "".join(server.stderr)
    assert "binding 127.0.0.2, not 127.0.0.1" in text and text.count(server.token) == 1  # printed once
    async with _client(server.url, server.token) as client:
        assert "cobalt_query" in {t.name for t in (await client.list_tools()).tools}
    for token in (None, "x" * 43, server.token[:-1]):
        with pytest.raises(Exception):  # noqa: B017  (the SDK wraps the 401 in its own error types)
            async with _client(server.url, token) as client:
                await client.list_tools()
        raw = httpx.post(server.url, json=INIT, headers={**HEADERS, **({"Authorization": f"Bearer {token}"}
                                                                      if token else {})}, timeout=10)
        assert raw.status_code == 401 and raw.headers["www-authenticate"].startswith("Bearer")
        assert "initialize" not in raw.text and "protocolVersion" not in raw.text


async def test_off_loopback_host_and_origin_are_still_checked(start: Start) -> None:
    server = start("127.0.0.2")
    auth = {**HEADERS, "Authorization": f"Bearer {server.token}"}
    port = server.url.split(":")[2].split("/")[0]
    own = httpx.post(server.url, json=INIT, headers=auth, timeout=10)
    assert own.status_code == 200 and "protocolVersion" in own.text
    rebound = httpx.post(server.url, json=INIT, headers={**auth, "Host": f"evil.example:{port}"}, timeout=10)
    assert rebound.status_code == 421 and "protocolVersion" not in rebound.text
    foreign = httpx.post(server.url, json=INIT, headers={**auth, "Origin": "http://evil.example"}, timeout=10)
    assert foreign.status_code == 403 and "protocolVersion" not in foreign.text
    other_port = httpx.post(server.url, json=INIT, headers={**auth, "Host": f"127.0.0.2:{int(port) + 1}"}, timeout=10)
    assert other_port.status_code == 421


async def test_a_token_from_the_environment_is_never_printed_and_works(start: Start) -> None:
    secret = "s3cret-token-from-the-environment"
    server = start("127.0.0.2", COBALT_MCP_TOKEN=secret)
    assert secret not in "".join(server.stderr) and "$COBALT_MCP_TOKEN" in "".join(server.stderr)
    async with _client(server.url, secret) as client:
        assert (await client.list_tools()).tools


async def test_on_loopback_the_token_kept_in_a_file_of_the_users_alone_is_needed_too(start: Start,
                                                                                     tmp_path: Path) -> None:
    server = start("127.0.0.1")
    kept = tmp_path / ".cobalt" / "mcp-token"
    assert kept.read_text().strip() == server.token and kept.stat().st_mode & 0o777 == 0o600
    raw = httpx.post(server.url, json=INIT, headers=HEADERS, timeout=10)
    assert raw.status_code == 401 and "protocolVersion" not in raw.text
    async with _client(server.url, kept.read_text().strip()) as client:  # as the user's own client reads it
        assert (await client.list_tools()).tools
    port = int(server.url.split(":")[2].split("/")[0])
    auth = {**HEADERS, "Authorization": f"Bearer {server.token}"}
    rebound = httpx.post(server.url, json=INIT, headers={**auth, "Host": f"localhost:{port + 1}"}, timeout=10)
    assert rebound.status_code == 421  # the SDK's own check accepted any port
    again = start("127.0.0.1")  # the next start keeps the token (clients stay configured) and does not print it
    assert server.token not in "".join(again.stderr) and str(kept) in "".join(again.stderr)
    async with _client(again.url, server.token) as client:
        assert (await client.list_tools()).tools
    kept.chmod(0o644)
    done = subprocess.run([COBALT, "mcp", "--http", "--port", "0"], cwd=tmp_path, capture_output=True, text=True,
                          timeout=300)  # a refusal before serving: the import of the SDK alone is slow under load
    assert done.returncode == 2 and "may be read by other users (mode 644)" in done.stderr, done.stderr


#: What the other user runs (the system's Python and its standard library: the project's venv lives under
#: /root, which no other user may enter): each answer's status, and whether the token file could be read.
PROBE = """
import json, sys, urllib.error, urllib.request
url, token_file, pages, init, headers = sys.argv[1:6]

def status(request):
    try:
        with urllib.request.urlopen(request, timeout=30) as answer:
            return answer.status
    except urllib.error.HTTPError as refused:
        return refused.code

found = {"mcp": status(urllib.request.Request(url, data=init.encode(), headers=json.loads(headers)))}
try:
    open(token_file).read()
    found["token_file"] = "read"
except PermissionError:
    found["token_file"] = "refused"
found["csrf"] = status(pages + "/api/csrf")
label = json.dumps({"evaluator": "e", "value": 1}).encode()
found["label"] = status(urllib.request.Request(pages + "/api/runs/r/items/0/label", data=label, headers={
    "Origin": pages, "X-CSRF-Token": "guess", "Content-Type": "application/json"}))
print(json.dumps(found))
"""


def test_another_unix_user_cannot_drive_the_loopback_servers(start: Start, tmp_path: Path) -> None:
    """As root: a throwaway user, made and deleted here, probes `cobalt mcp --http` and the pages on loopback."""
    import shutil
    import tempfile

    if os.geteuid() != 0 or shutil.which("useradd") is None:
        pytest.skip("making another Unix user needs root and useradd")
    from cobalt_lib import load_config
    from cobalt_lib.pages import PagesServer

    server = start("127.0.0.1")
    pages = PagesServer(load_config(tmp_path))
    pages_url = pages.start()
    user = f"cobalt-probe-{os.getpid()}"
    shared = Path("/nonexistent")
    subprocess.run(["useradd", "--no-create-home", "--shell", "/usr/sbin/nologin", user], check=True)
    try:
        import json

        shared = Path(tempfile.mkdtemp(prefix="cobalt-probe-"))  # pytest's own directories are root's alone
        shared.chmod(0o755)
        probe = shared / "probe.py"
        probe.write_text(PROBE)
        probe.chmod(0o644)
        done = subprocess.run(["runuser", "-u", user, "--", "/usr/bin/python3", str(probe), server.url,
                               str(tmp_path / ".cobalt" / "mcp-token"), pages_url, json.dumps(INIT),
                               json.dumps(HEADERS)], capture_output=True, text=True, timeout=120, cwd="/")
        assert done.returncode == 0, done.stderr
        found = json.loads(done.stdout)
    finally:
        pages.stop()
        subprocess.run(["userdel", user], check=False)
        shutil.rmtree(shared, ignore_errors=True)
    assert found == {"mcp": 401, "token_file": "refused", "csrf": 403, "label": 403}, found


def test_a_short_token_in_the_environment_is_a_usage_error(tmp_path: Path) -> None:
    (tmp_path / "cobalt.toml").write_text("")
    done = subprocess.run([COBALT, "mcp", "--http", "--host", "127.0.0.2", "--port", "0"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=60, env={**os.environ, "COBALT_MCP_TOKEN": "short"})
    assert done.returncode == 2 and "COBALT_MCP_TOKEN must be at least 16" in done.stderr and done.stdout == ""
    assert "Traceback" not in done.stderr


def test_the_host_names_accepted_for_each_bind(monkeypatch: pytest.MonkeyPatch) -> None:
    import socket

    from cobalt_lib.mcp._http_guard import host_names, security_settings

    monkeypatch.setenv("COBALT_MCP_HOSTS", "evals.internal, box.lan")
    everywhere = host_names("0.0.0.0")
    assert everywhere[:3] == ["127.0.0.1", "localhost", "[::1]"]
    assert {socket.gethostname(), "evals.internal", "box.lan"} <= set(everywhere)
    assert host_names("10.1.2.3") == ["127.0.0.1", "localhost", "[::1]", "10.1.2.3"]  # the env names: wildcard only
    assert host_names("fd00::1")[-1] == "[fd00::1]"
    settings = security_settings("127.0.0.1", 8765)
    assert settings.enable_dns_rebinding_protection and settings.allowed_hosts == [
        "127.0.0.1:8765", "localhost:8765", "[::1]:8765"]
    assert settings.allowed_origins == ["http://127.0.0.1:8765", "http://localhost:8765", "http://[::1]:8765"]

