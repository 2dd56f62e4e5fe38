"""`cobalt import inspect LOG`: an Inspect AI log (written by inspect_ai 0.3.285 itself: fixtures/inspect/
make_logs.py) as a completed run in history, its samples the items and its scorers the evaluators."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from imports_world import FIXTURES, cobalt

from cobalt_lib import Store

LOG = FIXTURES / "inspect" / "capitals.json"


def test_a_log_becomes_a_run_in_history_with_its_samples_and_scores(
        project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    shutil.copy(LOG, project / "capitals.json")
    code, out, err = cobalt(capsys, "import", "inspect", "capitals.json")
    assert code == 0, err
    assert out.splitlines() == ["recorded run inspect-HCyvdMrA3WsLuqhFFsyQP6: capitals, 3 samples of "
                                "mockllm/model from capitals.json", "next: cobalt history"]
    store = Store(project / ".cobalt" / "cobalt.duckdb")
    [run] = store.runs()
    assert (run["run_id"], run["experiment"], run["status"]) == ("inspect-HCyvdMrA3WsLuqhFFsyQP6", "capitals",
                                                                 "completed")
    outputs = sorted(store.rows("outputs", run["run_id"]), key=lambda r: r["item_index"])
    assert [(o["item_id"], o["output"]) for o in outputs] == [("fr", "Paris"), ("jp", "Kyoto"), ("it", "Rome.")]
    scores = {(s["item_index"], s["evaluator"]): s["score"] for s in store.rows("scores", run["run_id"])}
    assert scores == {(0, "includes"): 1.0, (0, "match"): 1.0, (1, "includes"): 0.0, (1, "match"): 0.0,
                      (2, "includes"): 1.0, (2, "match"): 1.0}  # Inspect's C and I grades
    assert store.evaluator_means([run["run_id"]])[run["run_id"]]["match"] == pytest.approx(2 / 3)
    code, out, err = cobalt(capsys, "history", "--json")
    assert code == 0, err
    [listed] = json.loads(out)
    assert (listed["run_id"], listed["status"]) == ("inspect-HCyvdMrA3WsLuqhFFsyQP6", "completed"), listed
    code, _, err = cobalt(capsys, "import", "inspect", "capitals.json")
    assert (code, err) == (2, "error: capitals.json was imported before, as run inspect-HCyvdMrA3WsLuqhFFsyQP6; "
                              "nothing written.\n")


def test_a_zstd_archive_says_how_to_convert_it(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = cobalt(capsys, "import", "inspect", str(FIXTURES / "inspect" / "capitals.eval"))
    assert code == 2
    assert err.splitlines()[1] == ("  - capitals.eval: is compressed with zstd, which this Python cannot unpack; "
                                   "convert it first: inspect log convert capitals.eval --to json --output-dir DIR")
    assert not (project / ".cobalt").exists()
