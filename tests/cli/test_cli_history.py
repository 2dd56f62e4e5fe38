"""`cobalt history` and `cobalt compare` as a user types them, over runs made by `cobalt run`."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import killed_and_live_runs

from cobalt_lib import Store

COBALT = str(Path(sys.executable).parent / "cobalt")
_DROP = ("GITHUB_ACTIONS", "GITHUB_STEP_SUMMARY", "OPENAI_API_KEY", "ANTHROPIC_API_KEY", "OPENROUTER_API_KEY",
         "WRONG", "CHANGED", "BROKEN")

# Eight questions; WRONG=n answers the first n with "no" (wrong for `exact`, still short for `short`);
# CHANGED=i changes item i's input, so it cannot be paired with earlier runs; BROKEN=n makes `short` fail
# (an eval-error) on the first n.
QA = '''
import os
from cobalt_lib import Dataset, Evaluator, experiment, threshold

WRONG = int(os.environ.get("WRONG", "0"))
CHANGED = int(os.environ.get("CHANGED", "-1"))
BROKEN = int(os.environ.get("BROKEN", "0"))
data = Dataset([{"input": f"q{i}" + ("-v2" if i == CHANGED else ""), "expected_output": f"a{i}"}
                for i in range(8)])


def short(ctx):
    if ctx.index < BROKEN:
        raise RuntimeError("scorer broke")
    return {"score": 1.0 if len(ctx.output) <= 2 else 0.0, "reason": f"{len(ctx.output)} chars"}


@experiment("qa", data, tags=["smoke"], assertions=[threshold("exact", 0.75)],
            evaluators=[Evaluator(name="exact", type="exact-match"),
                        Evaluator(name="short", type="function", fn=short)])
def agent(ctx):
    return "no" if ctx.index < WRONG else ctx.item["expected_output"]
'''

OTHER = '''
from cobalt_lib import Dataset, Evaluator, experiment
experiment("other", Dataset([{"expected_output": "x"}]), lambda ctx: "x", tags=["nightly"],
           evaluators=[Evaluator(name="exact", type="exact-match")])
'''


def cobalt(project: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if k not in _DROP}
    return subprocess.run([COBALT, *args], cwd=project, capture_output=True, text=True, timeout=120,
                          env={**clean, **env}, stdin=subprocess.DEVNULL)


def write_experiments(root: Path) -> None:
    (root / "experiments").mkdir(exist_ok=True)
    (root / "experiments" / "qa.cobalt.py").write_text(QA)
    (root / "experiments" / "other_experiment.py").write_text(OTHER)


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[dict[str, Any]]]:
    """Four runs, oldest first: `other`, qa (all right), qa (6 of 8 wrong), qa (same, item 7's input changed)."""
    root = tmp_path_factory.mktemp("history")
    write_experiments(root)
    for args, env, code in ((("run",), {}, 0), (("run", "-f", "qa"), {"WRONG": "6"}, 1),
                            (("run", "-f", "qa"), {"WRONG": "6", "CHANGED": "7"}, 1)):
        result = cobalt(root, *args, **env)
        assert result.returncode == code, result.stdout + result.stderr
    stored = Store(root / ".cobalt" / "cobalt.duckdb").runs()
    assert [r["experiment"] for r in stored] == ["qa", "qa", "qa", "other"]
    assert {r["source"] for r in stored} == {"library"}  # the engine ran every one; Dagster would record them
    return root, stored


def test_help_shows_examples(project: Path) -> None:
    for command in ("history", "compare"):
        result = cobalt(project, command, "--help")
        assert result.returncode == 0 and "Example:" in result.stdout and f"cobalt {command}" in result.stdout


def test_history_of_an_empty_project_is_a_friendly_message(project: Path) -> None:
    result = cobalt(project, "history")
    assert result.returncode == 0 and result.stdout.strip() == "No runs yet; run `cobalt run`."
    assert not (project / ".cobalt").exists()  # reading never creates the store
    as_json = cobalt(project, "history", "--json")
    assert as_json.returncode == 0 and json.loads(as_json.stdout) == []


def test_history_json_lists_runs_newest_first_with_their_numbers(runs: tuple[Path, list[dict[str, Any]]]) -> None:
    root, stored = runs
    result = cobalt(root, "history", "--json")
    assert result.returncode == 0, result.stderr
    entries = json.loads(result.stdout)
    assert [e["run_id"] for e in entries] == [r["run_id"] for r in stored]
    assert [e["experiment"] for e in entries] == ["qa", "qa", "qa", "other"]
    assert [e["scores"] for e in entries] == [{"exact": 0.25, "short": 1.0}, {"exact": 0.25, "short": 1.0},
                                              {"exact": 1.0, "short": 1.0}, {"exact": 1.0}]
    assert [e["passed"] for e in entries] == [False, False, True, True]
    assert all(e["status"] == "completed" and e["cost"] is None and e["duration_ms"] > 0 for e in entries)
    assert entries[0]["tags"] == ["smoke"] and entries[3]["tags"] == ["nightly"]
    assert entries[0]["date"] == stored[0]["started_at"].isoformat()


def test_history_filters_and_limit(runs: tuple[Path, list[dict[str, Any]]]) -> None:
    root, stored = runs
    by_experiment = json.loads(cobalt(root, "history", "--json", "--experiment", "other").stdout)
    assert [e["experiment"] for e in by_experiment] == ["other"]
    by_tag = json.loads(cobalt(root, "history", "--json", "--tag", "smoke", "--limit", "2").stdout)
    assert [e["run_id"] for e in by_tag] == [r["run_id"] for r in stored[:2]]
    none = cobalt(root, "history", "--tag", "nope")
    assert none.returncode == 0 and "No runs tagged 'nope' yet" in none.stdout
    bad = cobalt(root, "history", "--limit", "0")
    assert bad.returncode == 2 and bad.stderr.strip() == "error: --limit must be 1 or more, got 0."


def test_history_table(runs: tuple[Path, list[dict[str, Any]]]) -> None:
    root, stored = runs
    result = cobalt(root, "history")
    assert result.returncode == 0 and "\x1b[" not in result.stdout
    lines = result.stdout.splitlines()
    assert "date" in lines[0] and "cost" in lines[0]
    newest, baseline = next(ln for ln in lines if stored[0]["run_id"] in ln), next(
        ln for ln in lines if stored[2]["run_id"] in ln)
    assert "FAILED" in newest and "exact=0.250  short=1.000" in newest and "–" in newest
    assert "passed" in baseline and "exact=1.000" in baseline and "smoke" in baseline


def test_history_shows_running_and_incomplete_runs(project: Path) -> None:
    killed_and_live_runs(project)
    entries = json.loads(cobalt(project, "history", "--json").stdout)
    assert [(e["run_id"], e["status"], e["passed"], e["duration_ms"]) for e in entries] == [
        ("r-live", "running", None, None), ("r-killed", "incomplete", False, None)]  # an unfinished run never passes
    table = cobalt(project, "history").stdout
    assert "running" in next(ln for ln in table.splitlines() if "r-live" in ln)
    assert "incomplete" in next(ln for ln in table.splitlines() if "r-killed" in ln)


def test_history_of_an_unknown_experiment_exits_2_naming_the_stored_ones(
        runs: tuple[Path, list[dict[str, Any]]]) -> None:
    root, _ = runs
    for args in (("-e", "qaa"), ("-e", "qaa", "--json"), ("-e", "qaa", "--tag", "smoke")):
        typo = cobalt(root, "history", *args)
        assert (typo.returncode, typo.stdout) == (2, "")
        assert typo.stderr == ("error: No runs of experiment 'qaa' are stored; did you mean 'qa'? "
                               "(stored experiments: other, qa)\n")
    unknown = cobalt(root, "history", "-e", "zzzz")
    assert (unknown.returncode, unknown.stdout) == (2, "")
    assert unknown.stderr == "error: No runs of experiment 'zzzz' are stored; stored experiments: other, qa.\n"
    untagged = cobalt(root, "history", "-e", "other", "--tag", "smoke")  # a real experiment: nothing to suggest
    assert untagged.returncode == 0
    assert untagged.stdout.strip() == "No runs of experiment 'other' tagged 'smoke' yet; run `cobalt run`."


def test_history_of_an_experiment_in_an_empty_project_is_a_friendly_message(project: Path) -> None:
    result = cobalt(project, "history", "-e", "qa")
    assert result.returncode == 0 and result.stdout.strip() == "No runs of experiment 'qa' yet; run `cobalt run`."
    assert result.stderr == ""


def test_history_time_of_a_resumed_run_leaves_out_the_gap_before_the_resume(project: Path) -> None:
    store = Store(project / ".cobalt" / "cobalt.duckdb")
    row = {"run_id": "r-resumed", "experiment": "qa", "started_at": "2026-01-01T00:00:00+00:00", "tags": [],
           "config": {}}
    store.start_run(row)
    # Crashed after a second of work and resumed five hours later for half a second more.
    store.finish_run({**row, "status": "completed", "finished_at": "2026-01-01T05:00:00.500000+00:00",
                      "summary": {"total_duration_ms": 1500.0}, "passed": True}, [], [])
    [entry] = json.loads(cobalt(project, "history", "--json").stdout)
    assert entry["duration_ms"] == 1500.0
    line = next(ln for ln in cobalt(project, "history").stdout.splitlines() if "r-resumed" in ln)
    assert " 1.5s " in line


def test_compare_previous_latest_reports_b_minus_a(runs: tuple[Path, list[dict[str, Any]]]) -> None:
    root, stored = runs
    # stored[1] (6 wrong) against the all-right baseline stored[2], by id prefixes
    result = cobalt(root, "compare", stored[2]["run_id"][:-1], stored[1]["run_id"][:-1], "--json")
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert (data["run_a"], data["run_b"]) == (stored[2]["run_id"], stored[1]["run_id"])
    evaluators = {e["evaluator"]: e for e in data["evaluators"]}
    exact, short = evaluators["exact"], evaluators["short"]
    assert exact["mean_a"] == 1.0 and exact["mean_b"] == 0.25 and exact["delta"] == -0.75
    assert exact["verdict"] == "regressed" and exact["ci_high"] < 0 and exact["pairs"] == 8
    assert short["delta"] == 0 and short["verdict"] == "no significant change"
    assert [(r["index"], r["evaluator"], r["delta"]) for r in data["regressions"]] == [
        (i, "exact", -1.0) for i in range(5)]  # the default top 5 of the 6 that regressed
    assert data["improvements"] == [] and data["unpaired"] == [] and data["paired"] == 8
    assert {m["metric"] for m in data["metrics"]} == {"latency.p95", "cost.mean"}


def test_compare_reversed_is_improved_and_top_limits(runs: tuple[Path, list[dict[str, Any]]]) -> None:
    root, stored = runs
    data = json.loads(cobalt(root, "compare", stored[1]["run_id"], stored[2]["run_id"], "--json", "--top",
                             "2").stdout)
    exact = next(e for e in data["evaluators"] if e["evaluator"] == "exact")
    assert exact["delta"] == 0.75 and exact["verdict"] == "improved" and exact["ci_low"] > 0
    assert [r["index"] for r in data["improvements"]] == [0, 1] and data["regressions"] == []


def test_compare_latest_reports_changed_inputs_as_unpaired(runs: tuple[Path, list[dict[str, Any]]]) -> None:
    root, stored = runs
    data = json.loads(cobalt(root, "compare", "previous", "latest", "--json").stdout)
    assert (data["run_a"], data["run_b"]) == (stored[1]["run_id"], stored[0]["run_id"])
    [unpaired] = data["unpaired"]
    assert (unpaired["index"], unpaired["reason"], data["paired"]) == (7, "input changed", 7)
    assert len(unpaired["item_id"]) == 16  # no `id` in the dataset: the item's content hash
    assert all(e["verdict"] == "no significant change" and e["pairs"] == 7 for e in data["evaluators"])


def test_compare_prints_unpaired_items_as_one_line(runs: tuple[Path, list[dict[str, Any]]]) -> None:
    root, _ = runs
    result = cobalt(root, "compare", "previous", "latest")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[1] == "latest/previous looked up in experiment 'qa' only (--experiment picks another)"
    assert [ln for ln in lines if "unpaired" in ln and "paired items" not in ln] == [
        "1 unpaired item, not compared (1 input changed): item 7"]


def test_compare_table_and_markdown(runs: tuple[Path, list[dict[str, Any]]]) -> None:
    root, stored = runs
    table = cobalt(root, "compare", stored[2]["run_id"], stored[1]["run_id"])
    assert table.returncode == 0 and "\x1b[" not in table.stdout
    row = next(ln for ln in table.stdout.splitlines() if ln.startswith("exact"))
    assert row.split()[:4] == ["exact", "1.000", "0.250", "-0.750"] and row.rstrip().endswith("regressed")
    latency = next(ln for ln in table.stdout.splitlines() if ln.startswith("latency.p95")).split()
    assert len(latency) == 4 and all(re.fullmatch(r"[+-]?\d+(\.\d+)?(ms|s)", cell) for cell in latency[1:]), latency
    assert next(ln for ln in table.stdout.splitlines() if ln.startswith("cost.mean")).split() == [
        "cost.mean", "–", "–", "–"]  # no cost known: the unknown glyph, as every page says
    assert "most regressed: item 0 exact 1.000 -> 0.000 (-1.000)  q0" in table.stdout
    # each verdict with its rule, and the rule --fail-on-regression applies (not no_regression's)
    said = " ".join(table.stdout.split())
    assert re.search(r"exact: regressed: paired mean -0\.75, 95% CI \[-\d\.\d\d, -\d\.\d\d\] entirely below 0", said)
    assert "short: no significant change: paired mean +0.00, 95% CI [+0.00, +0.00] contains 0" in said
    assert "it does not apply no_regression's tolerance against a baseline file" in said
    markdown = cobalt(root, "compare", stored[2]["run_id"], stored[1]["run_id"], "--markdown")
    assert markdown.stdout.startswith(f"### cobalt compare: `{stored[1]['run_id']}` vs baseline")
    row = "| short | 1.000 | 1.000 | +0.000 | +0.000 | [+0.000, +0.000] | 8 | no significant change |"
    assert row in markdown.stdout


def test_compare_scopes_latest_and_previous_by_experiment(runs: tuple[Path, list[dict[str, Any]]]) -> None:
    root, _ = runs
    result = cobalt(root, "compare", "previous", "latest", "--experiment", "other")
    assert result.returncode == 2
    assert result.stderr.strip() == ("error: There is no previous run of experiment 'other' yet (1 stored); "
                                     "run an experiment first.")


@pytest.mark.parametrize(
    ("args", "message"),
    [(("nope", "latest"), "error: No run has id 'nope'; `cobalt history` lists the stored runs."),
     (("2", "latest"), "error: Run id '2' is ambiguous"),
     (("previous", "latest", "--json", "--markdown"), "error: Choose one output format: --json or --markdown"),
     (("previous", "latest", "--top", "-1"), "error: --top must be 0 or more, got -1.")],
)
def test_compare_bad_input_exits_2(runs: tuple[Path, list[dict[str, Any]]], args: tuple[str, ...],
                                   message: str) -> None:
    root, _ = runs
    result = cobalt(root, "compare", *args)
    assert result.returncode == 2 and result.stdout == ""
    assert len(result.stderr.strip().splitlines()) == 1 and result.stderr.startswith(message), result.stderr


@pytest.fixture(scope="module")
def interleaved(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[dict[str, Any]]]:
    """Three library runs, oldest first: qa (all right), other, qa (6 of 8 wrong): the newest run's
    experiment is qa, and the run just before the newest is another experiment's."""
    root = tmp_path_factory.mktemp("interleaved")
    write_experiments(root)
    for name, env, code in (("qa", {}, 0), ("other", {}, 0), ("qa", {"WRONG": "6"}, 1)):
        result = cobalt(root, "run", "-f", name, **env)
        assert result.returncode == code, result.stdout + result.stderr
    stored = Store(root / ".cobalt" / "cobalt.duckdb").runs()
    assert [r["experiment"] for r in stored] == ["qa", "other", "qa"]
    return root, stored


def test_compare_previous_latest_stays_within_the_newest_runs_experiment(
        interleaved: tuple[Path, list[dict[str, Any]]]) -> None:
    root, stored = interleaved
    result = cobalt(root, "compare", "previous", "latest", "--json")
    assert result.returncode == 0 and result.stderr == ""
    data = json.loads(result.stdout)
    assert (data["run_a"], data["run_b"], data["scope"]) == (stored[2]["run_id"], stored[0]["run_id"], "qa")
    assert data["paired"] == 8 and data["unpaired"] == []
    table = cobalt(root, "compare", "previous", "latest").stdout.splitlines()
    assert table[0].startswith(f"compare {stored[0]['run_id']} (qa) against baseline {stored[2]['run_id']} (qa)")
    assert table[1] == "latest/previous looked up in experiment 'qa' only (--experiment picks another)"
    # Beside a run named outright, `latest` is the newest run of that run's experiment.
    named = json.loads(cobalt(root, "compare", stored[1]["run_id"], "latest", "--json").stdout)
    assert (named["run_b"], named["scope"]) == (stored[1]["run_id"], "other")
    explicit = json.loads(cobalt(root, "compare", "previous", "latest", "-e", "qa", "--json").stdout)
    assert explicit["scope"] is None and explicit["run_a"] == stored[2]["run_id"]
    lone = cobalt(root, "compare", "previous", stored[1]["run_id"])  # `other` has one run: no previous one
    assert lone.returncode == 2 and lone.stdout == ""
    assert lone.stderr.strip() == (f"error: Experiment 'other' (run {stored[1]['run_id']}'s) has 1 run, so no "
                                   "previous one; pass --experiment NAME to compare another experiment's runs, "
                                   "or give two run ids.")


def test_compare_warns_when_two_named_runs_are_of_different_experiments(
        interleaved: tuple[Path, list[dict[str, Any]]]) -> None:
    root, stored = interleaved
    result = cobalt(root, "compare", stored[1]["run_id"], stored[0]["run_id"], "--json")
    assert result.returncode == 0
    assert result.stderr.strip() == (f"warning: run {stored[1]['run_id']} is of experiment 'other' and run "
                                     f"{stored[0]['run_id']} of 'qa'; items are paired by identity (their id, else "
                                     "their content) across different experiments.")
    same = cobalt(root, "compare", stored[2]["run_id"], stored[0]["run_id"], "--json")
    assert same.returncode == 0 and same.stderr == ""


def test_compare_fail_on_regression(interleaved: tuple[Path, list[dict[str, Any]]]) -> None:
    root, stored = interleaved
    regressed = cobalt(root, "compare", "previous", "latest", "--fail-on-regression")
    assert regressed.returncode == 1 and "regressed" in regressed.stdout
    assert regressed.stderr.strip() == "regressed: exact (--fail-on-regression)"
    assert cobalt(root, "compare", "previous", "latest").returncode == 0  # without the flag: a report only
    improved = cobalt(root, "compare", stored[0]["run_id"], stored[2]["run_id"], "--fail-on-regression")
    assert improved.returncode == 0 and improved.stderr == ""


def test_compare_of_a_run_with_itself_warns(runs: tuple[Path, list[dict[str, Any]]]) -> None:
    root, stored = runs
    newest = stored[0]["run_id"]
    same = cobalt(root, "compare", "latest", "latest", "--json")
    assert same.returncode == 0 and json.loads(same.stdout)["run_a"] == json.loads(same.stdout)["run_b"] == newest
    assert same.stderr == (f"warning: both ids name the same run {newest}; a run compared with itself shows "
                           "no change.\n")
    named = cobalt(root, "compare", newest[:-1], "latest", "--json")
    assert named.returncode == 0 and named.stderr.startswith(
        f"warning: both ids name the same run {newest} ('{newest[:-1]}' and 'latest');")
    other = cobalt(root, "compare", "previous", "latest", "--json")
    assert other.returncode == 0 and other.stderr == ""


@pytest.fixture(scope="module")
def broken(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[dict[str, Any]]]:
    """Three qa runs, oldest first: every score; `short` an eval-error on items 0-1; `short` an eval-error
    on every item (`exact` unchanged throughout)."""
    root = tmp_path_factory.mktemp("broken")
    write_experiments(root)
    for env in ({}, {"BROKEN": "2"}, {"BROKEN": "8"}):
        result = cobalt(root, "run", "-f", "qa", **env)
        # a run with eval-errors fails its error-rate gate (and one in which `short` scored nothing its gate
        # `every evaluator scored` too), and is still stored
        assert result.returncode == (1 if env.get("BROKEN") else 0), result.stdout + result.stderr
    stored = Store(root / ".cobalt" / "cobalt.duckdb").runs()
    assert len(stored) == 3
    return root, stored[::-1]


def test_fail_on_regression_fails_when_an_evaluators_scores_all_became_errors(
        broken: tuple[Path, list[dict[str, Any]]]) -> None:
    root, (whole, _, none) = broken
    result = cobalt(root, "compare", whole["run_id"], none["run_id"], "--fail-on-regression")
    assert result.returncode == 1, result.stdout + result.stderr
    assert result.stderr == ("lost scores: short has no score in B for 8 of the 8 paired items scored in A "
                             "(eval-errors or failed agent calls) (--fail-on-regression)\n")
    lines = result.stdout.splitlines()
    assert next(ln for ln in lines if ln.startswith("short")).split()[-2:] == ["not", "comparable"]
    assert ("lost scores: short has no score in B for 8 of the 8 paired items scored in A (eval-errors or "
            "failed agent calls)") in lines
    data = json.loads(cobalt(root, "compare", whole["run_id"], none["run_id"], "--json").stdout)
    short = next(e for e in data["evaluators"] if e["evaluator"] == "short")
    assert (short["scored_a"], short["scored_b"], short["lost"], short["pairs"]) == (8, 0, 8, 0)
    assert cobalt(root, "compare", whole["run_id"], none["run_id"]).returncode == 0  # a report only


def test_fail_on_regression_fails_when_fewer_items_are_scored_because_of_errors(
        broken: tuple[Path, list[dict[str, Any]]]) -> None:
    root, (whole, partial, none) = broken
    result = cobalt(root, "compare", whole["run_id"], partial["run_id"], "--fail-on-regression", "--json")
    assert result.returncode == 1
    assert result.stderr == ("lost scores: short has no score in B for 2 of the 8 paired items scored in A "
                             "(eval-errors or failed agent calls) (--fail-on-regression)\n")
    mended = cobalt(root, "compare", none["run_id"], whole["run_id"], "--fail-on-regression")
    assert mended.returncode == 0 and mended.stderr == "" and "lost scores" not in mended.stdout


def test_compare_without_runs_exits_2(project: Path) -> None:
    result = cobalt(project, "compare", "previous", "latest")
    assert result.returncode == 2 and "no runs to compare yet; run `cobalt run` first" in result.stderr


@pytest.mark.parametrize("width", [80, 100, 160])
def test_history_table_never_cuts_run_ids_or_costs(width: int) -> None:
    from rich.console import Console

    from cobalt_lib.cli._history import _history_table
    from cobalt_lib.ops import history_entry

    run = {"run_id": "20261123020211-c9139d9f", "experiment": "a-rather-long-experiment-name",
           "started_at": "2026-11-23T02:02:11+00:00", "tags": ["nightly", "v2"], "status": "completed",
           "passed": True, "summary": {"estimated_cost": 0.0123}, "finished_at": None}
    entry = history_entry(run, {"relevance": 0.81, "exact": 1.0, "faithfulness": 0.5})
    console = Console(width=width, record=True, no_color=True)
    console.print(_history_table([entry], width))
    text = console.export_text()
    assert max(len(line) for line in text.splitlines()) <= width
    assert "20261123020211-c9139d9f" in text and "$0.0123" in text and "passed" in text
    assert ("2026-11-23" in text) is (width >= 110)
    assert "nightly" in text and "[" not in text


@pytest.mark.parametrize(
    ("args", "message"),
    [(("run", "--concurrency", "0"), "Invalid value for '--concurrency' / '-c': 0 is not in the range x>=1 "
                                     "(see `cobalt run --help`)"),
     (("run", "-c", "abc"), "Invalid value for '--concurrency' / '-c': 'abc' is not a valid integer "
                            "(see `cobalt run --help`)"),
     (("compare", "latest"), "cobalt compare takes two runs, A (the baseline) and B, or --group GROUP for the "
                             "variants of a run group."),
     (("history", "--limit", "1.5"), "Invalid value for '--limit' / '-n': '1.5' is not a valid integer "
                                     "(see `cobalt history --help`)"),
     (("history", "--bogus"), "No such option: --bogus (see `cobalt history --help`)"),
     (("nosuchcmd",), "No such command 'nosuchcmd' (see `cobalt --help`)")],
)
def test_usage_errors_are_one_line(project: Path, args: tuple[str, ...], message: str) -> None:
    result = cobalt(project, *args)
    assert (result.returncode, result.stdout, result.stderr) == (2, "", f"error: {message}\n")
