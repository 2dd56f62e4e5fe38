"""The leak scan: a real project runs with every kind of secret the process holds (an API key, a `base_url` query
key with `+` in it, a proxy's credentials, an OTLP endpoint's `?token=`), against a judge and a proxy that echo
them back; then every file under the project (`.cobalt/`, Dagster's storage), every table of the store through
SQL, the commands' stdout and stderr, a page and an MCP answer are searched for each secret in every encoding
it could come back in. Zero hits."""

from __future__ import annotations

import base64
import json
import os
import socket
import subprocess
import sys
import urllib.request
from pathlib import Path
from urllib.parse import quote, quote_plus

import duckdb
import pytest
from conftest import TEST_KEY
from fakellm import FakeLLM
from http_world import counting_proxy
from mcp import Client, StdioServerParameters

from cobalt_lib import load_config
from cobalt_lib.pages import PagesServer

COBALT = str(Path(sys.executable).parent / "cobalt")
QUERY_KEY = "SECRET+query+key/27182"  # `+` as written in the URL: a server decodes it as a space
PROXY_USER, PROXY_PASSWORD = "puser", "SECRET-proxy-pw-16180"
OTLP_TOKEN = "SECRET-otlp-token-14142"

EXPERIMENT = '''
from cobalt_lib import Dataset, Evaluator, experiment

experiment("leaky", Dataset([{"input": "ECHO-ERROR q0"}, {"input": "q1"}, {"input": "q2"}]),
           lambda ctx: "an answer", evaluators=[Evaluator(name="judge", prompt="Rate {{output}} for {{input}}")])
'''


def encodings(secret: str) -> set[str]:
    """How a secret can come back: as written, decoded, percent- and form-encoded, JSON-escaped, base64."""
    values = {secret, secret.replace("+", " ")}
    found = set()
    for value in values:
        found |= {value, quote(value, safe=""), quote(value), quote_plus(value), json.dumps(value)[1:-1],
                  base64.b64encode(value.encode()).decode()}
    return found


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def hits(text: str, secrets: set[str]) -> list[str]:
    return sorted(s for s in secrets if s in text)


@pytest.mark.slow
@pytest.mark.timeout(900)  # a run recorded in Dagster as it ends: a minute or more on a loaded machine
@pytest.mark.anyio
async def test_no_secret_leaves_the_process_in_any_encoding(project: Path, llm: FakeLLM) -> None:
    llm.echo = True
    (project / "cobalt.toml").write_text('[judge]\nmodel = "gpt-4o-mini"\nmax_retries = 1\nretry_max_seconds = 20\n'
                                         "[traces]\nexport_evaluations = true\n")
    (project / "experiments").mkdir()
    (project / "experiments" / "leaky.cobalt.py").write_text(EXPERIMENT)
    secrets = set()
    for secret in (TEST_KEY, QUERY_KEY, PROXY_PASSWORD, f"{PROXY_USER}:{PROXY_PASSWORD}", OTLP_TOKEN):
        secrets |= encodings(secret)
    otlp_port = closed_port()
    with counting_proxy(forward_credentials=True) as (proxy, seen):
        env = {k: v for k, v in os.environ.items()
               if k not in ("DAGSTER_HOME", "GITHUB_ACTIONS", "NO_PROXY", "no_proxy") and not k.startswith("OTEL_")}
        env.update(OPENAI_API_KEY=TEST_KEY, OPENAI_BASE_URL=f"{llm.openai_url}?key={QUERY_KEY}",
                   HTTP_PROXY=proxy.replace("://", f"://{PROXY_USER}:{PROXY_PASSWORD}@"),
                   OTEL_EXPORTER_OTLP_ENDPOINT=f"http://localhost:{otlp_port}/?token={OTLP_TOKEN}",
                   OTEL_EXPORTER_OTLP_TIMEOUT="4",
                   NO_PROXY="localhost")  # the OTLP exporter goes direct (the judge, on 127.0.0.1, through the proxy)
        printed = ""
        for record in ("inline", "off"):  # inline: through Dagster's event log; the second from the judge cache
            done = subprocess.run([COBALT, "run"], cwd=project, capture_output=True, text=True, timeout=500,
                                  env={**env, "COBALT_DAGSTER_RECORD": record})
            assert done.returncode == 1, done.stderr  # item 0's judge answered 404: an eval-error fails the run
            printed += done.stdout + done.stderr
        # the echoes happened: through the proxy, with its credentials, and the judge saw the query key as written
        assert seen and all(line.startswith("POST http://127.0.0.1:") for line in seen), seen
        sent = llm.requests[0]
        assert sent["headers"]["proxy-authorization"] == "Basic " + base64.b64encode(
            f"{PROXY_USER}:{PROXY_PASSWORD}".encode()).decode()
        assert "Transient error HTTPConnectionPool" in printed, printed  # the SDK did print the endpoint's URL

        async with Client(StdioServerParameters(command=COBALT, args=["mcp"], cwd=str(project), env=env)) as client:
            answer = await client.call_tool("cobalt_results", {"run_id": "latest"})
        mcp_text = json.dumps([c.model_dump() for c in answer.content]) + json.dumps(answer.structured_content)

    assert "you sent POST" in mcp_text and "no model for POST" in mcp_text  # the echoes are there, scrubbed
    assert hits(printed, secrets) == []
    assert hits(mcp_text, secrets) == []
    files = [p for p in project.rglob("*") if p.is_file()]
    assert any(".cobalt/dagster" in p.as_posix() for p in files) and any("cache" in p.as_posix() for p in files)
    leaks = [(str(p.relative_to(project)), s) for p in files for s in secrets if s.encode() in p.read_bytes()]
    assert leaks == []
    con = duckdb.connect(str(project / ".cobalt" / "cobalt.duckdb"), read_only=True)  # DuckDB compresses text
    try:
        tables = [t for (t,) in con.execute("SELECT table_name FROM information_schema.tables").fetchall()]
        stored = json.dumps([con.execute(f'SELECT * FROM "{t}"').fetchall() for t in tables], default=str)
    finally:
        con.close()
    assert "you sent POST" in stored and hits(stored, secrets) == []

    server = PagesServer(load_config(project))
    url = server.start()
    try:
        run_id = json.loads(subprocess.run([COBALT, "history", "--json"], cwd=project, capture_output=True,
                                           text=True, env=env, timeout=120).stdout)[0]["run_id"]
        page = ""
        for path in (f"/runs/{run_id}", f"/api/runs/{run_id}/items", f"/api/runs/{run_id}/items/0"):
            with urllib.request.urlopen(url + path) as response:  # the page, and what its script loads
                page += response.read().decode()
    finally:
        server.stop()
    assert "no model for POST" in page and hits(page, secrets) == []
