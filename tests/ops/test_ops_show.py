"""Reading one stored run's items through `cobalt_lib.ops.show_run`, in process against a real store."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from ops_project import interrupted_qa_run, qa_config, run, write_experiment

from cobalt_lib import ConfigError, load_config
from cobalt_lib.ops import show_run

#: `repeated`: 3 items x 2 runs; item 1 answers wrong in run 1 only, item 2's agent call fails.
REPEATED = '''
from cobalt_lib import Dataset, Evaluator, experiment

def agent(ctx):
    if ctx.index == 2:
        raise ValueError("no answer for item 2")
    return "wrong" if (ctx.index, ctx.run_index) == (1, 1) else ctx.item["expected_output"]

experiment("repeated", Dataset([{"input": f"q{i}", "expected_output": f"a{i}"} for i in range(3)]), agent,
           runs=2, evaluators=[Evaluator(name="exact", type="exact-match")])
'''


def test_show_gives_every_item_record_with_the_runs_evaluators_and_pass_marks(project: Path,
                                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    config = qa_config(project)
    monkeypatch.setenv("QA_WRONG", "1")
    done = run(config, "qa")
    shown = show_run(config, "latest", experiment="qa")
    assert (shown.run_id, shown.experiment, shown.status, shown.passed) == (done.id, "qa", "completed", True)
    assert (shown.evaluators, shown.pass_marks) == (["exact", "short"], {"exact": 0.5, "short": 0.5})
    assert shown.items == done.items  # the records as the results file holds them
    assert shown.warnings == []
    failed = show_run(config, done.id[:10], failures=True)
    assert [(i.index, i.output, i.evaluations["exact"].passed) for i in failed.items] == [(0, "nope", False)]
    [one] = show_run(config, "latest", "2", experiment="qa").items
    assert (one.index, one.item["expected_output"], one.output) == (2, "a2", "a2")


def test_an_item_index_means_every_run_of_it_and_index_colon_run_one_of_them(project: Path) -> None:
    write_experiment(project, "repeated.cobalt.py", REPEATED)
    config = load_config(project)
    run(config, "repeated")
    assert [(i.index, i.run_index) for i in show_run(config, "latest", "1").items] == [(1, 0), (1, 1)]
    [second] = show_run(config, "latest", "1:1").items
    assert (second.run_index, second.output, second.evaluations["exact"].passed) == (1, "wrong", False)
    failures = show_run(config, "latest", failures=True).items
    assert [(i.index, i.run_index, i.status) for i in failures] == [(1, 1, "ok"), (2, 0, "error"), (2, 1, "error")]
    assert failures[1].error == "ValueError: no answer for item 2" and "Traceback" in (failures[1].traceback or "")
    assert show_run(config, "latest", "0", failures=True).items == []


@pytest.mark.parametrize(("item", "message"), [
    ("7", "Run {run} has no item 7; it has items 0 to 2."),
    ("1:5", "Item 1 of run {run} has no run index 5; it has run indexes 0 to 1."),
    ("one", "Item 'one' is not an item index; give N or N:RUN_INDEX, e.g. 3 or 3:1."),
])
def test_an_unknown_item_is_one_sentence_naming_the_range(project: Path, item: str, message: str) -> None:
    write_experiment(project, "repeated.cobalt.py", REPEATED)
    config = load_config(project)
    report = run(config, "repeated")
    with pytest.raises(ConfigError, match="^" + re.escape(message.format(run=report.id)) + "$"):
        show_run(config, "latest", item)


def test_show_of_an_unfinished_run_warns_and_an_empty_store_is_an_error(
        project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    config = qa_config(project)
    with pytest.raises(ConfigError, match="There are no stored runs yet"):
        show_run(config, "latest")
    run_id = interrupted_qa_run(config, monkeypatch)
    shown = show_run(config, "latest")
    assert shown.warnings == [f"run {run_id} is incomplete: only its finished items are shown."]
    assert shown.items and {i.index for i in shown.items} <= {0, 1} and shown.passed is False  # stopped at item 2


def test_a_run_of_some_items_names_the_items_it_has(project: Path) -> None:
    """A run of the failed items only (--only-failed) may hold items 0 and 2 of 0..3: "items 0 to 2"
    would hide the gap, and "only item N" reads better than "items N to N"."""
    from cobalt_lib.ops import rerun_failed

    write_experiment(project, "gaps.cobalt.py", GAPS)
    config = load_config(project)
    run(config, "gaps")
    rerun = rerun_failed(config, "latest").reports[0]
    assert [i.index for i in rerun.items] == [0, 2]
    with pytest.raises(ConfigError, match=re.escape(f"Run {rerun.id} has no item 1; it has items 0, 2.")):
        show_run(config, rerun.id, "1")
    write_experiment(project, "gaps.cobalt.py", GAPS.replace("(0, 2)", "(3,)"))
    run(config, "gaps")
    single = rerun_failed(load_config(project), "latest").reports[0]
    with pytest.raises(ConfigError, match=re.escape(f"Run {single.id} has no item 0; it has only item 3.")):
        show_run(config, single.id, "0")


#: `gaps`: 4 items; items 0 and 2 answer wrong.
GAPS = '''
from cobalt_lib import Dataset, Evaluator, experiment

experiment("gaps", Dataset([{"input": f"q{i}", "expected_output": f"a{i}"} for i in range(4)]),
           lambda ctx: "wrong" if ctx.index in (0, 2) else ctx.item["expected_output"],
           evaluators=[Evaluator(name="exact", type="exact-match")])
'''
