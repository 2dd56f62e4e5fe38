"""cobalt's pytest plugin, driven as a user drives it: `pytest --cobalt` in a project (through `pytester`, in
process), the `cobalt` fixture, `-k` on item tests. The runs land in the project's real DuckDB store."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import duckdb  # noqa: F401  (see below)
import numpy  # noqa: F401
import pytest
from conftest import write_judge_config
from fakellm import FakeLLM, Reply, answer

import cobalt_lib.ops._run
import cobalt_lib.pytest_plugin._collect  # noqa: F401
from cobalt_lib import Store

pytest_plugins = ["pytester"]

# pytester runs pytest in this process and, after each test, drops the modules that run imported: a C
# extension (DuckDB, numpy) cannot be imported twice in one process, so the engine is imported here, first.

#: Two experiments: `capitals` fails its gate (one wrong answer of three), `echo` passes.
EXPERIMENTS = '''
from cobalt_lib import Dataset, Evaluator, experiment, threshold

ANSWERS = {"Capital of France?": "Paris", "Capital of Spain?": "Lisbon", "Capital of Italy?": "Rome"}
data = Dataset(items=[
    {"id": "france", "input": "Capital of France?", "expected_output": "Paris"},
    {"id": "spain", "input": "Capital of Spain?", "expected_output": "Madrid"},
    {"id": "italy", "input": "Capital of Italy?", "expected_output": "Rome"},
])

@experiment("capitals", data, tags=["geo"], evaluators=[Evaluator(name="exact", type="exact-match")],
            assertions=[threshold("exact", 0.9)])
def capitals(ctx):
    return ANSWERS[ctx.item["input"]]

@experiment("echo", data, evaluators=[Evaluator(name="said", type="function", fn=lambda ctx: 1.0)])
def echo(ctx):
    return ctx.item["input"]
'''

ORDINARY_TEST = "def test_ordinary():\n    assert 1 + 1 == 2\n"


@pytest.fixture(autouse=True)
def _not_in_ci(monkeypatch: pytest.MonkeyPatch) -> None:
    """The runs pytester makes here would write the step summary of a GitHub job running these tests."""
    for name in ("GITHUB_ACTIONS", "GITHUB_STEP_SUMMARY", "COBALT_REPORT_DIR", "COBALT_DAGSTER_RECORD"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def project(pytester: pytest.Pytester) -> Path:
    """A project with one experiment file (two experiments) and one ordinary test file."""
    (pytester.path / "experiments").mkdir()
    (pytester.path / "experiments" / "qa.cobalt.py").write_text(EXPERIMENTS, encoding="utf-8")
    (pytester.path / "test_unit.py").write_text(ORDINARY_TEST, encoding="utf-8")
    return pytester.path


def runs(root: Path) -> list[dict[str, Any]]:
    path = root / ".cobalt" / "cobalt.duckdb"
    return Store(path).runs() if path.exists() else []


def test_off_unless_asked_nothing_is_collected_or_stored(pytester: pytest.Pytester, project: Path) -> None:
    result = pytester.runpytest("-p", "no:cacheprovider", "--collect-only", "-q")
    assert result.ret == 0
    assert [line for line in result.outlines if "::" in line] == ["test_unit.py::test_ordinary"]
    assert not (project / ".cobalt").exists()


def test_a_project_without_experiments_collects_only_its_tests(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_unit=ORDINARY_TEST)
    result = pytester.runpytest("-p", "no:cacheprovider", "--cobalt", "-q")
    result.assert_outcomes(passed=1)
    assert "cobalt runs" not in result.stdout.str()
    assert not (pytester.path / ".cobalt").exists()


def test_each_experiment_is_a_test_failing_with_its_gates_values_and_worst_items(
        pytester: pytest.Pytester, project: Path) -> None:
    result = pytester.runpytest("-p", "no:cacheprovider", "--cobalt", "-rA")
    result.assert_outcomes(passed=2, failed=1)  # echo, the ordinary test; capitals
    out = result.stdout.str()
    result.stdout.fnmatch_lines([
        "*cobalt experiment 'capitals' failed 1 of 3 gates (run *, 3 items).",
        "failed gates:",
        "  exact >= 0.9: exact = 0.6667, must be at least 0.9",
        "evaluators:",
        "  exact: mean 0.667, min 0.000, p50 1.000, max 1.000, 3 scored, pass rate 66.7%",
        "worst items (1 shown):",
        "  #1 [spain] input: Capital of Spain?",
        "    output: Lisbon",
        "    exact 0.000 (below its pass mark 0.500): expected 'Madrid', got 'Lisbon'",
        "results: *.cobalt/results/*_capitals_*.json",
    ])
    assert "Traceback" not in out and "[france]" not in out  # the items that passed are not listed
    stored = {r["experiment"]: r for r in runs(project)}
    assert set(stored) == {"capitals", "echo"} and all(r["status"] == "completed" for r in stored.values())
    result.stdout.fnmatch_lines([f"capitals: run {stored['capitals']['run_id']} failed, results *",
                                 f"echo: run {stored['echo']['run_id']} passed, results *"])
    files = sorted(p.name for p in (project / ".cobalt" / "results").glob("*.json"))
    assert [f.split("_")[1] for f in files] == sorted(["capitals", "echo"])


def test_node_ids_and_tags_select_experiments(pytester: pytest.Pytester, project: Path) -> None:
    result = pytester.runpytest("-p", "no:cacheprovider", "--cobalt", "experiments/qa.cobalt.py::echo", "-q")
    result.assert_outcomes(passed=1)
    assert [r["experiment"] for r in runs(project)] == ["echo"]
    tagged = pytester.runpytest("-p", "no:cacheprovider", "--cobalt", "--cobalt-tag", "geo", "--collect-only", "-q")
    assert [line for line in tagged.outlines if "::" in line] == ["experiments/qa.cobalt.py::capitals",
                                                                   "test_unit.py::test_ordinary"]


def test_a_tag_no_experiment_has_names_the_tags_there_are(pytester: pytest.Pytester, project: Path) -> None:
    result = pytester.runpytest("-p", "no:cacheprovider", "--cobalt", "--cobalt-tag", "nosuch", "-q")
    assert result.ret == pytest.ExitCode.USAGE_ERROR  # not 5, "no tests ran", with nothing said
    assert "ERROR: cobalt: none of the 2 experiments found has the tag nosuch (--cobalt-tag); their tags: geo." \
        in result.stderr.lines
    assert runs(project) == []


def test_ini_option_switches_it_on_and_no_cobalt_off(pytester: pytest.Pytester, project: Path) -> None:
    pytester.makeini("[pytest]\ncobalt_experiments = true\ntestpaths = tests\n")
    (project / "tests").mkdir()
    (project / "test_unit.py").rename(project / "tests" / "test_unit.py")
    result = pytester.runpytest("-p", "no:cacheprovider", "--collect-only", "-q")
    # testpaths names only tests/: the experiment directory is collected too
    assert sorted(line for line in result.outlines if "::" in line) == [
        "experiments/qa.cobalt.py::capitals", "experiments/qa.cobalt.py::echo", "tests/test_unit.py::test_ordinary"]
    off = pytester.runpytest("-p", "no:cacheprovider", "--no-cobalt", "--collect-only", "-q")
    assert [line for line in off.outlines if "::" in line] == ["tests/test_unit.py::test_ordinary"]


def test_run_options_land_on_the_stored_runs(pytester: pytest.Pytester, project: Path) -> None:
    result = pytester.runpytest("-p", "no:cacheprovider", "--cobalt", "--cobalt-add-tag", "pr-12",
                                "--cobalt-concurrency", "2", "--cobalt-no-dagster", "-k", "echo", "-q")
    result.assert_outcomes(passed=1)
    (run,) = runs(project)
    config = run["config"]
    assert run["tags"] == ["pr-12"] and config["concurrency"] == 2
    assert Store(project / ".cobalt" / "cobalt.duckdb").query(
        "SELECT how FROM dagster_runs WHERE run_id = ?", [run["run_id"]]) == [{"how": "skipped"}]
    bad = pytester.runpytest("-p", "no:cacheprovider", "--cobalt", "--cobalt-concurrency", "0")
    assert bad.ret == pytest.ExitCode.USAGE_ERROR
    assert "--cobalt-concurrency must be 1 or more, got 0." in bad.stderr.str()


def test_a_bad_cobalt_config_is_a_usage_error(pytester: pytest.Pytester, project: Path) -> None:
    (project / "cobalt.toml").write_text("concurency = 3\n", encoding="utf-8")
    result = pytester.runpytest("-p", "no:cacheprovider", "--cobalt")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "cobalt: " in result.stderr.str() and "'concurency'" in result.stderr.str()
    assert "Traceback" not in result.stderr.str()
    plain = pytester.runpytest("-p", "no:cacheprovider", "-q")  # off: the config is not even read
    plain.assert_outcomes(passed=1)


def test_items_mode_makes_each_item_a_test_and_k_runs_only_those(pytester: pytest.Pytester, project: Path) -> None:
    listed = pytester.runpytest("-p", "no:cacheprovider", "--cobalt", "--cobalt-items", "--collect-only", "-q")
    assert [line for line in listed.outlines if "capitals" in line] == [
        "experiments/qa.cobalt.py::capitals::france", "experiments/qa.cobalt.py::capitals::spain",
        "experiments/qa.cobalt.py::capitals::italy", "experiments/qa.cobalt.py::capitals::gates"]
    result = pytester.runpytest("-p", "no:cacheprovider", "--cobalt-items", "-k", "capitals and spain")
    result.assert_outcomes(failed=1, deselected=8)
    result.stdout.fnmatch_lines([
        "item 1 ?spain? of 'capitals' failed (run *):",
        "  exact 0.000 (below its pass mark 0.500): expected 'Madrid', got 'Lisbon'",
    ])
    (run,) = runs(project)  # one run, of the selected item alone, keeping its dataset index
    config = run["config"]
    assert run["experiment"] == "capitals" and config["indices"] == [1]
    outputs = Store(project / ".cobalt" / "cobalt.duckdb").rows("outputs", run["run_id"])
    assert [(o["item_index"], o["item_id"], o["output"]) for o in outputs] == [(1, "spain", "Lisbon")]


def test_items_mode_runs_each_experiment_once(pytester: pytest.Pytester, project: Path) -> None:
    result = pytester.runpytest("-p", "no:cacheprovider", "--cobalt", "--cobalt-items", "-q")
    result.assert_outcomes(passed=7, failed=2)  # 3 + 1 of echo, 2 of capitals, the ordinary test; spain, gates
    result.stdout.fnmatch_lines(["*cobalt experiment 'capitals' failed 1 of 3 gates*"])
    stored = runs(project)
    assert sorted(r["experiment"] for r in stored) == ["capitals", "echo"]
    assert all("indices" not in r["config"] for r in stored)


FIXTURE_TEST = '''
import pytest
from cobalt_lib import ConfigError

def test_runs_and_asserts(cobalt):
    report = cobalt.run("capitals")
    assert report.metric("exact") == pytest.approx(2 / 3)
    with pytest.raises(AssertionError) as failed:
        cobalt.assert_passed(report)
    assert "exact >= 0.9: exact = 0.6667, must be at least 0.9" in str(failed.value)
    assert str(failed.value) == cobalt.explain(report)
    some = cobalt.run(cobalt.experiment("capitals"), items=[0, 2], tags=["subset"])
    cobalt.assert_passed(some)
    assert [i.index for i in some.items] == [0, 2] and "subset" in some.tags

def test_unknown_name(cobalt):
    with pytest.raises(ConfigError, match="No experiment named 'capital' .*did you mean 'capitals'"):
        cobalt.run("capital")

def test_fails_with_the_gates(cobalt):
    cobalt.assert_passed(cobalt.run("capitals"))
'''


def test_the_fixture_runs_an_experiment_from_an_ordinary_test(pytester: pytest.Pytester, project: Path) -> None:
    pytester.makepyfile(test_fixture=FIXTURE_TEST)
    result = pytester.runpytest("-p", "no:cacheprovider", "test_fixture.py", "-q")  # no --cobalt needed
    result.assert_outcomes(passed=2, failed=1)
    result.stdout.fnmatch_lines(["*ExperimentFailed: cobalt experiment 'capitals' failed 1 of 3 gates*",
                                 "*exact >= 0.9: exact = 0.6667, must be at least 0.9"])
    assert sorted(r["experiment"] for r in runs(project)) == ["capitals"] * 3
    result.stdout.fnmatch_lines(["*= cobalt runs =*", "capitals: run * failed, results *"])


def test_a_broken_experiment_file_is_one_collection_error(pytester: pytest.Pytester, project: Path) -> None:
    (project / "experiments" / "broken.cobalt.py").write_text("import nowhere_to_be_found\n", encoding="utf-8")
    result = pytester.runpytest("-p", "no:cacheprovider", "--cobalt", "-q")
    assert result.ret == pytest.ExitCode.INTERRUPTED
    result.stdout.fnmatch_lines(["*ERROR collecting experiments/broken.cobalt.py*",
                                 "*broken.cobalt.py, line 1, raised ModuleNotFoundError: No module named "
                                 "'nowhere_to_be_found'"])
    assert "Traceback" not in result.stdout.str()


JUDGED = '''
from cobalt_lib import Dataset, Evaluator, experiment, threshold

data = Dataset([{"id": f"q{i}", "input": f"question {i}", "expected_output": f"a{i}"} for i in range(4)])

@experiment("judged", data, evaluators=[Evaluator(name="relevance", prompt="Is {{output}} right for {{input}}?")],
            assertions=[threshold("relevance", 0.8)])
def agent(ctx):
    return f"answer {ctx.index}"
'''


def test_a_judged_experiment_fails_with_the_judges_reasons(pytester: pytest.Pytester, llm: FakeLLM,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    (pytester.path / "experiments").mkdir()
    (pytester.path / "experiments" / "judged.cobalt.py").write_text(JUDGED, encoding="utf-8")
    write_judge_config(pytester.path, llm)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-pytest-plugin")

    def respond(kind: str, body: dict[str, Any]) -> Reply:
        prompt = json.dumps(body.get("messages"))
        return answer(0.1, "it answers another question") if "question 2" in prompt else answer(0.9, "on point")

    llm.respond = respond
    result = pytester.runpytest("-p", "no:cacheprovider", "--cobalt", "-q")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines([
        "*cobalt experiment 'judged' failed 1 of 3 gates*",
        "  relevance >= 0.8: relevance = 0.7, must be at least 0.8",
        "  relevance: mean 0.700, min 0.100, p50 0.900, max 0.900, 4 scored, pass rate 75%",
        "  #2 [q2] input: question 2",
        "    output: answer 2",
        "    relevance 0.100 (below its pass mark 0.500): it answers another question",
    ])
    assert "sk-test-pytest-plugin" not in result.stdout.str()
    assert llm.count() == 4


BROKEN = '''
from cobalt_lib import Dataset, Evaluator, experiment

data = Dataset([{"id": f"q{i}", "input": f"q{i}", "expected_output": f"a{i}"} for i in range(3)])

@experiment("no-key", data, evaluators=[Evaluator(name="relevance", prompt="Is {{output}} right?")])
def no_key(ctx):
    return "x"

@experiment("crashes", data, evaluators=[Evaluator(name="exact", type="exact-match")])
def crashes(ctx):
    if ctx.index == 1:
        raise ValueError("the tool timed out upstream")
    return ctx.item["expected_output"]
'''


def test_bad_input_and_agent_errors_say_what_happened(pytester: pytest.Pytester) -> None:
    (pytester.path / "experiments").mkdir()
    (pytester.path / "experiments" / "broken.cobalt.py").write_text(BROKEN, encoding="utf-8")
    result = pytester.runpytest("-p", "no:cacheprovider", "--cobalt", "-q")
    result.assert_outcomes(failed=2)
    out = result.stdout.str()
    assert "OPENAI_API_KEY" in out and "Traceback" not in out
    result.stdout.fnmatch_lines([
        "*cobalt experiment 'crashes' failed 1 of 2 gates*",
        "  error rate <= 0%: *",
        "  #1 [q1] input: q1",
        "    the agent call error: ValueError: the tool timed out upstream",
    ])
    assert [r["experiment"] for r in runs(pytester.path)] == ["crashes"]  # no-key stopped before its run


REPEATED = '''
from cobalt_lib import Dataset, Evaluator, experiment

@experiment("flaky", Dataset([{"input": f"q{i}", "expected_output": f"a{i}"} for i in range(3)]), runs=2,
            evaluators=[Evaluator(name="exact", type="exact-match")])
def flaky(ctx):
    if ctx.index == 1 and ctx.run_index == 1:
        raise RuntimeError("rate limited")
    return ctx.item["expected_output"]
'''


def test_items_without_ids_and_repeats(pytester: pytest.Pytester) -> None:
    (pytester.path / "experiments").mkdir()
    (pytester.path / "experiments" / "flaky.cobalt.py").write_text(REPEATED, encoding="utf-8")
    result = pytester.runpytest("-p", "no:cacheprovider", "--cobalt-items", "-v")
    result.assert_outcomes(passed=2, failed=2)  # item-0, item-2; item-1 and the gates (its error rate)
    result.stdout.fnmatch_lines([
        "*::flaky::item-0 PASSED*", "*::flaky::item-1 FAILED*", "*::flaky::item-2 PASSED*", "*::flaky::gates FAILED*",
        "item 1 ?*? of 'flaky' failed 1 of 2 repeats (run *):",
        "  repeat 1: the agent call error: RuntimeError: rate limited",
        "  #1:1 ?*? input: q1",
    ])


def test_under_github_actions_the_runs_get_the_summary_reports_and_annotations(
        pytester: pytest.Pytester, project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    summary = project / "summary.md"
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    result = pytester.runpytest("-p", "no:cacheprovider", "--cobalt", "-q")
    result.assert_outcomes(passed=2, failed=1)
    result.stdout.fnmatch_lines(["::error title=cobalt gate failed%3A capitals::exact >= 0.9: exact = 0.6667, must be "
                                 "at least 0.9"])
    text = summary.read_text(encoding="utf-8")
    assert "capitals" in text and "echo" in text
    reports = sorted(p.name.split("-")[0] for p in (project / ".cobalt" / "reports").glob("*.html"))
    assert reports == ["capitals", "echo"]
