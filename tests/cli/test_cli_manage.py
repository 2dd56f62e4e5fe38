"""`cobalt export`, `cobalt clean` and `cobalt rescore` as a user types them, over runs made by `cobalt run`."""

from __future__ import annotations

import csv
import io
import json
import os
import re
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest
from conftest import killed_and_live_runs
from fakellm import FakeLLM, answer

from cobalt_lib import AssertionResult, Evaluation, ExperimentReport, ItemResult, Store
from cobalt_lib.render._export import to_csv, to_junit

COBALT = str(Path(sys.executable).parent / "cobalt")
_DROP = ("GITHUB_ACTIONS", "GITHUB_STEP_SUMMARY", "WRONG", "BOOM", "PROMPT_VERSION", "AGENT_FORBIDDEN")
TABLES = ("runs", "outputs", "scores", "aggregates", "verdicts")

# Item 0 is wrong with WRONG=1; `picky` cannot score item 2 (an eval-error) and gives item 1 a 0.4,
# under its 0.5 pass mark; with BOOM=1 the agent raises on item 3. The experiment lets 25% of attempts
# be errors (by default any error fails a run).
EXPORTED = '''
import os
from cobalt_lib import Dataset, Evaluator, experiment, threshold

WRONG = int(os.environ.get("WRONG", "0"))
data = Dataset([{"input": f"q{i}", "expected_output": f"a{i}"} for i in range(4)])


def picky(ctx):
    if ctx.index == 2:
        raise ValueError("picky cannot score item 2")
    return {"score": 0.4 if ctx.index == 1 else 0.9, "reason": "picky says so"}


@experiment("qa", data, assertions=[threshold("exact", 0.5)], max_error_rate=0.25,
            evaluators=[Evaluator(name="exact", type="exact-match"),
                        Evaluator(name="picky", type="function", fn=picky)])
def agent(ctx):
    if ctx.index == 3 and os.environ.get("BOOM"):
        raise RuntimeError("agent exploded")
    return "wrong" if ctx.index < WRONG else ctx.item["expected_output"]
'''

# The judge's prompt version comes from PROMPT_VERSION; every agent call is appended to
# agent-calls.txt, and with AGENT_FORBIDDEN set the agent refuses to run at all.
JUDGED = '''
import os
from pathlib import Path
from cobalt_lib import Dataset, Evaluator, experiment, threshold

VERSION = os.environ.get("PROMPT_VERSION", "1")
data = Dataset([{"input": f"q{i}", "expected_output": f"a{i}"} for i in range(4)])


@experiment("judged", data, assertions=[threshold("judge", 0.5)], max_error_rate=0.25,
            evaluators=[Evaluator(name="exact", type="exact-match"),
                        Evaluator(name="judge", prompt="Prompt v" + VERSION + ": rate {{output}} for {{input}}")])
def agent(ctx):
    if os.environ.get("AGENT_FORBIDDEN"):
        raise RuntimeError("the agent must not be called")
    with open(Path(__file__).parent.parent / "agent-calls.txt", "a") as fh:
        fh.write(f"{ctx.index}\\n")
    if ctx.index == 3:
        raise ValueError("agent failed on item 3")
    return ctx.item["expected_output"]
'''


def cobalt(project: Path, *args: str, stdin: Any = subprocess.DEVNULL, **env: str) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if k not in _DROP}
    return subprocess.run([COBALT, *args], cwd=project, capture_output=True, text=True, timeout=120,
                          env={**clean, **env}, stdin=stdin)


def cobalt_on_a_terminal(project: Path, *args: str, typed: str) -> subprocess.CompletedProcess[str]:
    """Run with stdin on a pseudo-terminal holding what the user typed."""
    controller, terminal = os.openpty()
    try:
        os.write(controller, typed.encode())
        return cobalt(project, *args, stdin=terminal)
    finally:
        os.close(terminal)
        os.close(controller)


def write_experiment(root: Path, text: str, name: str) -> None:
    (root / "experiments").mkdir(exist_ok=True)
    (root / "experiments" / name).write_text(text)


def row_counts(root: Path, run_id: str) -> dict[str, int]:
    store = Store(root / ".cobalt" / "cobalt.duckdb")
    return {t: store.query(f"SELECT count(*) AS n FROM {t} WHERE run_id = ?", [run_id])[0]["n"] for t in TABLES}


# -- export ------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def exported(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    root = tmp_path_factory.mktemp("export")
    write_experiment(root, EXPORTED, "qa.cobalt.py")
    result = cobalt(root, "run", WRONG="1", BOOM="1")
    assert result.returncode == 0, result.stdout + result.stderr
    [run] = Store(root / ".cobalt" / "cobalt.duckdb").runs()
    return root, run


def test_help_shows_examples(project: Path) -> None:
    for command in ("clean", "export", "rescore"):
        result = cobalt(project, command, "--help")
        assert result.returncode == 0 and "Example:" in result.stdout and f"cobalt {command}" in result.stdout


def test_export_csv_has_a_row_per_item_and_evaluator(exported: tuple[Path, dict[str, Any]]) -> None:
    root, _ = exported
    result = cobalt(root, "export", "latest", "--format", "csv")
    assert result.returncode == 0, result.stderr
    rows = list(csv.DictReader(io.StringIO(result.stdout)))
    assert list(rows[0]) == ["index", "run_index", "input", "output", "expected_output", "status", "evaluator",
                             "score", "reason", "latency_ms"]
    assert [r["expected_output"] for r in rows] == ["a0", "a0", "a1", "a1", "a2", "a2", "a3"]
    assert [(r["index"], r["evaluator"], r["score"]) for r in rows] == [
        ("0", "exact", "0.0"), ("0", "picky", "0.9"), ("1", "exact", "1.0"), ("1", "picky", "0.4"),
        ("2", "exact", "1.0"), ("2", "picky", ""), ("3", "", "")]
    assert rows[0]["output"] == "wrong" and rows[0]["reason"] == "expected 'a0', got 'wrong'"
    assert rows[5]["reason"] == "ValueError: picky cannot score item 2"
    assert rows[6]["status"] == "error" and rows[6]["reason"] == "RuntimeError: agent exploded"
    assert all(float(r["latency_ms"]) >= 0 for r in rows)  # measured for each (a no-op agent may take under a µs)


def junit_outcomes(root: ET.Element) -> dict[str, dict[str, tuple[str, str | None]]]:
    """Per testsuite name: test case name -> (`pass` | `failure` | `error`, message)."""
    def outcome(case: ET.Element) -> tuple[str, str | None]:
        failed = [child for child in case if child.tag in ("failure", "error")]
        return (failed[0].tag, failed[0].get("message")) if failed else ("pass", None)

    return {suite.get("name", ""): {case.get("name", ""): outcome(case) for case in suite.iter("testcase")}
            for suite in root.iter("testsuite")}


def case_details(root: ET.Element, name: str) -> tuple[dict[str, str], str | None]:
    """A test case's cobalt properties and its system-out."""
    [case] = [c for c in root.iter("testcase") if c.get("name") == name]
    properties = {p.get("name", ""): p.get("value", "") for p in case.iter("property")}
    return properties, case.findtext("system-out")


def suite_counts(element: ET.Element) -> tuple[str | None, ...]:
    return tuple(element.get(key) for key in ("tests", "failures", "errors"))


ITEMS_FAIL = {"qa": {
    "item 0 / exact": ("failure", "score 0.000 is below the evaluator's pass mark: expected 'a0', got 'wrong'"),
    "item 0 / picky": ("pass", None),
    "item 1 / exact": ("pass", None),
    "item 1 / picky": ("failure", "score 0.400 is below the evaluator's pass mark: picky says so"),
    "item 2 / exact": ("pass", None),
    "item 2 / picky": ("error", "eval-error: ValueError: picky cannot score item 2"),
    "item 3 / exact": ("failure", "the agent call error: RuntimeError: agent exploded"),
    "item 3 / picky": ("failure", "the agent call error: RuntimeError: agent exploded"),
}, "qa / gates": {"exact >= 0.5": ("pass", None), "error rate <= 25%": ("pass", None),
                  "every evaluator scored": ("pass", None)}}


def test_export_junit_of_a_passing_run_fails_nothing_and_reports_the_low_and_errored_items(
        exported: tuple[Path, dict[str, Any]]) -> None:
    root, run = exported  # the run passed its gate (exit 0) with two low items, an eval-error and an agent error
    target = root / "reports" / "junit.xml"
    result = cobalt(root, "export", run["run_id"][:-2], "--format", "junit", "-o", "reports/junit.xml")
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == f"Wrote run {run['run_id']} as junit to reports/junit.xml"
    tree = ET.parse(target).getroot()
    items, gates = tree.findall("testsuite")
    assert (items.get("name"), *suite_counts(items)) == ("qa", "8", "0", "0")
    assert (gates.get("name"), *suite_counts(gates)) == ("qa / gates", "3", "0", "0")
    assert suite_counts(tree) == ("11", "0", "0")
    assert {case.get("classname") for case in items.iter("testcase")} == {"qa"}
    assert {outcome for suite in junit_outcomes(tree).values() for outcome in suite.values()} == {("pass", None)}
    assert case_details(tree, "item 1 / picky") == (
        {"cobalt.status": "ok", "cobalt.score": "0.4", "cobalt.threshold": "0.5", "cobalt.passed": "false"},
        "picky says so")
    assert case_details(tree, "item 0 / exact") == (
        {"cobalt.status": "ok", "cobalt.score": "0", "cobalt.threshold": "0.5", "cobalt.passed": "false"},
        "expected 'a0', got 'wrong'")
    assert case_details(tree, "item 2 / picky") == (
        {"cobalt.status": "eval-error", "cobalt.threshold": "0.5"}, "ValueError: picky cannot score item 2")
    assert case_details(tree, "item 3 / exact") == (
        {"cobalt.status": "error", "cobalt.threshold": "0.5"}, "the agent call error: RuntimeError: agent exploded")


def test_export_junit_items_fail_fails_every_low_or_errored_item(exported: tuple[Path, dict[str, Any]]) -> None:
    root, _ = exported
    result = cobalt(root, "export", "latest", "--junit-items-fail", "-o", "strict.xml")
    assert result.returncode == 0, result.stderr
    tree = ET.parse(root / "strict.xml").getroot()
    assert suite_counts(tree) == ("11", "4", "1")
    assert junit_outcomes(tree) == ITEMS_FAIL  # what every JUnit export was before --junit-items-fail
    wrong = cobalt(root, "export", "latest", "--junit-items-fail", "--format", "csv")
    assert (wrong.returncode, wrong.stderr) == (2, "error: --junit-items-fail applies to the junit format only, "
                                                   "not to csv.\n")


# The walkthrough's case: every item clears its evaluator's pass mark, yet the run fails two gates,
# one on the mean and one on a run metric; JUnit must fail exactly those two, as the exit code does.
GATED = """
from cobalt_lib import Dataset, Evaluator, experiment, threshold


def relevance(ctx):
    return {"score": 0.75 if ctx.index == 0 else 0.78, "reason": "fine"}


experiment("qa-agent", Dataset([{"input": f"q{i}"} for i in range(4)]), lambda ctx: "an answer",
           evaluators=[Evaluator(name="relevance", type="function", fn=relevance)],
           assertions=[threshold("relevance", 0.8)])
"""


def test_junit_fails_the_gates_that_failed_the_run_not_the_items(project: Path) -> None:
    write_experiment(project, GATED, "qa.cobalt.py")
    (project / "cobalt.toml").write_text('[ci]\nthresholds = { "latency.p95" = { max = 0.000001 } }\n')
    run = cobalt(project, "run")
    assert run.returncode == 1, run.stdout + run.stderr
    result = cobalt(project, "export", "latest", "-o", "junit.xml")  # the format from the extension
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip().endswith("as junit to junit.xml")
    tree = ET.parse(project / "junit.xml").getroot()
    assert suite_counts(tree) == ("8", "2", "0")  # 4 items, 4 gates (with `error rate`, `every evaluator scored`)
    outcomes = junit_outcomes(tree)
    assert set(outcomes["qa-agent"].values()) == {("pass", None)} and len(outcomes["qa-agent"]) == 4
    gates = outcomes["qa-agent / gates"]
    assert gates["relevance >= 0.8"] == ("failure", "relevance = 0.7725, must be at least 0.8")
    kind, message = gates["latency.p95 <= 0.000001"]
    assert kind == "failure" and re.fullmatch(r"latency\.p95 = [\d.]+(ms|s), must be at most 0\.000001ms",
                                              message or "")


@pytest.mark.parametrize(("name", "first"), [("out.csv", "index,run_index"), ("out.md", "### cobalt: qa"),
                                             ("OUT.JSON", "{"), ("out.xml", "<?xml")])
def test_export_infers_the_format_from_the_file_extension(exported: tuple[Path, dict[str, Any]], name: str,
                                                         first: str) -> None:
    root, _ = exported
    result = cobalt(root, "export", "latest", "-o", f"inferred/{name}")
    assert result.returncode == 0, result.stderr
    assert (root / "inferred" / name).read_text().startswith(first)
    explicit = cobalt(root, "export", "latest", "--format", "csv", "-o", "inferred/forced.xml")  # --format wins
    assert (root / "inferred" / "forced.xml").read_text().startswith("index,run_index"), explicit.stderr


def test_export_json_is_the_results_file(exported: tuple[Path, dict[str, Any]]) -> None:
    root, run = exported
    result = cobalt(root, "export", "latest", "--format", "json")
    assert result.returncode == 0
    assert json.loads(result.stdout) == json.loads(Path(run["results_path"]).read_text())


def test_export_markdown_has_the_summary_and_an_items_table(exported: tuple[Path, dict[str, Any]]) -> None:
    root, _ = exported
    text = cobalt(root, "export", "latest", "--format", "markdown").stdout
    assert text.startswith("### cobalt: qa — passed")
    assert "| exact | 0.667 |" in text and "#### Items" in text
    assert "| # | run | status | input | output | expected output | exact | picky | latency |" in text
    assert re.search(r"^\| 0 \| 0 \| ok \| q0 \| wrong \| a0 \| 0\.000 \| 0\.900 \| [\d.]+(ms|s) \|$", text, re.M)
    assert re.search(r"^\| 2 \| 0 \| ok \| q2 \| a2 \| a2 \| 1\.000 \| ERR \| [\d.]+(ms|s) \|$", text, re.M)
    assert re.search(r"^\| 3 \| 0 \| error \| q3 \| RuntimeError: agent exploded \| a3 \| – \| – \| [\d.]+(ms|s) \|$",
                     text, re.M)


@pytest.mark.parametrize(
    ("args", "message"),
    [(("latest", "--format", "xml"),
      "error: Got --format 'xml'; choose one of csv, markdown, json, junit, baseline, every-eval-ever, inspect."),
     (("latest",),
      "error: Got no --format; choose one of csv, markdown, json, junit, baseline, every-eval-ever, inspect."),
     (("latest", "-o", "results.txt"), "error: Got no --format and cannot tell one from 'results.txt'; pass "
                                        "--format csv|markdown|json|junit|baseline|every-eval-ever|inspect or "
                                        "name the file *.csv, *.md, *.json or *.xml."),
     (("previous", "--format", "csv"), "error: There is no previous run yet (1 stored)"),
     (("zzz", "--format", "csv"), "error: No run has id 'zzz'")],
)
def test_export_bad_input_exits_2(exported: tuple[Path, dict[str, Any]], args: tuple[str, ...], message: str) -> None:
    root, _ = exported
    result = cobalt(root, "export", *args)
    assert result.returncode == 2 and result.stdout == "" and result.stderr.startswith(message), result.stderr


def test_export_without_runs_exits_2(project: Path) -> None:
    result = cobalt(project, "export", "latest", "--format", "csv")
    assert result.returncode == 2 and "no stored runs yet; run `cobalt run` first" in result.stderr


def _report(**config: Any) -> ExperimentReport:
    items = [ItemResult(index=0, run_index=run, input="q", evaluations={
        "s": Evaluation(score=0.6, passed=False, reason="bell \x07 rings")}) for run in (0, 1)]
    return ExperimentReport(id="r1", name="qa <&>", timestamp="2026-01-01T00:00:00+00:00", config=config,
                            items=items)


def test_junit_items_follow_the_pass_mark_only_with_items_fail_and_gates_get_their_own_suite() -> None:
    report = _report()  # both runs of item 0 score 0.6 but fail their evaluator's pass mark; no gates: passed
    strict = ET.fromstring(to_junit(report, items_fail=True))
    assert [s.get("name") for s in strict.iter("testsuite")] == ["qa <&>"]  # no gates: no gates suite
    assert suite_counts(strict) == ("2", "2", "0")
    assert [c.get("name") for c in strict.iter("testcase")] == ["item 0 / s", "item 0 / s (run 1)"]
    assert "bell ? rings" in (strict.find("testsuite/testcase/failure").get("message") or "")  # type: ignore[union-attr]
    tree = ET.fromstring(to_junit(report))
    assert suite_counts(tree) == ("2", "0", "0")
    assert case_details(tree, "item 0 / s") == ({"cobalt.status": "ok", "cobalt.score": "0.6",
                                                 "cobalt.passed": "false"}, "bell ? rings")
    report.assertions = [AssertionResult(name="s >= 0.7", passed=False, message="s = 0.6, must be at least 0.7"),
                         AssertionResult(name="latency.p95 <= 100", passed=True, message="latency.p95 = 5")]
    tree = ET.fromstring(to_junit(report))
    assert suite_counts(tree) == ("4", "1", "0")
    assert junit_outcomes(tree) == {
        "qa <&>": {"item 0 / s": ("pass", None), "item 0 / s (run 1)": ("pass", None)},
        "qa <&> / gates": {"s >= 0.7": ("failure", "s = 0.6, must be at least 0.7"),
                           "latency.p95 <= 100": ("pass", None)}}


def test_junit_fails_errored_items_only_when_an_error_rate_gate_failed_the_run() -> None:
    ok = Evaluation(score=1.0, passed=True)
    report = ExperimentReport(id="r1", name="qa", timestamp="2026-01-01T00:00:00+00:00", items=[
        ItemResult(index=0, evaluations={"s": ok}),
        ItemResult(index=1, evaluations={"s": Evaluation(status="eval-error", error="judge said nothing")}),
        ItemResult(index=2, status="timeout", error="too slow"),
        ItemResult(index=3, evaluations={"s": Evaluation(score=0.1, passed=False)})])
    for passed in (True, False):
        report.assertions = [AssertionResult(name="error rate <= 0%", gate="error rate <= 0%", passed=passed,
                                             message="1 of 4 agent calls failed (25.0%)")]
        tree = ET.fromstring(to_junit(report))
        failures = int(tree.get("failures", "")) + int(tree.get("errors", ""))
        assert (failures == 0) is report.passed  # JUnit agrees with the exit code
    assert junit_outcomes(tree) == {"qa": {
        "item 0 / s": ("pass", None), "item 1 / s": ("failure", "eval-error: judge said nothing"),
        "item 2 / s": ("failure", "the agent call timeout: too slow"), "item 3 / s": ("pass", None)},
        "qa / gates": {"error rate <= 0%": ("failure", "1 of 4 agent calls failed (25.0%)")}}


def test_csv_writes_structured_inputs_as_json() -> None:
    report = _report()
    report.items[0].input = {"question": "q", "n": 1}
    rows = list(csv.reader(io.StringIO(to_csv(report))))
    assert rows[1][2] == '{"question": "q", "n": 1}' and rows[1][7] == "0.6" and rows[2][1] == "1"
    assert rows[1][4] == ""  # no expected_output: an empty cell


# -- clean -------------------------------------------------------------------------------------


@pytest.fixture
def cleanable(judged_project: Path, llm: FakeLLM) -> tuple[Path, list[str]]:
    """Two runs of a judged experiment (run ids oldest first) and the judge's cache entries."""
    write_experiment(judged_project, JUDGED, "judged.cobalt.py")
    for _ in range(2):
        result = cobalt(judged_project, "run")
        assert result.returncode == 0, result.stdout + result.stderr
    assert llm.count("chat") == 3  # the second run's judge answers came from the cache
    ids = [r["run_id"] for r in Store(judged_project / ".cobalt" / "cobalt.duckdb").runs()][::-1]
    return judged_project, ids


def cache_files(root: Path) -> list[Path]:
    return sorted(p for p in (root / ".cobalt" / "cache").rglob("*") if p.is_file())


def results_files(root: Path) -> list[Path]:
    return sorted((root / ".cobalt" / "results").glob("*.json"))


def make_old(path: Path, days: float = 40) -> None:
    old = time.time() - days * 86400
    os.utime(path, (old, old))


def test_clean_refuses_without_yes_when_stdin_is_not_a_terminal(cleanable: tuple[Path, list[str]]) -> None:
    root, ids = cleanable
    result = cobalt(root, "clean")
    assert result.returncode == 2
    assert re.fullmatch(r"Will delete 3 cache entries \(\d+( bytes|\.\dKB)\) and 2 runs from the store and 2 "
                        r"results files \(\d+\.\dKB\)\.\n", result.stdout), result.stdout
    assert result.stderr.strip() == ("error: Refusing to delete without confirmation: stdin is not a terminal; "
                                     "pass --yes.")
    assert len(cache_files(root)) == 3 and len(results_files(root)) == 2 and row_counts(root, ids[0])["runs"] == 1


def test_clean_older_than_deletes_only_old_entries_and_runs(cleanable: tuple[Path, list[str]]) -> None:
    root, (old_run, new_run) = cleanable
    entries = cache_files(root)
    make_old(entries[0])
    old_file = Path(Store(root / ".cobalt" / "cobalt.duckdb").runs()[1]["results_path"])
    assert old_run in old_file.name
    make_old(old_file)
    before = row_counts(root, old_run)
    assert before == {"runs": 1, "outputs": 4, "scores": 6, "aggregates": 5, "verdicts": 3}

    cache = cobalt(root, "clean", "--cache", "--older-than", "30d", "--yes")
    assert cache.returncode == 0, cache.stderr
    assert re.match(r"Will delete 1 cache entry \(\d+ bytes\)\.\nDeleted 1 cache entry", cache.stdout)
    assert cache_files(root) == entries[1:] and not entries[0].parent.exists()  # its empty folder went too
    assert row_counts(root, old_run) == before

    results = cobalt(root, "clean", "--results", "--older-than", "30d", "--yes")
    assert results.returncode == 0, results.stderr
    assert "Deleted 1 run from the store and 1 results file (" in results.stdout
    assert row_counts(root, old_run) == dict.fromkeys(TABLES, 0)
    assert row_counts(root, new_run) == before and not old_file.exists() and len(results_files(root)) == 1
    history = json.loads(cobalt(root, "history", "--json").stdout)
    assert [e["run_id"] for e in history] == [new_run]

    again = cobalt(root, "clean", "--older-than", "30d")
    assert again.returncode == 0 and again.stdout == "Nothing to delete older than 30d.\n"


def test_clean_asks_on_a_terminal_then_deletes_everything(cleanable: tuple[Path, list[str]]) -> None:
    root, ids = cleanable
    declined = cobalt_on_a_terminal(root, "clean", typed="n\n")
    assert declined.returncode == 0 and "Delete them? [y/N]" in declined.stdout
    assert declined.stdout.rstrip().endswith("Nothing deleted.") and len(cache_files(root)) == 3

    accepted = cobalt_on_a_terminal(root, "clean", typed="y\n")
    assert accepted.returncode == 0, accepted.stderr
    assert "Deleted 3 cache entries" in accepted.stdout and "2 runs from the store" in accepted.stdout
    assert cache_files(root) == [] and results_files(root) == []
    assert all(row_counts(root, run) == dict.fromkeys(TABLES, 0) for run in ids)
    nothing = cobalt(root, "clean", "--yes")
    assert nothing.returncode == 0 and nothing.stdout == "Nothing to delete.\n"
    assert cobalt(root, "history").stdout.strip() == "No runs yet; run `cobalt run`."


def test_clean_keeps_runs_still_in_progress(project: Path) -> None:
    store = killed_and_live_runs(project)
    result = cobalt(project, "clean", "--results", "--yes")
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [
        "Keeping 1 run(s) still in progress.", "Will delete 1 run from the store and 0 results files (0 bytes).",
        "Deleted 1 run from the store and 0 results files (0 bytes)."]
    assert [r["run_id"] for r in store.runs()] == ["r-live"]


def test_clean_in_an_empty_project_and_bad_durations(project: Path) -> None:
    result = cobalt(project, "clean")
    assert result.returncode == 0 and result.stdout == "Nothing to delete.\n"
    assert not (project / ".cobalt").exists()
    bad = cobalt(project, "clean", "--older-than", "a month")
    assert bad.returncode == 2 and bad.stderr.startswith("error: --older-than = 'a month' is not a duration")


# -- rescore -----------------------------------------------------------------------------------


def judge_by_prompt_version(kind: str, body: dict[str, Any]) -> Any:
    prompt = " ".join(str(m.get("content", "")) for m in body.get("messages") or [])
    return answer(0.3, "v2 is strict") if "Prompt v2" in prompt else answer(0.9, "v1 is lenient")


@pytest.fixture
def judged_run(judged_project: Path, llm: FakeLLM) -> tuple[Path, str]:
    llm.respond = judge_by_prompt_version
    write_experiment(judged_project, JUDGED, "judged.cobalt.py")
    result = cobalt(judged_project, "run")
    assert result.returncode == 0, result.stdout + result.stderr
    assert llm.count("chat") == 3 and agent_calls(judged_project) == 4  # item 3's agent call failed
    return judged_project, Store(judged_project / ".cobalt" / "cobalt.duckdb").runs()[0]["run_id"]


def agent_calls(root: Path) -> int:
    return len((root / "agent-calls.txt").read_text().splitlines())


def test_rescore_runs_the_new_judge_prompt_without_calling_the_agent(judged_run: tuple[Path, str],
                                                                     llm: FakeLLM) -> None:
    root, old = judged_run
    result = cobalt(root, "rescore", "latest", "--evaluator", "judge", "--ci", PROMPT_VERSION="2",
                    AGENT_FORBIDDEN="1")
    assert result.returncode == 1, result.stdout + result.stderr  # judge 0.3 < the 0.5 gate
    assert llm.count("chat") == 6 and agent_calls(root) == 4
    store = Store(root / ".cobalt" / "cobalt.duckdb")
    new = store.runs()[0]
    assert new["run_id"] != old and new["parent_run_id"] == old and new["passed"] is False
    assert result.stdout.strip().endswith(f"Rescored run {old} as new run {new['run_id']}.")
    assert "gate FAIL judge >= 0.5" in result.stdout
    aggregates = {r["metric"]: r["mean"] for r in store.rows("aggregates", new["run_id"]) if r["kind"] == "evaluator"}
    assert aggregates == {"exact": 1.0, "judge": pytest.approx(0.3)}  # exact carried over from the old run
    old_outputs, new_outputs = store.rows("outputs", old), store.rows("outputs", new["run_id"])
    keep = ("item_index", "output", "status", "error", "input_hash", "latency_ms")
    assert [{k: o[k] for k in keep} for o in new_outputs] == [{k: o[k] for k in keep} for o in old_outputs]
    assert [(s["item_index"], s["evaluator"], s["reason"]) for s in store.rows("scores", new["run_id"])] == [
        (i, name, reason) for i in range(3) for name, reason in (("exact", "exact match"), ("judge", "v2 is strict"))]


def test_rescoring_one_evaluator_keeps_the_others_scores_for_their_gates(judged_run: tuple[Path, str],
                                                                         llm: FakeLLM) -> None:
    root, _ = judged_run
    result = cobalt(root, "rescore", "latest", "--evaluator", "exact", AGENT_FORBIDDEN="1")
    # the gate is on `judge`, which is not re-run: its stored scores carry over and still pass it
    assert result.returncode == 0, result.stdout + result.stderr
    assert llm.count("chat") == 3
    assert ("cost: agent not called (rescore), judge $0  |  judge calls 0, cached or carried over 3"
            in result.stdout)
    report = json.loads(cobalt(root, "export", "latest", "--format", "json").stdout)
    assert {n: s["avg"] for n, s in report["summary"]["scores"].items()} == {"exact": 1.0, "judge": 0.9}
    assert report["config"]["rescored"] == ["exact"] and report["assertions"][0]["passed"] is True


def test_rescore_with_an_unchanged_judge_uses_the_cache(judged_run: tuple[Path, str], llm: FakeLLM) -> None:
    root, old = judged_run
    result = cobalt(root, "rescore", old[:-1], AGENT_FORBIDDEN="1")
    assert result.returncode == 0, result.stdout + result.stderr
    assert llm.count("chat") == 3 and agent_calls(root) == 4
    report = json.loads(cobalt(root, "export", "latest", "--format", "json").stdout)
    assert report["parent_run_id"] == old
    assert {n: s["avg"] for n, s in report["summary"]["scores"].items()} == {"exact": 1.0, "judge": 0.9}
    assert report["summary"]["cached_scores"] == 3 and report["items"][3]["status"] == "error"


def test_rescore_bad_input_exits_2(judged_run: tuple[Path, str], llm: FakeLLM) -> None:
    root, _ = judged_run
    unknown = cobalt(root, "rescore", "latest", "--evaluator", "nope")
    assert unknown.returncode == 2
    assert unknown.stderr.strip() == "error: Experiment 'judged' has no evaluator 'nope'; it has exact, judge."
    (root / "experiments" / "judged.cobalt.py").unlink()
    gone = cobalt(root, "rescore", "latest")
    assert gone.returncode == 2 and "belongs to experiment 'judged', which no experiment file" in gone.stderr
    assert llm.count("chat") == 3 and len(Store(root / ".cobalt" / "cobalt.duckdb").runs()) == 1


def test_rescore_scopes_latest_by_experiment_and_reports_to_github(judged_run: tuple[Path, str],
                                                                   llm: FakeLLM) -> None:
    root, old = judged_run
    summary = root / "summary.md"
    result = cobalt(root, "rescore", "latest", "-e", "judged", AGENT_FORBIDDEN="1", GITHUB_ACTIONS="true",
                    GITHUB_STEP_SUMMARY=str(summary))
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"Rescored run {old} as new run" in result.stdout
    assert summary.read_text().startswith("### cobalt: judged")
    missing = cobalt(root, "rescore", "latest", "-e", "nope")
    assert missing.returncode == 2 and "nope" in missing.stderr
