"""`cobalt compare` and `cobalt show` pair and mark items by identity and repeats, as a user runs them:
runs made by `cobalt run` in a subprocess, a real DuckDB store."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import duckdb
import pytest

from cobalt_lib import Store

pytestmark = pytest.mark.slow

COBALT = str(Path(sys.executable).parent / "cobalt")
_DROP = ("GITHUB_ACTIONS", "GITHUB_STEP_SUMMARY", "OPENAI_API_KEY", "ANTHROPIC_API_KEY", "OPENROUTER_API_KEY",
         "INSERT", "RUNS", "IDS", "EDIT", "FLAKY")

# 12 questions. INSERT=1 puts a new question at index 0; IDS=1 gives each item an `id`; EDIT=1 edits item
# q5's expected output (same id); RUNS=n repeats; FLAKY=1 answers q3 wrongly on its first repeat only.
QA = '''
import os
from cobalt_lib import Dataset, Evaluator, experiment

ids = os.environ.get("IDS") == "1"
items = [{**({"id": f"q{i}"} if ids else {}), "input": f"question {i}",
          "expected_output": f"answer {i}" + ("!" if i == 5 and os.environ.get("EDIT") else "")} for i in range(12)]
if os.environ.get("INSERT"):
    items.insert(0, {**({"id": "new"} if ids else {}), "input": "a new question", "expected_output": "new"})


@experiment("qa", Dataset(items), runs=int(os.environ.get("RUNS", "1")),
            evaluators=[Evaluator(name="exact", type="exact-match")])
def agent(ctx):
    if os.environ.get("FLAKY") and ctx.input == "question 3" and ctx.run_index == 0:
        return "wrong"
    return ctx.item["expected_output"].rstrip("!")
'''


def cobalt(project: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if k not in _DROP}
    return subprocess.run([COBALT, *args], cwd=project, capture_output=True, text=True, timeout=120,
                          env={**clean, **env}, stdin=subprocess.DEVNULL)


def run(project: Path, **env: str) -> None:
    result = cobalt(project, "run", "--no-dagster", **env)
    assert result.returncode in (0, 1), result.stdout + result.stderr


def compare_json(project: Path, *extra: str) -> dict[str, Any]:
    result = cobalt(project, "compare", "previous", "latest", "--json", *extra)
    assert result.returncode == 0, result.stdout + result.stderr
    return dict(json.loads(result.stdout))


@pytest.fixture()
def project(tmp_path: Path) -> Path:
    (tmp_path / "experiments").mkdir()
    (tmp_path / "experiments" / "qa.cobalt.py").write_text(QA)
    return tmp_path


def test_an_item_inserted_at_index_0_keeps_every_other_item_paired(project: Path) -> None:
    run(project)
    run(project, INSERT="1")
    c = compare_json(project)
    assert c["paired"] == 12
    assert [(u["index"], u["reason"]) for u in c["unpaired"]] == [(0, "only in B")]
    exact = c["evaluators"][0]
    assert (exact["pairs"], exact["paired_delta"], exact["verdict"]) == (12, 0.0, "no significant change")
    assert c["regressions"] == [] and c["improvements"] == [] and c["status_changes"] == []


def test_items_with_an_id_pair_by_it_when_their_content_changes(project: Path) -> None:
    run(project, IDS="1")
    run(project, IDS="1", INSERT="1", EDIT="1")  # q5's expected output fixed to "answer 5!": the agent now misses it
    c = compare_json(project)
    assert c["paired"] == 12 and [u["item_id"] for u in c["unpaired"]] == ["new"]
    assert [(r["item_id"], r["index"], r["index_a"], r["delta"]) for r in c["regressions"]] == [("q5", 6, 5, -1.0)]
    stored = Store(project / ".cobalt" / "cobalt.duckdb").query(
        "SELECT DISTINCT item_id FROM outputs ORDER BY item_id")
    assert [r["item_id"] for r in stored] == ["new", *sorted(f"q{i}" for i in range(12))]


def test_a_run_with_repeats_pairs_with_one_without_by_the_items_mean(project: Path) -> None:
    run(project)
    run(project, RUNS="3", FLAKY="1")
    c = compare_json(project)
    assert c["paired"] == 12 and c["unpaired"] == []
    exact = c["evaluators"][0]
    assert exact["pairs"] == 12 and exact["paired_delta"] == pytest.approx(-1 / 3 / 12)
    [moved] = c["regressions"]
    assert (moved["index"], moved["score_a"], moved["score_b"], moved["repeats_a"], moved["repeats_b"],
            moved["flaky_b"]) == (3, 1.0, pytest.approx(2 / 3), 1, 3, "2 of 3 passed")
    assert c["flaky"] == [{"index": 3, "item_id": moved["item_id"], "a": None, "b": "2 of 3 passed"}]
    text = cobalt(project, "compare", "previous", "latest")
    assert "item 3 (flaky in B: 2 of 3 passed) exact 1.000 -> 0.667" in text.stdout
    assert "item 3 flaky: B 2 of 3 passed" in text.stdout


def test_show_marks_flaky_items_and_numbers_repeats_as_index_colon_run_index(project: Path) -> None:
    run(project, RUNS="3", FLAKY="1")
    shown = cobalt(project, "show", "latest")
    assert shown.returncode == 0, shown.stderr
    lines = [line.split() for line in shown.stdout.splitlines()]
    rows = {cells[0]: cells for cells in lines if cells and cells[0][:1].isdigit()}
    assert set(rows) == {f"{i}:{r}" for i in range(12) for r in range(3)}
    assert rows["3:0"][1:4] == ["ok", "0.000", "✗"] and rows["3:1"][1:3] == ["ok", "1.000"]
    assert [key for key, cells in rows.items() if "2 of 3 passed" in " ".join(cells)] == ["3:0", "3:1", "3:2"]
    assert "flaky (passed in some repeats, not all): item 3 (2 of 3 passed)" in shown.stdout
    data = json.loads(cobalt(project, "show", "latest", "--json").stdout)
    assert data["flaky"] == {"3": "2 of 3 passed"}
    one = cobalt(project, "show", "latest", "3:0")
    assert one.stdout.splitlines()[2].startswith("item 3:0 (flaky: 2 of 3 passed): ok, ")


def test_a_store_without_the_item_id_column_pairs_by_the_stored_input_hash(project: Path) -> None:
    run(project)
    run(project, INSERT="1")
    path = project / ".cobalt" / "cobalt.duckdb"
    with duckdb.connect(str(path)) as con:  # as an older cobalt wrote it
        con.execute("ALTER TABLE outputs DROP COLUMN item_id")
    for results in (project / ".cobalt" / "results").glob("*.json"):
        results.unlink()  # the store alone: no results file to read the identity from
    c = compare_json(project)
    assert c["paired"] == 12 and [(u["index"], u["reason"]) for u in c["unpaired"]] == [(0, "only in B")]
