"""Discovery, in `cobalt run` and over MCP: one broken experiment file never stops the others (it is reported
in one sentence and the rest run), and a file linked from outside the project is refused however it is asked
for (`file=`, `filter=`, plain discovery)."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from mcp import Client, StdioServerParameters
from mcp_project import COBALT, server_env

from cobalt_lib import Store

pytestmark = [pytest.mark.slow, pytest.mark.anyio]

GOOD = '''
from cobalt_lib import Dataset, Evaluator, experiment
experiment("good", Dataset([{"input": "a", "expected_output": "a"}]), lambda ctx: "a",
           evaluators=[Evaluator(name="exact", type="exact-match")])
'''
LINKED = GOOD.replace('"good"', '"linked"')
BROKEN = {
    "syntax.cobalt.py": "def agent(ctx:\n    return 1\n",
    "importer.cobalt.py": "import cobalt_lib\nimport no_such_module_here\n",
    "raiser.cobalt.py": "x = 1\nraise RuntimeError('the fixture server is down')\n",
    "dataset.cobalt.py": "from cobalt_lib import Dataset\nDataset.from_file('d.jsonl')\n",
}
#: What each broken file's warning names: the file, the line and the error.
SAID = {
    "syntax.cobalt.py": "syntax.cobalt.py, line 1: syntax error",
    "importer.cobalt.py": "importer.cobalt.py, line 2, raised ModuleNotFoundError: No module named "
                          "'no_such_module_here'",
    "raiser.cobalt.py": "raiser.cobalt.py, line 2, raised RuntimeError: the fixture server is down",
    "dataset.cobalt.py": "dataset.cobalt.py did not load: ",
}


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.mktemp("discovery")
    root = base / "proj"
    (root / "experiments").mkdir(parents=True)
    (root / "experiments" / "good.cobalt.py").write_text(GOOD)
    for name, source in BROKEN.items():
        (root / "experiments" / name).write_text(source)
    (root / "d.jsonl").write_text('{"input": 1}\n{"input": \n')
    (base / "elsewhere.cobalt.py").write_text(LINKED)
    (root / "experiments" / "linked.cobalt.py").symlink_to(base / "elsewhere.cobalt.py")
    return root


@pytest.fixture(scope="module")
async def client(root: Path) -> AsyncIterator[Client]:
    params = StdioServerParameters(command=COBALT, args=["mcp"], cwd=str(root), env=server_env())
    async with Client(params, read_timeout_seconds=120) as served:
        yield served


def check_warnings(warnings: list[str], root: Path) -> None:
    """One sentence per broken file naming it and its error, one for the link; nothing else."""
    assert len(warnings) == len(BROKEN) + 1, warnings
    for name, said in SAID.items():
        [line] = [w for w in warnings if said in w and f"experiments/{name}" in w]
        assert line.endswith("; its experiments are skipped, the others run.")
    assert "d.jsonl, line 2: invalid JSON" in next(w for w in warnings if "dataset.cobalt.py" in w)
    [link] = [w for w in warnings if "linked.cobalt.py" in w]
    assert link.startswith("experiments/linked.cobalt.py is a link to ") and "outside the project" in link
    assert all("\n" not in w for w in warnings)


def test_cobalt_run_reports_broken_files_and_runs_the_rest(root: Path) -> None:
    done = subprocess.run([COBALT, "run", "--no-dagster", "--json"], cwd=root, capture_output=True, text=True,
                          timeout=120, env={**os.environ, **server_env()})
    assert done.returncode == 0, done.stderr
    assert [r["name"] for r in json.loads(done.stdout)] == ["good"]
    warnings = [line.removeprefix("warning: ") for line in done.stderr.splitlines() if line.startswith("warning: ")]
    check_warnings(warnings, root)
    assert {r["experiment"] for r in Store(root / ".cobalt" / "cobalt.duckdb").runs()} == {"good"}


async def test_mcp_run_reports_broken_files_and_runs_the_rest(client: Client, root: Path) -> None:
    result = await client.call_tool("cobalt_run", {"no_dagster": True})
    assert not result.is_error, result.content
    data = result.structured_content or {}
    assert [r["experiment"] for r in data["runs"]] == ["good"] and data["passed"] is True
    check_warnings(data["warnings"], root)
    assert "warning: " in result.content[0].text  # type: ignore[union-attr]


async def test_a_link_out_of_the_project_is_refused_by_file_and_by_filter(client: Client) -> None:
    by_file = await client.call_tool("cobalt_run", {"file": "experiments/linked.cobalt.py", "no_dagster": True})
    assert by_file.is_error and "outside the project" in by_file.content[0].text  # type: ignore[union-attr]
    by_filter = await client.call_tool("cobalt_run", {"filter": "linked", "no_dagster": True})
    text = by_filter.content[0].text  # type: ignore[union-attr]
    assert by_filter.is_error and "No experiment name contains 'linked' (filter); found: good." in text
    assert "experiments/linked.cobalt.py is a link to " in text and "outside the project" in text
    catalog = json.loads((await client.read_resource("cobalt://experiments")).contents[0].text)  # type: ignore[union-attr]
    assert [e["name"] for e in catalog["experiments"]] == ["good"]
    assert {b["file"] for b in catalog["broken"]} == {f"experiments/{n}" for n in [*BROKEN, "linked.cobalt.py"]}
