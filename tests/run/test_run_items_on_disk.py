"""A library run keeps its finished items on disk, not in memory: its peak memory is flat in the number
of items, and its report, results file, gates and failures behave as when it kept them in a list."""

from __future__ import annotations

import gc
import json
import tracemalloc
from pathlib import Path
from typing import Any

import pytest

from cobalt_lib import (
    Assertion,
    AssertionResult,
    Dataset,
    Evaluator,
    ExperimentReport,
    Store,
    define_config,
    experiment,
)
from cobalt_lib.results import read_results
from cobalt_lib.results._spill import StoredItems
from cobalt_lib.store import load_report


async def _answer(ctx: Any) -> str:
    return f"the answer to {ctx.input} " * 3


async def _score(ctx: Any) -> float:
    return 0.75


def _experiment(n: int, **options: Any) -> Any:
    return experiment("disk", Dataset([{"input": f"question {i}", "expected_output": "x"} for i in range(n)]),
                      _answer, evaluators=[Evaluator(name=f"e{k}", type="function", fn=_score) for k in range(3)],
                      **options)


def _memory(tmp_path: Path, n: int) -> tuple[int, int]:
    """Bytes allocated at the run's peak, and still allocated after it with its report alive."""
    config = define_config(output_dir=str(tmp_path / str(n)), cache={"enabled": False})
    exp = _experiment(n)
    tracemalloc.start()
    try:
        before, _ = tracemalloc.get_traced_memory()
        report = exp.run(config=config)
        gc.collect()
        kept, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert len(report.items) == n and report.summary.ok == n
    return peak - before, kept - before


def test_memory_of_a_run_is_flat_in_its_number_of_items(tmp_path: Path) -> None:
    _memory(tmp_path, 20)  # imports, the store's schema: once
    (small_peak, small_kept), (large_peak, large_kept) = _memory(tmp_path, 300), _memory(tmp_path, 1200)
    # In a list the items took about 8 KB each, to the end of the run and after it with the report;
    # now a few dozen bytes each stay (the tally the summary is computed from, the items' offsets).
    assert (large_kept - small_kept) / 900 < 1000, f"{(large_kept - small_kept) / 900:.0f} bytes kept per item"
    # The peak also holds the store writer's queue, rows of items not yet written, which a trivial
    # agent outruns (up to about 2.5 KB an item): a looser bound, still far under 8 KB.
    assert (large_peak - small_peak) / 900 < 5000, f"{(large_peak - small_peak) / 900:.0f} bytes per item at the peak"


class ItemsSeen(Assertion):
    """A user's own gate that reads the items, as gates written before the items moved to disk do."""

    name = "items seen"

    def evaluate(self, report: ExperimentReport, config: Any) -> list[AssertionResult]:
        keys = [(item.index, item.run_index) for item in report.items]
        last = report.items[-1]
        ok = (len(report.items) == 6 and keys == sorted(keys) and last.index == 2
              and report.items[0].evaluations["e0"].score == 0.75 and len(report.items[1:4]) == 3)
        return [AssertionResult(name=self.name, passed=ok, message=f"{len(report.items)} items, last #{last.index}")]


def test_a_runs_report_reads_its_items_from_disk_as_the_results_file_holds_them(tmp_path: Path) -> None:
    config = define_config(output_dir=str(tmp_path), cache={"enabled": False})
    report = _experiment(3, runs=2, assertions=[ItemsSeen()]).run(config=config)
    assert isinstance(report.items, StoredItems)
    assert report.assertions[0].name == "items seen" and report.passed
    assert report.assertions[0].message == "6 items, last #2"
    saved = read_results(report.results_path or "")
    assert saved.items == report.items and len(saved.items) == 6
    assert saved == report  # the whole report, items included
    assert json.loads(report.model_dump_json()) == json.loads(Path(report.results_path or "").read_text())
    assert report.model_dump()["items"][5]["run_index"] == 1
    assert sorted(p.name for p in (tmp_path / "results").iterdir()) == [Path(report.results_path or "").name]
    Path(report.results_path or "").unlink()
    assert report.items[0].output == "the answer to question 0 " * 3  # its own copy, not the results file


class Broken:
    """An observer that fails after three items: the run stops with an error that is not an interrupt."""

    def __init__(self) -> None:
        self.seen = 0

    def on_start(self, plan: Any) -> None: ...

    def on_item(self, item: Any) -> None:
        self.seen += 1
        if self.seen == 3:
            raise RuntimeError("the observer broke")

    def on_finish(self, report: Any) -> None: ...


def test_a_run_that_fails_midway_keeps_every_finished_item_and_leaves_no_spill_behind(tmp_path: Path) -> None:
    config = define_config(output_dir=str(tmp_path), cache={"enabled": False})
    exp = _experiment(40, concurrency=1)
    with pytest.raises(RuntimeError, match="the observer broke"):
        exp.run(config=config, observer=Broken())
    store = Store.for_config(config)
    report = load_report(store, store.runs("disk")[0]["run_id"])
    assert report is not None and report.status == "incomplete"
    finished = [i.index for i in report.items]  # the three seen, and any that finished as the run stopped
    assert len(finished) >= 3 and finished == sorted(set(finished)) and report.summary.total_runs == len(finished)
    assert read_results(report.results_path or "").items == report.items
    assert [p.name for p in (tmp_path / "results").iterdir()] == [Path(report.results_path or "").name]
