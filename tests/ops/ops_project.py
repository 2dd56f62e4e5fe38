"""Experiment files for the ops tests: their text and a helper writing them into a project."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from cobalt_lib import Config, ExperimentReport, load_config
from cobalt_lib.ops import RunOptions, Selection, run_experiments
from cobalt_lib.run import RunInterrupted

#: `qa`: 4 items, exact-match; QA_WRONG items answer wrong, the agent is "interrupted" from QA_STOP_AT on.
QA = '''
import os
from cobalt_lib import Dataset, Evaluator, experiment, threshold

data = Dataset([{"input": f"q{i}", "expected_output": f"a{i}"} for i in range(4)])

@experiment("qa", data, tags=["smoke"], evaluators=[Evaluator(name="exact", type="exact-match"),
            Evaluator(name="short", type="function", fn=lambda ctx: 1.0 if len(str(ctx.output)) < 3 else 0.0)],
            assertions=[threshold("exact", 0.75)])
def agent(ctx):
    if ctx.index >= int(os.environ.get("QA_STOP_AT", "99")):
        raise KeyboardInterrupt  # as a Ctrl-C would, mid-run
    return "nope" if ctx.index < int(os.environ.get("QA_WRONG", "0")) else ctx.item["expected_output"]
'''

#: `other-agent`: one item, no gates, no tags.
OTHER = '''
from cobalt_lib import Dataset, Evaluator, experiment
experiment("other-agent", Dataset([{"expected_output": "x"}]), lambda ctx: "x",
           evaluators=[Evaluator(name="exact", type="exact-match")])
'''

#: `gated`: like qa, with a no_regression gate on baselines/gated.json.
GATED = '''
import os
from cobalt_lib import Dataset, Evaluator, experiment, no_regression, threshold

experiment("gated", Dataset([{"expected_output": "a"}, {"expected_output": "b"}]),
           lambda ctx: "wrong" if os.environ.get("GATED_WRONG") else ctx.item["expected_output"],
           evaluators=[Evaluator(name="exact", type="exact-match")],
           assertions=[threshold("exact", 0.5), no_regression("baselines/gated.json")])
'''


def write_experiment(root: Path, name: str, text: str) -> Path:
    path = root / "experiments" / name
    path.parent.mkdir(exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def qa_config(root: Path) -> Config:
    """The project at `root` with `qa` and `other-agent` under experiments/, and its config."""
    write_experiment(root, "qa.cobalt.py", QA)
    write_experiment(root, "other_experiment.py", OTHER)
    return load_config(root)


def run(config: Config, name: str, **options: Any) -> ExperimentReport:
    """A library-path run of the one experiment whose name contains `name`."""
    [report] = run_experiments(config, Selection(name_filter=name), RunOptions(**options)).reports
    return report


def interrupted_qa_run(config: Config, monkeypatch: pytest.MonkeyPatch) -> str:
    """A run of `qa` stopped by Ctrl-C at its item 2 (items 0 and 1 done), one call at a time: its id."""
    monkeypatch.setenv("QA_STOP_AT", "2")
    with pytest.raises(RunInterrupted) as caught:
        run(config, "qa", concurrency=1)
    monkeypatch.delenv("QA_STOP_AT")
    return caught.value.run_id
