"""`cobalt labels import` and `cobalt calibrate` as a user types them, on a real project in tmp_path: labels on
item ids that no run holds are imported, and both commands say how many match no item."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cobalt_lib import load_config
from cobalt_lib.cli import main
from cobalt_lib.ops import RunOptions, Selection, run_experiments

QA = '''
from cobalt_lib import Dataset, Evaluator, experiment
items = [{"id": f"q{i}", "input": f"question {i}", "expected_output": "yes" if i % 2 else "no"} for i in range(6)]
experiment("qa", Dataset(items), lambda ctx: "yes", evaluators=[Evaluator(name="exact", type="exact-match")])
'''


def cobalt(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as exited:
        main(list(args))
    out, err = capsys.readouterr()
    return int(exited.value.code or 0), out, err


def test_labels_on_item_ids_no_run_holds_are_counted_by_import_and_calibrate(
        project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (project / "experiments").mkdir()
    (project / "experiments" / "qa.cobalt.py").write_text(QA, encoding="utf-8")
    [report] = run_experiments(load_config(), Selection(), RunOptions(dagster=False)).reports
    labels = [{"experiment": "qa", "evaluator": "exact", "item_id": f"q{i}", "value": i % 2} for i in range(6)]
    labels.append({"experiment": "qa", "evaluator": "exact", "item_id": "q99", "value": 1})  # a typo of an id
    (project / "labels.jsonl").write_text("".join(json.dumps(line) + "\n" for line in labels), encoding="utf-8")

    code, out, err = cobalt(capsys, "labels", "import", "labels.jsonl")
    assert code == 0, err
    assert "Imported 7 labels from labels.jsonl" in out
    assert err.splitlines() == [
        "warning: 1 of the 7 labels for 'qa' is on an item id no stored run of it holds (q99), matching no item, so "
        "no calibration counts it; check the ids against `cobalt labels export qa` or the dataset's `id` fields."]

    code, out, err = cobalt(capsys, "calibrate", "qa", "--evaluator", "exact")
    assert code == 0, err
    assert "6 labelled of 6 scored items" in out
    assert f"warning: 1 of the 7 labels of 'exact' is on an item id run {report.id} does not hold, so it calibrates " \
           "nothing here: a typo in an id, or items of another dataset (`cobalt labels export qa` lists the labels' " \
           "ids)." in err.splitlines()


FLAT = '''
from cobalt_lib import Dataset, Evaluator, experiment
items = [{"id": f"q{i}", "input": f"question {i}"} for i in range(6)]
experiment("flat", Dataset(items), lambda ctx: "an answer",
           evaluators=[Evaluator(name="quality", type="function", fn=lambda ctx: 0.5)])
'''


def test_an_undefined_spearman_says_why(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (project / "experiments").mkdir()
    (project / "experiments" / "flat.cobalt.py").write_text(FLAT, encoding="utf-8")
    run_experiments(load_config(), Selection(), RunOptions(dagster=False))
    labels = [{"experiment": "flat", "evaluator": "quality", "item_id": f"q{i}", "value": i / 5} for i in range(6)]
    (project / "labels.jsonl").write_text("".join(json.dumps(line) + "\n" for line in labels), encoding="utf-8")
    assert cobalt(capsys, "labels", "import", "labels.jsonl")[0] == 0
    code, out, err = cobalt(capsys, "calibrate", "flat", "--evaluator", "quality")
    assert code == 0, err
    [row] = [line for line in out.splitlines() if "Spearman" in line]
    assert "– (undefined: the judge's scores are all equal (0.50))" in row and "– –" not in row
