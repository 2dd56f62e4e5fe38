"""A run's items on disk (`ItemSpill`, `StoredItems`) and the results file written from them item by item."""

from __future__ import annotations

import copy
import json
import pickle
import re
from pathlib import Path

import pytest

from cobalt_lib.results import ExperimentReport, read_results, write_results
from cobalt_lib.results._report import AssertionResult, Evaluation, ItemResult, Summary
from cobalt_lib.results._results_file import results_json
from cobalt_lib.results._spill import ItemSpill, StoredItems


def _items() -> list[ItemResult]:
    """Finished out of order, with every field kind a results file holds: nested, unicode, newlines, None."""
    def ev(score: float | None, **kw: object) -> Evaluation:
        return Evaluation(score=score, passed=None if score is None else score >= 0.5, **kw)  # type: ignore[arg-type]

    return [
        ItemResult(index=2, run_index=1, input={"q": "ünïcode ✓", "n": [1, 2.5, None]},
                   output="multi\nline\t\"quoted\"",
                   item={"input": "x", "expected_output": {"a": []}}, metadata={"nested": {"deep": {}}},
                   latency_ms=12.25, tokens=7, cost_usd=1e-05,
                   evaluations={"judge": ev(0.75, reason="ok\nfine", judge_model="m", judge_calls=1, input_tokens=3)}),
        ItemResult(index=0, status="error", error="ValueError: boom", traceback="Traceback...\n  line 1"),
        ItemResult(index=2, run_index=0, output=None, latency_ms=3.0,
                   evaluations={"judge": ev(None, status="eval-error", error="no JSON"),
                                "exact": ev(1.0, cached=True)}),
        ItemResult(index=1, status="timeout", latency_ms=10_000.0, error="the agent did not answer within 10 s"),
    ]


def _stored(tmp_path: Path, items: list[ItemResult]) -> StoredItems:
    spill = ItemSpill(tmp_path / "results")
    for item in items:
        spill.append(item)
    assert len(spill) == len(items)
    return spill.items()


def test_stored_items_behave_as_the_sorted_list_of_the_same_items(tmp_path: Path) -> None:
    items = _items()
    expected = sorted(items, key=lambda i: (i.index, i.run_index))
    stored = _stored(tmp_path, items)
    assert len(stored) == 4 and bool(stored)
    assert [(i.index, i.run_index) for i in stored] == [(0, 0), (1, 0), (2, 0), (2, 1)]
    assert list(stored) == expected  # every field of every item, back from disk
    assert stored[0] == expected[0] and stored[-1] == expected[-1] and stored[-4] == expected[0]
    assert stored[1:3] == expected[1:3] and stored[::-1] == expected[::-1] and stored[5:] == []
    with pytest.raises(IndexError):
        stored[4]
    with pytest.raises(IndexError):
        stored[-5]
    assert stored == expected and expected == stored and stored != expected[:3]
    assert stored.index(expected[2]) == 2 and expected[3] in stored
    # read-only: a change to a fresh copy could not stick, so it is refused with the way to get a changed copy
    message = ("report.items[...].error cannot be set: a run's items are read back from its results on each access, "
               "so the change would be lost; make a changed copy with item.model_copy(update={'error': ...}).")
    with pytest.raises(AttributeError, match=f"^{re.escape(message)}$"):
        stored[0].error = "changed"
    with pytest.raises(TypeError, match=r"^report\.items cannot be changed"):
        stored[0] = expected[0]  # type: ignore[index]
    assert stored[0].model_copy(update={"error": "changed"}).error == "changed"
    assert stored[0].error == "ValueError: boom" and stored[0] is not stored[0]
    # nothing named is left in the results directory: the spill file is unlinked from the start
    assert list((tmp_path / "results").iterdir()) == []


def test_stored_items_pickle_copy_and_serialise_as_a_plain_list(tmp_path: Path) -> None:
    items = _items()
    stored = _stored(tmp_path, items)
    assert pickle.loads(pickle.dumps(stored)) == list(stored)
    assert copy.deepcopy(stored) is stored and copy.copy(stored) is stored
    report = _report([])
    report.items = stored
    in_memory = _report(sorted(items, key=lambda i: (i.index, i.run_index)))
    # pydantic goes through the field serializer: every item, no warning, no empty list
    assert report.model_dump() == in_memory.model_dump()
    assert report.model_dump_json() == in_memory.model_dump_json()
    assert report.model_dump(mode="json")["items"][0]["error"] == "ValueError: boom"
    assert report.model_copy(deep=True) == in_memory
    assert ExperimentReport.model_validate_json(report.model_dump_json()) == in_memory
    assert "StoredItems(4 items)" in repr(report)


def _report(items: list[ItemResult]) -> ExperimentReport:
    return ExperimentReport(
        id="abc123", name="demo ✓", timestamp="2026-11-23T10:00:00+00:00", status="incomplete", tags=["t"],
        config={"items": [], "nested": {"items": []}}, summary=Summary(total_items=3, ok=1, scores={}),
        items=items, assertions=[AssertionResult(name="g", passed=False, message="line\nbreak")])


@pytest.mark.parametrize("on_disk", [True, False])
def test_the_results_file_is_byte_for_byte_the_report_json(tmp_path: Path, on_disk: bool) -> None:
    items = _items()
    ordered = sorted(items, key=lambda i: (i.index, i.run_index))
    expected = _report(ordered).model_dump_json(indent=2)
    report = _report([])
    report.items = _stored(tmp_path, items) if on_disk else ordered
    path = write_results(report, tmp_path / "out")
    assert report.results_path == str(path)
    assert path.read_text(encoding="utf-8") == _report_with_path(expected, str(path))
    assert read_results(path).items == ordered
    assert [p.name for p in path.parent.iterdir()] == [path.name]  # no temporary file left behind


def _report_with_path(text: str, path: str) -> str:
    return text.replace('"results_path": null', f'"results_path": {json.dumps(path)}')


def test_a_report_without_items_is_written_as_before(tmp_path: Path) -> None:
    report = _report([])
    report.items = _stored(tmp_path, [])
    assert b"".join(results_json(report)).decode() == _report([]).model_dump_json(indent=2)


def test_a_failed_write_leaves_no_half_item_in_the_spill(tmp_path: Path) -> None:
    items = _items()
    spill = ItemSpill(tmp_path)
    spill.append(items[0])

    class Full:
        def __getattr__(self, name: str) -> object:
            return getattr(real, name)

        def write(self, data: bytes) -> int:
            real.write(data[:10])
            raise OSError(28, "No space left on device")

    real = spill._file
    spill._file = Full()  # type: ignore[assignment]
    with pytest.raises(OSError, match="No space"):
        spill.append(items[1])
    spill._file = real
    spill.append(items[2])
    assert list(spill.items()) == [items[2], items[0]]
