"""A run whose process was killed (4 of 30 items done) is never `passed`: not over MCP, not in `cobalt history`,
not on the pages, not in an export (JUnit, Markdown, the GitHub step summary)."""

from __future__ import annotations

import json
import os
import subprocess
import urllib.request
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from mcp import Client, StdioServerParameters
from mcp_project import COBALT, server_env

from cobalt_lib import Store, load_config

pytestmark = [pytest.mark.slow, pytest.mark.anyio]

#: Item 4's agent call kills the process (concurrency 1: items 0-3 are done, 26 never start). The gate would
#: pass on the finished items: a run must not pass on what it has not done.
CRASHY = '''
import os
from cobalt_lib import Dataset, Evaluator, experiment, threshold

def agent(ctx):
    if ctx.index == 4:
        os._exit(9)
    return ctx.item["expected_output"]

experiment("crashy", Dataset([{"input": f"q{i}", "expected_output": f"a{i}"} for i in range(30)]), agent,
           evaluators=[Evaluator(name="exact", type="exact-match")], assertions=[threshold("exact", 0.5)],
           concurrency=1)
'''

#: The lease lasts 1 ms: the killed run has lost it before any reader starts, so it reads `incomplete`.
SHORT_LEASE = {"COBALT_LEASE_SECONDS": "0.001"}


def cobalt(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if k not in ("GITHUB_ACTIONS", "GITHUB_STEP_SUMMARY")}
    return subprocess.run([COBALT, *args], cwd=root, capture_output=True, text=True, timeout=120,
                          env={**clean, **SHORT_LEASE}, stdin=subprocess.DEVNULL)


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
def killed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    root = tmp_path_factory.mktemp("killed") / "proj"
    (root / "experiments").mkdir(parents=True)
    (root / "experiments" / "crashy.cobalt.py").write_text(CRASHY)
    done = cobalt(root, "run", "--no-dagster")
    assert done.returncode == 9, done.stderr
    [run] = Store(root / ".cobalt" / "cobalt.duckdb").runs()
    return root, run["run_id"]


@pytest.fixture(scope="module")
async def client(killed: tuple[Path, str]) -> AsyncIterator[Client]:
    params = StdioServerParameters(command=COBALT, args=["mcp"], cwd=str(killed[0]),
                                   env={**server_env(), **SHORT_LEASE})
    async with Client(params, read_timeout_seconds=120) as served:
        yield served


def _text(result: Any) -> str:
    return "\n".join(getattr(c, "text", "") for c in result.content)


async def test_mcp_results_and_resources_never_say_passed(client: Client, killed: tuple[Path, str]) -> None:
    _, run_id = killed
    listed = await client.call_tool("cobalt_results", {})
    [entry] = (listed.structured_content or {})["runs"]
    assert (entry["status"], entry["passed"]) == ("incomplete", False)
    result = await client.call_tool("cobalt_results", {"run_id": run_id})
    run = (result.structured_content or {})["run"]
    stored = Store(killed[0] / ".cobalt" / "cobalt.duckdb").rows("outputs", run_id)
    assert (run["status"], run["passed"], run.get("items_total", 0)) == ("incomplete", False, len(stored))
    summary = result.content[0].text  # type: ignore[union-attr]
    assert "PASSED" not in summary and "gates not judged" in summary
    assert f"cobalt_run(resume={run_id!r})" in summary
    resource = json.loads((await client.read_resource(f"cobalt://runs/{run_id}")).contents[0].text)  # type: ignore[union-attr]
    assert (resource["status"], resource["passed"]) == ("incomplete", False)
    [latest] = json.loads((await client.read_resource("cobalt://latest-results")).contents[0].text)  # type: ignore[union-attr]
    assert (latest["run_id"], latest["passed"]) == (run_id, False)


def test_history_never_says_passed(killed: tuple[Path, str]) -> None:
    root, run_id = killed
    [entry] = json.loads(cobalt(root, "history", "--json").stdout)
    assert (entry["run_id"], entry["status"], entry["passed"]) == (run_id, "incomplete", False)
    text = cobalt(root, "history").stdout
    assert "incomplete" in text and "passed" not in text


def test_exports_fail_an_incomplete_run(killed: tuple[Path, str]) -> None:
    root, run_id = killed
    junit = cobalt(root, "export", run_id, "--format", "junit").stdout
    assert f'<error message="run {run_id} is incomplete' in junit and 'errors="1"' in junit
    markdown = cobalt(root, "export", run_id, "--format", "markdown").stdout
    assert "### cobalt: crashy — INCOMPLETE" in markdown and "passed" not in markdown.split("\n", 1)[0]


def test_the_github_step_summary_and_annotations_say_incomplete(killed: tuple[Path, str], tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    from cobalt_lib.ci import github_outputs
    from cobalt_lib.store._history import load_report

    root, run_id = killed
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(tmp_path / "summary.md"))
    monkeypatch.setenv("COBALT_LEASE_SECONDS", "0.001")
    report = load_report(Store(root / ".cobalt" / "cobalt.duckdb"), run_id)
    assert report.status == "incomplete" and report.passed is False
    github_outputs([report])
    assert "— INCOMPLETE" in (tmp_path / "summary.md").read_text()
    assert f"::error title=cobalt run incomplete%3A crashy::run {run_id} is incomplete" in capsys.readouterr().out


def test_the_run_page_and_runs_list_say_incomplete(killed: tuple[Path, str], monkeypatch: pytest.MonkeyPatch) -> None:
    from cobalt_lib.pages import PagesServer

    root, run_id = killed
    monkeypatch.setenv("COBALT_LEASE_SECONDS", "0.001")
    server = PagesServer(load_config(root))
    url = server.start()
    try:
        page = urllib.request.urlopen(f"{url}/runs/{run_id}", timeout=30).read().decode()
        runs = urllib.request.urlopen(f"{url}/", timeout=30).read().decode()
    finally:
        server.stop()
    assert '<span class="badge incomplete" id="run-status">incomplete</span>' in page
    assert 'class="badge passed"' not in runs and '<span class="badge incomplete">incomplete</span>' in runs


async def test_a_crashed_run_names_the_resume_call_and_cobalt_run_resume_finishes_it(tmp_path: Path) -> None:
    root = tmp_path / "proj"
    (root / "experiments").mkdir(parents=True)
    # The agent crashes at item 4 until the file `fixed` exists.
    (root / "experiments" / "crashy.cobalt.py").write_text(CRASHY.replace(
        "if ctx.index == 4:", "if ctx.index == 4 and not os.path.exists('fixed'):"))
    store = Store(root / ".cobalt" / "cobalt.duckdb")
    params = StdioServerParameters(command=COBALT, args=["mcp"], cwd=str(root), env=server_env())
    async with Client(params, read_timeout_seconds=120) as served:
        crashed = await served.call_tool("cobalt_run", {"no_dagster": True})
        [first] = store.runs()
        message = _text(crashed)
        assert crashed.is_error and "stopped with exit code 9" in message
        assert f"cobalt_run(resume={first['run_id']!r}) finishes it" in message
        assert "`cobalt run --resume" not in message
        assert cobalt(root, "run", "--no-dagster").returncode == 9  # crashed again, with a lease that is over at once
        (root / "fixed").write_text("")
        resumed = await served.call_tool("cobalt_run", {"resume": "latest", "no_dagster": True})
    assert not resumed.is_error, _text(resumed)
    [run] = (resumed.structured_content or {})["runs"]
    newest = store.runs()[0]
    assert (run["run_id"], run["status"], run["passed"]) == (newest["run_id"], "completed", True)
    assert len(store.rows("outputs", newest["run_id"])) == 30
