"""`cobalt_datasets` through the SDK's client (in memory) on a real project and store: the versions, one
version's items and a diff, and an unknown version as a tool error naming what the store holds."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from mcp import Client

from cobalt_lib import Store
from cobalt_lib.datasets import push_dataset
from cobalt_lib.mcp._server import build_server

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def test_versions_show_and_diff(project: Path) -> None:
    store = Store(project / ".cobalt" / "cobalt.duckdb")
    for n, name in ((3, "v1.jsonl"), (4, "v2.jsonl")):
        (project / name).write_text("".join(json.dumps({"id": f"q{i}", "input": f"q {i}"}) + "\n" for i in range(n)))
        push_dataset(store, "qa", project / name)
    async with Client(build_server(project)) as client:
        listed = await client.call_tool("cobalt_datasets", {})
        shown = await client.call_tool("cobalt_datasets", {"show": "qa@1", "limit": 2})
        diff = await client.call_tool("cobalt_datasets", {"diff_from": "qa@1", "diff_to": "qa@2"})
        unknown = await client.call_tool("cobalt_datasets", {"show": "qa@7"})
    versions = (listed.structured_content or {})["versions"]
    assert [(v["dataset"], v["version"], v["items"]) for v in versions] == [("qa", 1, 3), ("qa", 2, 4)]
    data = (shown.structured_content or {})["shown"]
    assert [item["id"] for item in data["items"]] == ["q0", "q1"] and data["more"] == 1
    assert diff.content[0].text == "qa@1 -> qa@2: 1 added, 0 removed, 0 changed"  # type: ignore[union-attr]
    assert [e["item_id"] for e in (diff.structured_content or {})["diff"]["added"]] == ["q3"]
    assert unknown.is_error
    assert unknown.content[0].text == (  # type: ignore[union-attr]
        "Error executing tool cobalt_datasets: Dataset 'qa' has no version 7; its versions are 1 to 2.")
