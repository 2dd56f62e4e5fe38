"""A stored run read in bounded memory: its results file's header without the items, and its items
streamed from the store a chunk at a time (what a recording in Dagster reads)."""

from __future__ import annotations

from pathlib import Path

import pytest
from stores import project_store

from cobalt_lib import Dataset, Evaluator, Store, experiment, load_config, read_results
from cobalt_lib.results._results_file import read_header
from cobalt_lib.store import load_report, streamed_report
from cobalt_lib.store._history import CHUNK_ITEMS

#: One chunk and a bit: the stream crosses a chunk boundary.
ITEMS = CHUNK_ITEMS + 150


@pytest.fixture
def stored(project: Path, store_url: str | None) -> tuple[Store, str]:
    data = Dataset([{"input": f"q{i}", "expected_output": f"a{i % 7}"} for i in range(ITEMS)])
    exp = experiment("streamed", data, lambda ctx: f"a{ctx.index % 5}", tags=["t"], evaluators=[
        Evaluator(name="exact", type="exact-match"), Evaluator(name="half", type="function", fn=lambda ctx: 0.5)])
    report = exp.run(config=load_config())
    return project_store(project), report.id


def test_the_header_is_the_file_without_its_items_at_any_block_size(stored: tuple[Store, str]) -> None:
    store, run_id = stored
    path = store.require_run(run_id)["results_path"]
    whole = read_results(path).model_dump()
    whole["items"] = []
    for block in (5, 4096, 1 << 20):  # markers straddling blocks, and the default
        assert read_header(path, block=block).model_dump() == whole


def test_an_empty_run_and_a_cut_file(tmp_path: Path, stored: tuple[Store, str]) -> None:
    store, run_id = stored
    report = read_results(store.require_run(run_id)["results_path"])
    empty = tmp_path / "empty.json"
    empty.write_text(report.model_copy(update={"items": []}).model_dump_json(indent=2))
    assert read_header(empty).summary == report.summary
    cut = tmp_path / "cut.json"
    cut.write_bytes(Path(report.results_path or "").read_bytes()[:5000])
    with pytest.raises(ValueError, match="cut short"):
        read_header(cut)


def test_streamed_items_are_the_stored_items(stored: tuple[Store, str]) -> None:
    store, run_id = stored
    loaded = load_report(store, run_id)
    streamed = streamed_report(store, run_id)
    assert streamed.model_dump(exclude={"items"}) == loaded.model_dump(exclude={"items"})
    assert len(streamed.items) == ITEMS
    assert list(streamed.items) == list(loaded.items)
    assert streamed.items[-1] == loaded.items[-1] and streamed.items[3].output == "a3"
    assert streamed.items[CHUNK_ITEMS - 2:CHUNK_ITEMS + 2] == list(loaded.items[CHUNK_ITEMS - 2:CHUNK_ITEMS + 2])
    assert streamed.items[::-700] == list(loaded.items[::-700])


def test_without_a_results_file_the_header_comes_from_the_rows(stored: tuple[Store, str]) -> None:
    store, run_id = stored
    Path(store.require_run(run_id)["results_path"]).unlink()
    streamed = streamed_report(store, run_id)
    assert streamed.summary.scores["exact"].avg == load_report(store, run_id).summary.scores["exact"].avg
    assert sum(1 for _ in streamed.items) == ITEMS
