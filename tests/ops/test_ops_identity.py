"""Every run carries its evaluation identity: a judge prompt changed between two runs is named by `compare`,
blocks `--fail-on-regression` and `no_regression` against that baseline unless accepted; an unchanged one does
not. Runs judged by the loopback LLM server, stored in a real DuckDB file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cobalt_lib import Store, load_config
from cobalt_lib.cli import main
from cobalt_lib.ops import RunOptions, Selection, compare_runs, run_experiments
from cobalt_lib.results._report import ExperimentReport

JUDGED = '''
import os
from cobalt_lib import Dataset, Evaluator, experiment, no_regression

items = [{"id": f"q{i}", "input": f"question {i}", "expected_output": f"a{i}"} for i in range(6)]
prompt = os.environ.get("JUDGE_PROMPT", "Rate {{output}} for {{input}}.")
experiment("judged", Dataset(items), lambda ctx: ctx.item["expected_output"],
           evaluators=[Evaluator(name="relevance", prompt=prompt)],
           assertions=[no_regression("baselines/judged.json", accept_identity_change=os.environ.get("ACCEPT") == "1")])
'''

CHANGED = ("the judge prompt of 'relevance' changed: its deltas compare two measurements")


@pytest.fixture
def judged(judged_project: Path) -> Path:
    (judged_project / "experiments").mkdir()
    (judged_project / "experiments" / "judged.cobalt.py").write_text(JUDGED, encoding="utf-8")
    return judged_project


def run(monkeypatch: pytest.MonkeyPatch, *, prompt: str | None = None, accept: bool = False,
        update: bool = False) -> ExperimentReport:
    if prompt is None:
        monkeypatch.delenv("JUDGE_PROMPT", raising=False)
    else:
        monkeypatch.setenv("JUDGE_PROMPT", prompt)
    monkeypatch.setenv("ACCEPT", "1" if accept else "0")
    outcome = run_experiments(load_config(), Selection(), RunOptions(update_baselines=update, dagster=False))
    [report] = outcome.reports
    return report


def test_a_changed_judge_prompt_is_named_and_blocks_the_regression_checks_until_accepted(
        judged: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    a = run(monkeypatch, update=True)
    baseline = json.loads((judged / "baselines" / "judged.json").read_text())
    assert baseline["$identity"]["evaluators"][0]["judge_model"] == "openai/gpt-4o-mini"
    b = run(monkeypatch)  # the same measurement: nothing to say, nothing blocks
    assert b.passed and b.identity == a.identity
    same = compare_runs(load_config(), a.id, b.id, fail_on_regression=True)
    assert (same.comparison.identity_changes, same.regressions) == ([], [])

    c = run(monkeypatch, prompt="Judge strictly: is {{output}} right for {{input}}?")
    assert not c.passed
    [refused] = [v for v in c.assertions if v.name == "no_regression:identity"]
    assert refused.message == (f"the baseline was measured differently: {CHANGED} (rewrite baselines/judged.json from "
                               "a good run of this setup with `cobalt run --update-baselines`, or pass "
                               "no_regression(..., accept_identity_change=True))")
    changed = compare_runs(load_config(), b.id, c.id, fail_on_regression=True)
    assert [(x.text, x.measurement) for x in changed.comparison.identity_changes] == [(CHANGED, True)]
    assert changed.regressions == [f"the baseline was measured differently: {CHANGED} (--accept-identity-change "
                                   "compares them anyway)"]
    from cobalt_lib.render._compare import comparison_markdown

    assert f"#### Measured differently\n\n- {CHANGED}\n\n#### Verdicts" in comparison_markdown(changed.comparison)
    accepted = compare_runs(load_config(), b.id, c.id, fail_on_regression=True, accept_identity_change=True)
    assert accepted.regressions == [] and accepted.comparison.measured_differently

    d = run(monkeypatch, prompt="Judge strictly: is {{output}} right for {{input}}?", accept=True)
    assert d.passed
    [allowed] = [v for v in d.assertions if v.name == "no_regression:identity"]
    assert allowed.passed and allowed.message == f"accepted (accept_identity_change=True): {CHANGED}"

    # The command line says it too: the terminal, --json, the exit code, and `cobalt show`.
    with pytest.raises(SystemExit) as exited:
        main(["compare", b.id, c.id, "--fail-on-regression"])
    out, err = capsys.readouterr()
    assert exited.value.code == 1
    assert f"measured differently: {CHANGED}" in " ".join(out.split())
    assert err.strip().endswith(f"{CHANGED} (--accept-identity-change compares them anyway) (--fail-on-regression)")
    with pytest.raises(SystemExit) as exited:
        main(["compare", b.id, c.id, "--fail-on-regression", "--accept-identity-change", "--json"])
    out, _ = capsys.readouterr()
    assert exited.value.code == 0
    assert json.loads(out)["identity_changes"] == [{"part": "evaluator", "evaluator": "relevance", "text": CHANGED,
                                                    "measurement": True}]
    with pytest.raises(SystemExit) as exited:
        main(["show", c.id, "--identity"])
    out, _ = capsys.readouterr()
    prompt_hash = c.identity.evaluators[0].prompt_hash if c.identity else None
    assert f"evaluator relevance: llm-judge, prompt {prompt_hash}, judge openai/gpt-4o-mini" in out
    assert "dataset: 6 items, content hash" in out and "agent: experiments/judged.cobalt.py:<lambda>" in out
    # The compare page (here as the one-file report) says it above the deltas.
    from cobalt_lib.pages._report import compare_report_html

    html = compare_report_html(load_config(), b.id, c.id)
    assert '<h2>Measured differently</h2>' in html
    assert ('<li class="warning" data-part="evaluator">the judge prompt of &#39;relevance&#39; changed: its deltas '
            'compare two measurements</li>') in html
    assert "Measured differently" not in compare_report_html(load_config(), a.id, b.id)


def test_the_identity_is_stored_with_the_run_and_read_back_without_its_results_file(
        judged: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    a = run(monkeypatch, update=True)
    assert a.identity is not None
    stored = Store.for_config(load_config()).identities_of([a.id])
    assert stored == {a.id: a.identity}
    assert a.identity.dataset.items == 6 and a.identity.agent.source_file == "experiments/judged.cobalt.py"
    assert a.identity.agent.source_hash and a.identity.cobalt_version
    Path(str(a.results_path)).unlink()  # the store's rows alone still say what the run measured
    from cobalt_lib.store._history import load_report

    assert load_report(Store.for_config(load_config()), a.id).identity == a.identity
