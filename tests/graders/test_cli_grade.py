"""`cobalt grade` as a process: the `--json` shape, and bad input as one line with exit code 2."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from grading_setup import grading_project  # noqa: F401  (the `grading` fixture)

COBALT = [str(Path(sys.executable).parent / "cobalt")]

pytestmark = pytest.mark.slow  # `cobalt grade` as a process


def _cobalt(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*COBALT, *args], cwd=root, capture_output=True, text=True, timeout=60)


def test_grade_json_and_bad_input(grading: Path) -> None:
    done = _cobalt(grading, "grade", "--input", "samples.jsonl", "--grader", "graders/numbers.py", "--model",
                   "openai/agree", "--model", "openai/off", "--iterations", "2", "--json")
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert {"run_id", "grader_hash", "results", "calibration", "panel", "agreement"} <= set(data)
    assert set(data["calibration"]) == {"openai/agree", "openai/off"} and len(data["results"]) == 40
    assert set(data["results"][0]) >= {"model", "id", "iteration", "score", "latency_ms", "raw_output", "output",
                                       "sample_metadata"}
    agree = data["calibration"]["openai/agree"]
    assert agree["exact_match_rate"] == 1.0 and agree["weighted_kappa"] == 1.0 and agree["coverage"]["errors"] == 0
    assert data["panel"]["model"] == "panel" and len(data["grader_hash"]) == 64
    assert Path(data["results_path"]).is_file()

    bad = _cobalt(grading, "grade", "--input", "samples.jsonl", "--grader", "graders/numbers.py", "--model", "gpt-4o")
    assert bad.returncode == 2 and bad.stderr.strip() == (
        "error: Model 'gpt-4o' must be provider/name, e.g. openai/gpt-4o or anthropic/claude-sonnet-4-5.")


def test_grade_exits_1_when_no_answer_was_usable_and_its_stored_run_failed(grading: Path) -> None:
    from cobalt_lib import load_config
    from cobalt_lib.ops import run_history

    done = _cobalt(grading, "grade", "--input", "samples.jsonl", "--grader", "graders/numbers.py", "--model",
                   "openai/garbage", "--json")
    assert done.returncode == 1, done.stderr
    data = json.loads(done.stdout)
    assert data["passed"] is False and data["calibration"]["openai/garbage"]["coverage"]["graded"] == 0
    [entry] = run_history(load_config(grading))
    assert (entry.run_id, entry.verdict) == (data["run_id"], "FAILED")
    assert done.stderr.strip().endswith(
        f"error: grading run {data['run_id']} FAILED: evaluator 'openai/garbage' scored none of the 10 items: "
        + data["results"][0]["error"].splitlines()[0])


def test_the_headline_counts_agree_with_their_nouns(grading: Path) -> None:
    done = _cobalt(grading, "grade", "--input", "samples.jsonl", "--grader", "graders/numbers.py", "--model",
                   "openai/agree")
    assert done.returncode == 0, done.stderr
    assert "Graded 10 samples x 1 model x 1 iteration with numbers #" in done.stdout
