"""`cobalt show` as a user types it, over a run made by `cobalt run` (the logic: tests/ops/test_ops_show.py)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

from cobalt_lib import Store

COBALT = str(Path(sys.executable).parent / "cobalt")

# Item 0 answers wrong, `judge` gives item 1 a 0.4 (under its 0.5 pass mark) and an answer's raw text,
# and the agent fails on item 2.
SHOWN = '''
from cobalt_lib import Dataset, Evaluator, EvalResult, experiment

def judge(ctx):
    return {"score": 0.4 if ctx.index == 1 else 0.9, "reason": f"judged item {ctx.index}"}

def agent(ctx):
    if ctx.index == 2:
        raise RuntimeError("agent exploded on item 2")
    return {"output": "wrong" if ctx.index == 0 else ctx.item["expected_output"], "metadata": {"model": "m1"}}

experiment("qa", Dataset([{"input": f"q{i}", "expected_output": f"a{i}"} for i in range(3)]), agent,
           evaluators=[Evaluator(name="exact", type="exact-match"), Evaluator(name="judge", type="function", fn=judge)],
           max_error_rate=0.5)  # item 2's failed call is allowed: the run passes
'''


def cobalt(project: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("GITHUB_ACTIONS", "GITHUB_STEP_SUMMARY")}
    return subprocess.run([COBALT, *args], cwd=project, capture_output=True, text=True, timeout=120, env=env,
                          stdin=subprocess.DEVNULL)


def test_show_prints_the_items_table_one_item_in_full_and_json(project: Path) -> None:
    (project / "experiments").mkdir()
    (project / "experiments" / "qa.cobalt.py").write_text(SHOWN)
    assert cobalt(project, "run", "--ci").returncode == 0
    [run] = Store(project / ".cobalt" / "cobalt.duckdb").runs()
    table = cobalt(project, "show", "latest")
    assert (table.returncode, table.stderr) == (0, "")
    lines = [line.rstrip() for line in table.stdout.splitlines()]
    assert lines[0] == f"run {run['run_id']} (qa, completed, passed): 3 items"
    assert re.split(r"\s{2,}", lines[1].strip()) == ["#", "status", "exact", "judge", "output"]
    rows = [re.split(r"\s{2,}", line.strip()) for line in lines[3:]]
    assert rows == [["0", "ok", "0.000 ✗", "0.900", "wrong"], ["1", "ok", "1.000", "0.400 ✗", "a1"],
                    ["2", "error", "–", "–", "RuntimeError: agent exploded on item 2"]]
    one = cobalt(project, "show", "latest", "1")
    assert one.returncode == 0
    detail = one.stdout.split("\n\n", 1)[1].splitlines()
    assert re.fullmatch(r"item 1: ok, [\d.]+(ms|s)", detail[0])
    assert detail[1:13] == [
        "input:", "  q1", "expected output:", "  a1", "output:", "  a1", "evaluations:",
        "  exact: 1.000 pass (pass mark 0.5)", "    reason:", "      exact match",
        "  judge: 0.400 FAIL (pass mark 0.5)", "    reason:"]
    assert "metadata:\n  {\n    \"model\": \"m1\"\n  }" in one.stdout
    failed = cobalt(project, "show", "latest", "2", "--json")
    data = json.loads(failed.stdout)
    assert [(i["index"], i["status"], i["error"]) for i in data["items"]] == [
        (2, "error", "RuntimeError: agent exploded on item 2")]
    assert data["items"][0] == json.loads(Path(run["results_path"]).read_text())["items"][2]
    missing = cobalt(project, "show", "latest", "5")
    assert (missing.returncode, missing.stdout) == (2, "")
    assert missing.stderr == f"error: Run {run['run_id']} has no item 5; it has items 0 to 2.\n"
