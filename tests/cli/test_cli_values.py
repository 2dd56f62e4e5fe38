"""Values cobalt cannot store as they come, through `cobalt run` (issue 33 item 14): a lone surrogate in
the agent's output, metadata or error is kept escaped; the run completes with no traceback."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from cobalt_lib import Store

COBALT = str(Path(sys.executable).parent / "cobalt")

EXPERIMENT = '''
from cobalt_lib import Dataset, Evaluator, experiment

@experiment("halves", Dataset([{"input": f"q{i}"} for i in range(3)]),
            evaluators=[Evaluator(name="any", type="function", fn=lambda ctx: 1.0)])
def agent(ctx):
    if ctx.index == 2:
        raise ValueError("bad \\udc80 byte")
    return {"output": "a\\ud800b" if ctx.index == 0 else "fine",
            "metadata": {"note": "\\udfff", "\\ud83d": 1, "tokens": 2**63}}
'''


@pytest.mark.slow
def test_a_lone_surrogate_in_output_metadata_or_error_is_stored_escaped_and_the_run_completes(
        project: Path) -> None:
    (project / "experiments").mkdir()
    (project / "experiments" / "halves.cobalt.py").write_text(EXPERIMENT)
    env = {**os.environ, "COBALT_DAGSTER_RECORD": "off"}
    run = subprocess.run([COBALT, "run", "--ci"], cwd=project, text=True, capture_output=True, env=env, timeout=300)
    assert "Traceback" not in run.stderr, run.stderr
    assert run.returncode == 1, run.stdout + run.stderr  # item 2's error fails the gate, as any agent error does
    store = Store(project / ".cobalt" / "cobalt.duckdb")
    [row] = store.runs()
    assert row["status"] == "completed"
    outputs = store.rows("outputs", row["run_id"])
    assert [o["output"] for o in outputs] == ["a\\ud800b", "fine", None]
    assert outputs[0]["metadata"] == {"note": "\\udfff", "\\ud83d": 1, "tokens": 2**63}
    assert outputs[0]["unheld_values"] == {"tokens": str(2**63)}
    assert outputs[2]["error"] == "ValueError: bad \\udc80 byte"
    [results] = (project / ".cobalt" / "results").glob("*.json")
    assert json.loads(results.read_text())["items"][0]["output"] == "a\\ud800b"
