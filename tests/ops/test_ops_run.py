"""Fresh runs, resumes, rescores and baseline updates through `cobalt_lib.ops`, in process."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from ops_project import GATED, qa_config, write_experiment

from cobalt_lib import ConfigError, Store, load_config
from cobalt_lib.ops import (
    RunOptions,
    Selection,
    execute_runs,
    prepare_runs,
    rescore_run,
    resume_run,
    run_experiments,
    select_experiments,
)
from cobalt_lib.run import RunInterrupted

LIBRARY = RunOptions()


def test_a_fresh_run_is_stored_and_reported_without_warnings(project: Path) -> None:
    config = qa_config(project)
    prepared = prepare_runs(config, Selection(name_filter="qa"), RunOptions(add_tags=["nightly"]))
    assert [p.experiment.name for p in prepared.plans] == ["qa"] and prepared.warnings == []
    outcome = execute_runs(prepared)
    [report] = outcome.reports
    assert (outcome.passed, outcome.baselines, outcome.warnings) == (True, [], [])
    assert (report.status, report.tags) == ("completed", ["smoke", "nightly"])
    stored = Store.for_config(config).get_run(report.id)
    assert stored is not None and (stored["status"], stored["passed"]) == ("completed", True)


def test_a_failed_gate_is_a_report_that_did_not_pass(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    config = qa_config(project)
    monkeypatch.setenv("QA_WRONG", "2")
    outcome = run_experiments(config, Selection(name_filter="qa"), LIBRARY)
    assert outcome.passed is False and outcome.reports[0].summary.scores["exact"].avg == 0.5


def test_a_config_threshold_that_gates_nothing_is_a_warning_before_the_runs(project: Path) -> None:
    config = qa_config(project)
    (project / "cobalt.toml").write_text('[ci]\nthresholds = { relevance = { min = 0.8 } }\n')
    config = load_config(project)
    prepared = prepare_runs(config, Selection(), LIBRARY)
    warning = ("[ci] thresholds 'relevance' applies to none of the experiments run (none produces 'relevance'); "
               "it gates nothing.")
    assert prepared.warnings == [warning]
    assert run_experiments(config, Selection(name_filter="other"), LIBRARY).warnings == [warning]


def test_selecting_nothing_says_what_was_found(project: Path) -> None:
    config = qa_config(project)
    with pytest.raises(ConfigError, match=r"No experiment name contains 'zzz' \(--filter\); found: other-agent, qa\."):
        select_experiments(config, Selection(name_filter="zzz"))
    untagged = "None of the 2 experiments found has the tag nope; their tags: smoke."
    with pytest.raises(ConfigError, match=re.escape(untagged)):
        select_experiments(config, Selection(tags=["nope"]))
    chosen = select_experiments(config, Selection(files=[project / "experiments" / "qa.cobalt.py"]))
    assert [e.name for e in chosen] == ["qa"]


def test_update_baselines_writes_them_only_from_a_run_that_passed(
        project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    config = qa_config(project)
    write_experiment(project, "gated.cobalt.py", GATED)
    options = RunOptions(update_baselines=True)
    monkeypatch.setenv("GATED_WRONG", "1")
    failed = run_experiments(config, Selection(name_filter="gated"), options)
    [update] = failed.baselines
    path = project / "baselines" / "gated.json"
    assert (update.written, update.reason, path.exists()) == (False, "it failed a gate", False)
    assert update.message == (f"baseline {path} not updated: run {failed.reports[0].id} of 'gated' "
                              "it failed a gate.")
    monkeypatch.delenv("GATED_WRONG")
    passed = run_experiments(config, Selection(name_filter="gated"), options)
    [update] = passed.baselines
    written = json.loads(path.read_text())
    assert update.written and written.pop("$identity")["dataset"]["items"] == 2 and len(written.pop("$items")) == 2
    assert written == {"exact": 1.0}
    assert update.message == f"baseline {path} updated from run {passed.reports[0].id} (gated)"
    assert passed.warnings == []


def test_update_baselines_without_a_no_regression_gate_warns_in_data_not_in_print(
        project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = qa_config(project)
    outcome = run_experiments(config, Selection(name_filter="qa"), RunOptions(update_baselines=True))
    assert outcome.baselines == []
    assert outcome.warnings == ["--update-baselines: none of the experiments run has a no_regression gate, so no "
                                "baseline was written."]
    assert capsys.readouterr() == ("", "")  # the caller (CLI, MCP server) decides how to show it


def test_an_interrupted_run_names_itself_and_resumes_where_it_stopped(
        project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    config = qa_config(project)
    monkeypatch.setenv("QA_STOP_AT", "2")
    prepared = prepare_runs(config, Selection(name_filter="qa"), RunOptions(concurrency=1))
    with pytest.raises(RunInterrupted) as caught:
        execute_runs(prepared)
    run_id = prepared.plans[0].run_id
    store = Store.for_config(config)
    assert (caught.value.run_id, caught.value.status, store.run_status(run_id)) == (run_id, "incomplete", "incomplete")
    worked = store.worked_ms(run_id)
    assert worked > 0
    monkeypatch.delenv("QA_STOP_AT")
    [report] = resume_run(config, "latest", Selection(name_filter="qa")).reports
    assert (report.id, report.status, len(report.items), report.passed) == (run_id, "completed", 4, True)
    assert report.summary.total_duration_ms > worked  # the first part's working time, and the resume's
    with pytest.raises(ConfigError, match="already completed"):
        resume_run(config, run_id)


def test_resume_needs_one_experiment_and_its_file(project: Path) -> None:
    config = qa_config(project)
    with pytest.raises(ConfigError, match=r"--resume finishes one run, but --filter/--tag match 2 experiments"):
        resume_run(config, "latest", Selection(name_filter="a"))
    run_experiments(config, Selection(name_filter="qa"), RunOptions())
    only_other = Selection(files=[project / "experiments" / "other_experiment.py"])
    with pytest.raises(ConfigError, match="belongs to experiment 'qa', which no experiment file under experiments/"):
        resume_run(config, "latest", only_other)


def test_rescore_runs_the_named_evaluators_over_the_stored_outputs(
        project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    config = qa_config(project)
    monkeypatch.setenv("QA_WRONG", "1")
    [first] = run_experiments(config, Selection(name_filter="qa"), LIBRARY).reports
    monkeypatch.delenv("QA_WRONG")  # an agent called again would now answer item 0 right
    rescored = rescore_run(config, "latest", evaluators=["short"])
    report = rescored.report
    assert (rescored.parent_run_id, report.parent_run_id) == (first.id, first.id) and report.id != first.id
    assert report.items[0].output == "nope" and report.summary.scores["exact"].avg == 0.75
    assert report.config["rescored"] == ["short"]
    with pytest.raises(ConfigError, match="has no evaluator 'nope'; it has exact, short"):
        rescore_run(config, first.id, evaluators=["nope"])
    (project / "experiments" / "qa.cobalt.py").unlink()
    with pytest.raises(ConfigError, match="which no experiment file under experiments/ declares any more"):
        rescore_run(config, first.id)


def test_rescore_without_runs_says_to_run_first(project: Path) -> None:
    config = qa_config(project)
    with pytest.raises(ConfigError, match=r"There are no stored runs yet; run `cobalt run` first \(store: "):
        rescore_run(config, "latest")


def test_a_rescore_of_a_run_whose_agent_cost_was_unknown_keeps_it_unknown(project: Path) -> None:
    from cobalt_lib.cli._history import _cost
    from cobalt_lib.ops import run_history

    config = qa_config(project)
    [first] = run_experiments(config, Selection(name_filter="qa"), LIBRARY).reports
    rescored = rescore_run(config, first.id).report
    # qa's agent reports no cost: unknown, not $0, in the parent and in its rescore alike
    assert (first.summary.agent_cost, rescored.summary.agent_cost) == (None, None)
    assert rescored.summary.estimated_cost is None and rescored.summary.agent_tokens == 0
    entries = {e.run_id: e for e in run_history(config)}
    assert [_cost(entries[r.id]) for r in (first, rescored)] == ["–", "–"]


def test_only_failed_reruns_the_failed_items_with_their_indices_as_a_new_linked_run(
        project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from cobalt_lib.ops import compare_runs, rerun_failed

    config = qa_config(project)
    monkeypatch.setenv("QA_WRONG", "2")  # items 0 and 1 answer "nope": exact 0, below its pass mark
    [first] = run_experiments(config, Selection(name_filter="qa"), LIBRARY).reports
    monkeypatch.delenv("QA_WRONG")
    [again] = rerun_failed(config, first.id[-8:], add_tags=["retry"]).reports  # by its random suffix
    assert (again.parent_run_id, again.status) == (first.id, "completed") and again.id != first.id
    assert [(i.index, i.output) for i in again.items] == [(0, "a0"), (1, "a1")]
    assert again.summary.total_items == 2 and again.summary.scores["exact"].avg == 1.0
    assert again.config["indices"] == [0, 1] and "retry" in again.tags
    stored = Store.for_config(config).get_run(again.id)
    assert stored is not None and stored["parent_run_id"] == first.id
    comparison = compare_runs(config, first.id, again.id).comparison
    assert comparison.paired == 2  # with the parent's items 0 and 1
    with pytest.raises(ConfigError, match=rf"^Run {again.id} of 'qa' has no failed items \(agent errors, "
                                          r"timeouts, eval-errors or scores below a pass mark\); there is "
                                          r"nothing to re-run\.$"):
        rerun_failed(config, again.id)


def test_only_failed_refuses_a_run_made_with_another_dataset(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from cobalt_lib.ops import rerun_failed

    config = qa_config(project)
    monkeypatch.setenv("QA_WRONG", "1")
    [first] = run_experiments(config, Selection(name_filter="qa"), LIBRARY).reports
    path = project / "experiments" / "qa.cobalt.py"
    path.write_text(path.read_text().replace("range(4)", "range(5)"))
    with pytest.raises(ConfigError, match=rf"^Run {first.id} of 'qa' was made with another dataset \(4 items "
                                          r"then, 5 now\); re-running its failed items would mix the two"):
        rerun_failed(config, first.id)
