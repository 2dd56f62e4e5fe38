"""`cobalt_variants` through the SDK's client (in memory): the grid of a run group, and a bad group said."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fakellm import FakeLLM
from mcp import Client
from variant_project import sweep_project

from cobalt_lib.mcp._server import build_server
from cobalt_lib.ops import RunOptions, Selection, run_experiments
from cobalt_lib.ops._compare import compare_runs

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def test_the_variants_tool_returns_the_group_grid_as_compare_computes_it(project: Path, llm: FakeLLM) -> None:
    config = sweep_project(project, llm)
    reports = run_experiments(config, Selection(), RunOptions(dagster=False)).reports
    async with Client(build_server(project)) as client:
        result = await client.call_tool("cobalt_variants", {"group": reports[2].id})
        missing = await client.call_tool("cobalt_variants", {"group": "g-nothing"})
    assert not result.is_error
    grid = result.structured_content
    assert grid is not None and grid["group_id"] == reports[0].group_id
    [delta] = compare_runs(config, reports[0].id, reports[2].id).comparison.evaluators
    cell = grid["rows"][2]["cells"][0]
    assert (cell["ci_low"], cell["ci_high"], cell["verdict"]) == (delta.ci_low, delta.ci_high, "improved")
    summary = result.content[0].text  # type: ignore[union-attr]
    assert "model=large,prompt=v1" in summary and "better" in summary and "frontier" in summary
    assert json.loads(result.content[1].text)["baseline"] == "model=small,prompt=v1"  # type: ignore[union-attr]
    assert missing.is_error and "No run group has id 'g-nothing'" in missing.content[0].text  # type: ignore[union-attr]


@pytest.mark.slow
async def test_cobalt_run_of_a_group_reports_progress_over_every_variant(project: Path, llm: FakeLLM) -> None:
    sweep_project(project, llm)
    progress: list[tuple[float, float | None, str | None]] = []

    async def heard(done: float, total: float | None, message: str | None) -> None:
        progress.append((done, total, message))

    async with Client(build_server(project)) as client:
        result = await client.call_tool("cobalt_run", {"no_dagster": True}, progress_callback=heard,
                                        read_timeout_seconds=120)
    ran = result.structured_content
    assert ran is not None and len(ran["runs"]) == 4
    done = [p[0] for p in progress]
    assert done == sorted(done) and done[-1] == 24 and {p[1] for p in progress} == {24}  # 4 variants x 6 items
    assert any("[model=large,prompt=v2]" in (p[2] or "") for p in progress)
