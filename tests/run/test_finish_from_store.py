"""Finishing a run from its stored rows, read in chunks: the same report as the library run, flat memory."""

from __future__ import annotations

import json
import tracemalloc
from pathlib import Path

import pytest

from cobalt_lib import Dataset, Evaluator, Store, experiment, load_config, threshold
from cobalt_lib.results import ItemResult, output_row, score_rows
from cobalt_lib.results._report import Evaluation
from cobalt_lib.run import PartitionRun, finish_from_store, prepare
from cobalt_lib.store import stored_item_batches


def _agent(ctx):  # type: ignore[no-untyped-def]
    if ctx.index == 3:
        raise RuntimeError("the agent broke on item 3")
    return ctx.item["expected_output"] if ctx.index % 2 == 0 or ctx.run_index == 1 else "wrong"


def _experiment(size: int = 7):  # type: ignore[no-untyped-def]
    data = Dataset([{"input": f"q{i}", "expected_output": f"a{i}"} for i in range(size)])
    # Evaluators declared out of name order: the report keeps the declared order, the store sorts by name.
    return experiment("chunked", data, _agent, runs=2, evaluators=[
        Evaluator(name="short", type="function", fn=lambda c: float(len(str(c.output)) < 5)),
        Evaluator(name="exact", type="exact-match")], assertions=[threshold("exact", 0.5)])


def test_finish_from_store_gives_the_library_run_s_report(project: Path) -> None:
    config = load_config(project)
    exp = _experiment()
    ran = exp.run(config=config)
    assert ran.results_path is not None
    written = json.loads(Path(ran.results_path).read_text())
    plan = prepare(exp, config, PartitionRun(run_id=ran.id, timestamp=ran.timestamp))
    again = finish_from_store(plan, "completed", chunk=3)  # 14 agent calls: chunks end mid-item
    assert again.summary == ran.summary and again.assertions == ran.assertions
    assert list(again.items) == list(ran.items) and len(again.items) == 14
    assert [list(i.evaluations) for i in again.items] == [["short", "exact"]] * 6 + [[], []] + [
        ["short", "exact"]] * 6  # declared order, not the store's; item 3's two agent calls failed
    rewritten = json.loads(Path(again.results_path or "").read_text())
    assert rewritten["items"] == written["items"] and rewritten["summary"] == written["summary"]
    stored = Store.for_config(config).get_run(ran.id)
    assert stored is not None and (stored["status"], stored["passed"]) == ("completed", ran.passed)


def test_stored_items_are_read_a_chunk_per_connection(project: Path) -> None:
    config = load_config(project)
    ran = _experiment().run(config=config)
    store = Store.for_config(config)
    opened = Store.connections_opened()
    batches = list(stored_item_batches(store, ran.id, 3))
    assert Store.connections_opened() - opened == 5  # 14 rows: 3 + 3 + 3 + 3 + 2, the short one ends it
    assert [len(b) for b in batches] == [3, 3, 3, 3, 2]
    assert [(i.index, i.run_index) for b in batches for i in b] == [(i, r) for i in range(7) for r in range(2)]
    assert [i for b in batches for i in b] == list(ran.items)  # scores joined to the right items
    opened = Store.connections_opened()
    assert [len(b) for b in stored_item_batches(store, ran.id, 7)] == [7, 7]
    assert Store.connections_opened() - opened == 3  # a full last chunk: one more read finds nothing
    assert list(stored_item_batches(store, "no-such-run")) == []
    with pytest.raises(ValueError, match="chunk must be at least 1"):
        next(stored_item_batches(store, ran.id, 0))


def _store_items(store: Store, run_id: str, size: int) -> None:
    """`size` items' outputs and scores written straight to the store, as a run's stages would."""
    for start in range(0, size, 5000):
        items = [ItemResult(index=i, input=f"question {i} " * 8, item={"input": f"question {i} " * 8},
                            output=f"answer {i} " * 20, latency_ms=float(i % 97), status="ok",
                            evaluations={"exact": Evaluation(score=float(i % 2), passed=bool(i % 2),
                                                             reason=f"reason {i} " * 10)})
                 for i in range(start, min(start + 5000, size))]
        store.write({"outputs": [output_row(run_id, i) for i in items],
                     "scores": [r for i in items for r in score_rows(run_id, i)]})


def _peak_finishing(root: Path, size: int) -> int:
    """Python's peak allocation (bytes) while `finish_from_store` finishes a stored run of `size` items."""
    (root / "cobalt.toml").write_text("")
    config = load_config(root)
    exp = experiment(f"big{size}", Dataset([{"input": f"question {i} " * 8} for i in range(size)]),
                     lambda ctx: None, evaluators=[Evaluator(name="exact", type="function", fn=lambda c: 1.0)])
    plan = prepare(exp, config, PartitionRun(run_id=f"r{size}", timestamp="2026-01-01T00:00:00+00:00"))
    store = Store.for_config(config)
    store.start_run({"run_id": plan.run_id, "experiment": exp.name, "started_at": plan.timestamp, "tags": [],
                     "config": {}})
    _store_items(store, plan.run_id, size)
    tracemalloc.start()
    try:
        report = finish_from_store(plan, "completed", chunk=250)  # both runs many chunks long
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert len(report.items) == size and report.summary.scores["exact"].avg == pytest.approx(0.5, abs=1e-3)
    return peak


@pytest.mark.slow
def test_finishing_from_the_store_keeps_memory_flat_in_the_run_s_size(tmp_path: Path) -> None:
    (tmp_path / "small").mkdir()
    (tmp_path / "large").mkdir()
    small = _peak_finishing(tmp_path / "small", 2_000)
    large = _peak_finishing(tmp_path / "large", 20_000)
    # Holding the 18,000 extra items (about 2 KB each as objects) would add some 36 MB; what grows is a
    # few dozen bytes per item of statistics and spill offsets.
    assert large - small < 150 * 18_000, (small, large)  # measured: about 75 bytes per item
