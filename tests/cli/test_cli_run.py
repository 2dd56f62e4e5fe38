"""`cobalt init` and `cobalt run` as a user types them, in a temporary project."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import ClassVar

import pytest
from conftest import http_server

from cobalt_lib import Store

COBALT = str(Path(sys.executable).parent / "cobalt")

EXPERIMENT = '''
import os
from cobalt_lib import Dataset, Evaluator, experiment, threshold

data = Dataset([{"input": f"q{i}", "expected_output": f"a{i}"} for i in range(4)])
WRONG = int(os.environ.get("WRONG", "0"))

@experiment("qa", data, tags=["smoke"], evaluators=[Evaluator(name="exact", type="exact-match")],
            assertions=[threshold("exact", 0.75)])
def agent(ctx):
    if os.environ.get("CRASH"):  # the process dies mid-run, as on a power cut: the run is left incomplete
        os._exit(3)
    return "nope" if ctx.index < WRONG else ctx.item["expected_output"]
'''

OTHER = '''
from cobalt_lib import Dataset, Evaluator, experiment
experiment("other-agent", Dataset([{"expected_output": "x"}]), lambda ctx: "x",
           evaluators=[Evaluator(name="exact", type="exact-match")])
'''


#: A run crashed with this lease (1 ms) has lost it before the next command has even started: it reads incomplete.
SHORT_LEASE = {"COBALT_LEASE_SECONDS": "0.001"}


def cobalt(project: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if k not in ("GITHUB_ACTIONS", "GITHUB_STEP_SUMMARY")}
    return subprocess.run([COBALT, *args], cwd=project, capture_output=True, text=True, timeout=120,
                          env={**clean, **env})


@pytest.fixture
def qa_project(project: Path) -> Path:
    (project / "experiments").mkdir()
    (project / "experiments" / "qa.cobalt.py").write_text(EXPERIMENT)
    (project / "experiments" / "other_experiment.py").write_text(OTHER)
    return project


def test_help_lists_commands_with_examples(project: Path) -> None:
    result = cobalt(project, "--help")
    assert result.returncode == 0 and "init" in result.stdout and "run" in result.stdout
    for command in ("run", "init"):
        assert "Example:" in cobalt(project, command, "--help").stdout


def test_init_writes_a_project_that_runs_offline(project: Path) -> None:
    first = cobalt(project, "init")
    assert first.returncode == 0, first.stderr
    assert (project / "cobalt.toml").is_file() and (project / "experiments" / "example.cobalt.py").is_file()
    assert ".cobalt/" in (project / ".gitignore").read_text().splitlines()
    run = cobalt(project, "run")
    assert run.returncode == 0, run.stderr
    assert "cobalt example" in run.stdout and "gate PASS correct >= 0.75" in run.stdout
    assert len(list((project / ".cobalt" / "results").glob("*_example_*.json"))) == 1


def test_init_is_idempotent_and_never_overwrites(project: Path) -> None:
    (project / ".gitignore").write_text("node_modules/")
    (project / "experiments").mkdir()
    (project / "experiments" / "example.cobalt.py").write_text("# mine\n")
    cobalt(project, "init")
    second = cobalt(project, "init")
    assert second.returncode == 0
    assert (project / "experiments" / "example.cobalt.py").read_text() == "# mine\n"
    assert (project / ".gitignore").read_text() == "node_modules/\n# cobalt results, cache and store\n.cobalt/\n"
    assert second.stdout.count("skipped") == 3 and "created" not in second.stdout


def _init(project: Path, *args: str) -> str:
    """`cobalt init` in process, through typer's runner; returns what it printed."""
    from typer.testing import CliRunner

    from cobalt_lib.cli import app

    result = CliRunner().invoke(app, ["init", str(project), *args])
    assert result.exit_code == 0, result.output
    return result.output


def test_init_in_an_existing_project_does_not_bring_back_a_deleted_example(project: Path) -> None:
    example = project / "experiments" / "example.cobalt.py"
    assert f"created  {example}" in _init(project)
    example.unlink()
    again = _init(project)
    assert not example.exists()
    assert f"skipped  {example} (the project already exists; `cobalt init --example` writes it)" in again
    assert f"created  {example}" in _init(project, "--example")
    example.write_text("# mine\n")
    assert f"skipped  {example}\n" in _init(project, "--example") and example.read_text() == "# mine\n"


def test_generated_config_has_every_top_level_key_above_the_tables(project: Path) -> None:
    import tomllib

    from cobalt_lib import ConfigError, load_config
    from cobalt_lib.cli._init import CONFIG_TEMPLATE

    _init(project)
    config_file = project / "cobalt.toml"
    text = config_file.read_text()
    assert text == CONFIG_TEMPLATE
    head = text[:text.index("\n[")]
    scalars = [key for key, value in tomllib.loads(text).items() if not isinstance(value, dict)]
    assert scalars and all(f"\n{key} = " in head for key in scalars)
    assert "Top-level keys go here, above the tables" in head
    assert load_config(project).timeout == 30  # the file as generated validates
    config_file.write_text(text + "timeout = 60\n")  # what a user appends: it lands in the last table
    with pytest.raises(ConfigError, match=r"unknown key 'ci\.timeout'; 'timeout' is a top-level key: "
                                          r"move it above the first \[table\] line"):
        load_config(project)


def test_init_inside_a_project_says_which_config_now_wins(project: Path) -> None:
    cobalt(project, "init")
    nested = cobalt(project, "init", "sub")
    assert nested.returncode == 0
    assert f"is inside the cobalt project of {project.resolve() / 'cobalt.toml'}" in nested.stdout
    assert (project / "sub" / "cobalt.toml").is_file()
    assert "note:" not in cobalt(project, "init", "sub").stdout  # second time: nothing new written


def test_run_prints_items_summary_and_where_results_went(qa_project: Path) -> None:
    result = cobalt(qa_project, "run", "--filter", "qa")
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "\x1b[" not in out  # not a TTY: no colour
    assert "4 items x 1 run x 1 evaluator" in out and "#3 ✓ exact=1.000" in out
    run = Store(qa_project / ".cobalt" / "cobalt.duckdb").runs()[0]
    assert f"run id:  {run['run_id']}" in out and f"results: {run['results_path']}" in out
    assert run["experiment"] == "qa"


def test_failed_gate_exits_1_in_ci_mode(qa_project: Path) -> None:
    result = cobalt(qa_project, "run", "--ci", "-f", "qa", WRONG="2")
    assert result.returncode == 1
    assert "gate FAIL exact >= 0.75  exact = 0.5, must be at least 0.75" in result.stdout
    assert result.stdout.splitlines()[0].startswith("cobalt run qa (")


def test_filter_and_tag_select_experiments(qa_project: Path) -> None:
    result = cobalt(qa_project, "run", "--json", "--tag", "smoke")
    assert [r["name"] for r in json.loads(result.stdout)] == ["qa"]
    result = cobalt(qa_project, "run", "--json", "--filter", "other")
    runs = json.loads(result.stdout)
    assert [r["name"] for r in runs] == ["other-agent"] and runs[0]["passed"] is True
    assert runs[0]["summary"]["scores"]["exact"]["avg"] == 1.0


def test_json_stdout_is_the_json_alone_when_user_code_prints(project: Path) -> None:
    (project / "experiments").mkdir()
    (project / "experiments" / "chatty.cobalt.py").write_text(
        "from cobalt_lib import Dataset, Evaluator, experiment\n"
        "print('loading the chatty experiment')\n"
        "def agent(ctx):\n"
        "    print('thinking about', ctx.input)\n"
        "    return 'x'\n"
        "experiment('chatty', Dataset([{'input': 'q', 'expected_output': 'x'}]), agent,\n"
        "           evaluators=[Evaluator(name='exact', type='exact-match')])\n")
    result = cobalt(project, "run", "--json")
    assert result.returncode == 0, result.stderr
    assert [r["name"] for r in json.loads(result.stdout)] == ["chatty"]
    assert "loading the chatty experiment" in result.stderr and "thinking about q" in result.stderr


def test_add_tag_and_concurrency_reach_the_run(qa_project: Path) -> None:
    result = cobalt(qa_project, "run", "experiments/qa.cobalt.py", "--add-tag", "nightly", "-c", "3")
    assert result.returncode == 0, result.stderr
    run = Store(qa_project / ".cobalt" / "cobalt.duckdb").runs()[0]
    assert run["tags"] == ["smoke", "nightly"] and run["config"]["concurrency"] == 3


@pytest.mark.parametrize(
    ("files", "message"),
    [({"cobalt.toml": "concurency = 3\n"}, "unknown key 'concurency'; did you mean 'concurrency'?"),
     ({"experiments/gate.cobalt.py": OTHER.replace('"other-agent"', '"gated"').replace(
         'lambda ctx: "x",', 'lambda ctx: "x", assertions=[__import__("cobalt_lib").threshold("exactt", 1)],')},
      "refers to metric 'exactt'"),
     ({"experiments/calibrated.cobalt.py": OTHER.replace(
         '"other-agent"', '"judged"').replace(
         'lambda ctx: "x",', 'lambda ctx: "x", assertions=[__import__("cobalt_lib").calibrated("exakt")],')},
      "Assertion 'calibrated exakt kappa >= 0.7' names evaluator 'exakt', which this experiment does not have; "
      "did you mean 'exact'?"),
     # A broken file given by name (discovered, it is a warning and the others run: tests/mcp/test_mcp_discovery.py)
     ({"experiments/bad.cobalt.py": "def broken(:\n"}, "line 1: syntax error"),
     ({"experiments/data.cobalt.py": "from cobalt_lib import Dataset\nDataset.from_file('d.jsonl')\n",
       "d.jsonl": '{"input": 1}\n{"input": \n'}, "d.jsonl, line 2: invalid JSON")],
)
def test_bad_usage_exits_2_with_one_sentence_and_nothing_runs(qa_project: Path, files: dict[str, str],
                                                             message: str) -> None:
    for name, text in files.items():
        (qa_project / name).write_text(text)
    named = [name for name in files if name.startswith("experiments/") and name.endswith(("bad.cobalt.py",
                                                                                          "data.cobalt.py"))]
    result = cobalt(qa_project, "run", *named)
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and message in lines[0], result.stderr
    assert not (qa_project / ".cobalt" / "cobalt.duckdb").exists()


def test_no_experiments_is_a_usage_error(project: Path) -> None:
    result = cobalt(project, "run")
    assert result.returncode == 2 and "cobalt init" in result.stderr


def test_a_filter_that_matches_nothing_names_the_experiments_found(qa_project: Path) -> None:
    result = cobalt(qa_project, "run", "-f", "zzz")
    assert result.returncode == 2
    assert result.stderr.strip() == "error: No experiment name contains 'zzz' (--filter); found: other-agent, qa."


def test_a_config_threshold_no_experiment_produces_is_a_warning(qa_project: Path) -> None:
    # Needs [ci] thresholds to apply only to experiments producing the metric (prepare() in _pipeline.py).
    (qa_project / "cobalt.toml").write_text("[ci]\nthresholds = { exact = { min = 0.5 }, relevance = { min = 0.8 } }\n")
    result = cobalt(qa_project, "run", "--ci")
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stderr.splitlines() == [
        "warning: [ci] thresholds 'relevance' applies to none of the experiments run (none produces 'relevance'); "
        "it gates nothing."]
    assert "gate PASS exact >= 0.5" in result.stdout


def test_github_actions_summary_and_annotations(qa_project: Path) -> None:
    summary = qa_project / "summary.md"
    result = cobalt(qa_project, "run", "--ci", "-f", "qa", WRONG="3", GITHUB_ACTIONS="true",
                    GITHUB_STEP_SUMMARY=str(summary))
    assert result.returncode == 1
    # `:` and `,` are escaped in the title property only: the runner does not decode them in the message
    assert "::error title=cobalt gate failed%3A qa::exact >= 0.75: exact = 0.25, must be at least 0.75" \
        in result.stdout.splitlines()
    text = summary.read_text()
    assert text.startswith("### cobalt: qa — FAILED") and "| exact | 0.250 |" in text
    assert "❌ **exact >= 0.75**" in text


#: An experiment file with a typo in an evaluator's type: it fails to load (issue 34's repro).
MISTYPED = ('from cobalt_lib import Dataset, Evaluator, experiment\n'
            'experiment("m", Dataset([{"input": "q"}]), lambda ctx: "a",\n'
            '           evaluators=[Evaluator(name="c", type="contain", value="a")])\n')


def test_a_file_that_does_not_load_fails_a_ci_run_and_says_so_on_github(qa_project: Path) -> None:
    (qa_project / "experiments" / "m.cobalt.py").write_text(MISTYPED)
    broken = qa_project.resolve() / "experiments" / "m.cobalt.py"
    cause = f"{broken} did not load: Evaluator 'c' has unknown type 'contain'; did you mean 'contains'?"
    outside = cobalt(qa_project, "run", "--no-dagster")  # outside --ci: a warning, the others run
    assert outside.returncode == 0, outside.stderr
    assert outside.stderr.startswith(f"warning: {cause}") and "its experiments are skipped, the others run." \
        in outside.stderr
    summary, reports = qa_project / "summary.md", qa_project / "ci-reports"
    ci = cobalt(qa_project, "run", "--ci", "--no-dagster", "--add-tag", "ci:7-1", GITHUB_ACTIONS="true",
                GITHUB_STEP_SUMMARY=str(summary), COBALT_REPORT_DIR=str(reports))
    assert ci.returncode == 2, ci.stdout + ci.stderr
    [error] = ci.stderr.strip().splitlines()
    assert error.startswith(f"error: {cause}") and error.endswith(
        "`cobalt run --ci` runs nothing while an experiment file does not load (without --ci its experiments are "
        "skipped with a warning): fix it, or move it out of the test directory.")
    [annotation] = [line for line in ci.stdout.splitlines() if line.startswith("::error")]
    assert annotation.startswith(f"::error title=cobalt%3A an experiment file did not load::{cause}")
    assert summary.read_text().startswith("### cobalt: no experiment ran, an experiment file did not load\n\n"
                                          f"- {cause}")
    assert "cobalt run qa" not in ci.stdout  # nothing ran
    comment = cobalt(qa_project, "ci", "comment", "--tag", "ci:7-1", "--baseline-tag", "branch:main", "--dry-run",
                     COBALT_REPORT_DIR=str(reports))
    assert comment.returncode == 0, comment.stderr
    assert comment.stdout.startswith("<!-- cobalt:pr-comment -->\n## ❌ cobalt evals: no experiment ran, an "
                                     "experiment file did not load")
    assert f"- {cause}" in comment.stdout
    again = cobalt(qa_project, "run", "--ci", "--no-dagster", "-f", "qa", "--add-tag", "ci:7-2",
                   GITHUB_ACTIONS="true", GITHUB_STEP_SUMMARY=str(summary), COBALT_REPORT_DIR=str(reports))
    assert again.returncode == 2  # a filter does not excuse the broken file: it might hold the experiment


def test_when_the_only_experiment_file_does_not_load_that_is_the_headline(project: Path) -> None:
    (project / "experiments").mkdir()
    (project / "experiments" / "m.cobalt.py").write_text(MISTYPED)
    result = cobalt(project, "run")
    assert result.returncode == 2
    [error] = result.stderr.strip().splitlines()
    assert error.startswith(f"error: {project.resolve() / 'experiments' / 'm.cobalt.py'} did not load: "
                            "Evaluator 'c' has unknown type 'contain'; did you mean 'contains'?")
    assert error.endswith("; it is the only experiment file in experiments/ matching **/*.cobalt.py, "
                          "**/*_experiment.py, so nothing ran.")
    assert "cobalt init" not in error and "No experiments found" not in error


class _Hook(BaseHTTPRequestHandler):
    received: ClassVar[list[dict]] = []
    status = 200

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"]))
        type(self).received.append({"path": self.path, "json": json.loads(body)})
        self.send_response(type(self).status)
        self.end_headers()

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def hook_server() -> Iterator[tuple[str, type[_Hook]]]:
    handler = type("Hook", (_Hook,), {"received": [], "status": 200})
    with http_server(handler) as url:
        yield url, handler


def test_webhooks_receive_the_run_summary(qa_project: Path, hook_server) -> None:
    url, handler = hook_server
    (qa_project / "cobalt.toml").write_text(f'webhooks = ["{url}/hooks/cobalt"]\n')
    result = cobalt(qa_project, "run", "-f", "qa")
    assert result.returncode == 0, result.stderr
    [call] = handler.received
    assert call["path"] == "/hooks/cobalt"
    assert call["json"]["name"] == "qa" and call["json"]["passed"] is True
    assert call["json"]["summary"]["scores"]["exact"]["avg"] == 1.0 and "items" not in call["json"]


def test_a_failing_webhook_is_a_warning_not_a_failure(qa_project: Path, hook_server) -> None:
    url, handler = hook_server
    handler.status = 500
    (qa_project / "cobalt.toml").write_text(f'webhooks = ["{url}/secret-token"]\n')
    result = cobalt(qa_project, "run", "-f", "qa")
    assert result.returncode == 0
    assert len(handler.received) == 3  # bounded retries
    assert "warning: webhook" in result.stderr and "HTTP 500" in result.stderr
    assert "secret-token" not in result.stderr


def test_an_unwritable_step_summary_is_a_warning(qa_project: Path) -> None:
    result = cobalt(qa_project, "run", "--ci", "-f", "qa", GITHUB_ACTIONS="true",
                    GITHUB_STEP_SUMMARY=str(qa_project / "no" / "such" / "dir" / "summary.md"))
    assert result.returncode == 0, result.stderr
    assert "warning: could not append to GITHUB_STEP_SUMMARY" in result.stderr


@pytest.mark.parametrize(
    ("args", "message"),
    [(["run", "--bogus"], "No such option: --bogus"), (["run", "--concurrency", "0"], "--concurrency"),
     (["history", "--limit", "abc"], "--limit"), (["compare"], "takes two runs, A (the baseline) and B"),
     (["nosuchcmd"], "No such command 'nosuchcmd'")],
)
def test_usage_errors_are_one_message_and_exit_2(project: Path, args: list[str], message: str) -> None:
    result = cobalt(project, *args)
    assert result.returncode == 2, result.stderr
    assert message in result.stderr and "Traceback" not in result.stderr


def test_a_path_that_cannot_be_written_is_exit_2(project: Path) -> None:
    (project / "a-file").write_text("x")
    result = cobalt(project, "init", str(project / "a-file" / "sub"))
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert result.stderr.startswith("error: ") and "a-file" in result.stderr


JUDGED = '''
from cobalt_lib import Dataset, Evaluator, experiment

experiment("judged", Dataset([{"input": f"q{i}"} for i in range(3)]), lambda ctx: "an answer",
           evaluators=[Evaluator(name="judge", prompt="Rate {{output}} for {{input}}")])
'''


def test_the_api_key_never_reaches_output_results_store_or_dagster(judged_project: Path, llm) -> None:
    from conftest import TEST_KEY
    from fakellm import Reply

    # A server that echoes the key back in its error, as some providers do.
    echo = {"error": {"message": f"Incorrect API key provided: {TEST_KEY}", "type": "invalid_request_error"}}
    (judged_project / "experiments").mkdir()
    (judged_project / "experiments" / "judged.cobalt.py").write_text(JUDGED)
    outputs = ""
    for record in ("off", "inline"):  # inline: the run goes through Dagster's event log too
        llm.script(Reply(status=401, body=echo))
        result = cobalt(judged_project, "run", COBALT_DAGSTER_RECORD=record)
        assert result.returncode == 1, result.stderr  # the eval-error fails the run's error-rate gate
        assert "eval-error" in result.stdout or "judge" in result.stdout
        outputs += result.stdout + result.stderr
    assert "***" in json.dumps([json.loads(p.read_text()) for p in (judged_project / ".cobalt/results").glob("*.json")])
    assert TEST_KEY not in outputs
    leaks = [p for p in (judged_project / ".cobalt").rglob("*") if p.is_file() and TEST_KEY.encode() in p.read_bytes()]
    assert leaks == []
    store = Store(judged_project / ".cobalt" / "cobalt.duckdb")  # DuckDB may compress text: ask it too
    scores = [r for run in store.runs() for r in store.rows("scores", run["run_id"])]
    assert len(scores) == 6 and all(TEST_KEY not in json.dumps(r, default=str) for r in scores)
    assert sum("***" in (r["error"] or "") for r in scores) == 2


def test_a_tag_no_experiment_has_is_named(qa_project: Path) -> None:
    result = cobalt(qa_project, "run", "--tag", "nightly")
    assert result.returncode == 2
    assert result.stderr.strip() == "error: None of the 2 experiments found has the tag nightly; their tags: smoke."


RESUMABLE = '''
import asyncio, os, sys
from pathlib import Path
from cobalt_lib import Dataset, Evaluator, experiment

data = Dataset([{"input": f"q{i}", "expected_output": f"a{i}"} for i in range(12)])

@experiment("resumable", data, concurrency=4, evaluators=[Evaluator(name="exact", type="exact-match")])
async def agent(ctx):
    with open(Path(__file__).parent.parent / "calls.txt", "a") as fh:
        fh.write(f"{ctx.index}\\n")
    if os.environ.get("SAY_CALLS"):  # a line a test can wait for, rather than poll calls.txt
        print(f"cobalt-testing: call {ctx.index}", file=sys.stderr, flush=True)
    if ctx.index >= 5 and not os.environ.get("UNBLOCK"):
        await asyncio.sleep(600)  # stuck until Ctrl-C
    return ctx.item["expected_output"]
'''


def test_resume_finishes_an_interrupted_run_with_only_the_missing_items(project: Path) -> None:
    import signal

    (project / "experiments").mkdir()
    (project / "experiments" / "resumable.cobalt.py").write_text(RESUMABLE)
    clean = {k: v for k, v in os.environ.items() if k not in ("GITHUB_ACTIONS", "GITHUB_STEP_SUMMARY")}
    proc = subprocess.Popen([COBALT, "run"], cwd=project, env=clean, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdout is not None
    finished = 0
    while finished < 5:  # item lines, as the reporter prints them: the condition, not a sleep
        line = proc.stdout.readline()
        assert line, "the run ended early"
        finished += "✓" in line
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    store = Store(project / ".cobalt" / "cobalt.duckdb")
    run_id = store.runs()[0]["run_id"]
    assert proc.returncode == 130
    assert err.strip().endswith(f"interrupted: finished items kept in run {run_id} (incomplete); finish it with "
                                f"`cobalt run --resume {run_id}`")
    assert store.runs()[0]["status"] == "incomplete"
    (project / "calls.txt").unlink()

    result = cobalt(project, "run", "--resume", "latest", UNBLOCK="1")
    assert result.returncode == 0, result.stdout + result.stderr
    called = sorted(int(i) for i in (project / "calls.txt").read_text().split())
    assert called == list(range(5, 12))  # only the agent calls that never finished
    [run] = store.runs()
    assert (run["run_id"], run["status"], run["passed"]) == (run_id, "completed", True)
    outputs = store.rows("outputs", run_id)
    assert [o["item_index"] for o in outputs] == list(range(12))  # no duplicates
    assert len(store.rows("scores", run_id)) == 12
    again = cobalt(project, "run", "--resume", run_id)
    assert again.returncode == 2 and "already completed" in again.stderr


@pytest.mark.parametrize("path", [["--no-dagster"], []], ids=["no-dagster", "default"])
def test_sigterm_keeps_finished_items_prints_the_resume_hint_and_exits_143(project: Path, path: list[str]) -> None:
    import signal

    (project / "experiments").mkdir()
    (project / "experiments" / "resumable.cobalt.py").write_text(RESUMABLE)
    clean = {k: v for k, v in os.environ.items()
             if k not in ("GITHUB_ACTIONS", "GITHUB_STEP_SUMMARY", "DAGSTER_HOME", "COBALT_PROJECT_DIR")}
    proc = subprocess.Popen([COBALT, "run", "--ci", *path], cwd=project, env={**clean, "SAY_CALLS": "1"},
                            text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stderr is not None
    # items 0-4 done and 5-8 stuck (4 in flight): 9 agent calls started, read off stderr, not a sleep
    early = []
    while sum("cobalt-testing: call" in line for line in early) < 9:
        line = proc.stderr.readline()
        assert line, f"the run ended early: {''.join(early)}"
        early.append(line)
    proc.send_signal(signal.SIGTERM)  # as a CI runner's cancel or `kill` would
    _, err = proc.communicate(timeout=60)
    err = "".join(early) + err
    store = Store(project / ".cobalt" / "cobalt.duckdb")
    [run] = store.runs()
    run_id = run["run_id"]
    assert proc.returncode == 143, err
    assert (f"interrupted: finished items kept in run {run_id} (incomplete); finish it with "
            f"`cobalt run --resume {run_id}`") in err
    assert "Traceback" not in err, err
    assert run["status"] == "incomplete"
    assert [o["item_index"] for o in store.rows("outputs", run_id)] == [0, 1, 2, 3, 4]


def test_only_failed_reruns_the_failed_items_as_a_new_run_recorded_to_dagster(qa_project: Path) -> None:
    first = cobalt(qa_project, "run", "--ci", "-f", "qa", WRONG="2")
    assert first.returncode == 1, first.stdout + first.stderr
    store = Store(qa_project / ".cobalt" / "cobalt.duckdb")
    [parent] = store.runs()
    again = cobalt(qa_project, "run", "--ci", "--only-failed", parent["run_id"].rsplit("-", 1)[1],
                   COBALT_DAGSTER_RECORD="inline")
    assert again.returncode == 0, again.stdout + again.stderr
    child = store.runs()[0]
    assert (child["parent_run_id"], child["status"], child["passed"]) == (parent["run_id"], "completed", True)
    assert [o["item_index"] for o in store.rows("outputs", child["run_id"])] == [0, 1]
    import dagster as dg

    with dg.DagsterInstance.from_config(str(qa_project / ".cobalt" / "dagster")) as instance:
        assert instance.get_dynamic_partitions("qa_runs") == [child["run_id"]]  # recorded inline, the parent not
    none_failed = cobalt(qa_project, "run", "--only-failed", child["run_id"])
    assert (none_failed.returncode, none_failed.stdout) == (2, "")
    assert none_failed.stderr.startswith(f"error: Run {child['run_id']} of 'qa' has no failed items")
    both = cobalt(qa_project, "run", "--only-failed", "latest", "--resume", "latest")
    assert both.returncode == 2
    assert both.stderr == ("error: --only-failed starts a new run of some items, which --resume cannot be "
                           "combined with.\n")


def test_resume_latest_with_a_filter_finishes_that_experiments_run(qa_project: Path) -> None:
    crashed = cobalt(qa_project, "run", "-f", "qa", CRASH="1", **SHORT_LEASE)
    assert crashed.returncode == 3
    assert cobalt(qa_project, "run", "-f", "other").returncode == 0  # now the newest run
    store = Store(qa_project / ".cobalt" / "cobalt.duckdb")
    runs = {r["experiment"]: r for r in store.runs()}
    assert (runs["qa"]["status"], runs["other-agent"]["status"]) == ("incomplete", "completed")

    result = cobalt(qa_project, "run", "--resume", "latest", "-f", "qa")
    assert result.returncode == 0, result.stdout + result.stderr
    assert {r["run_id"]: r["status"] for r in store.runs()} == {runs["qa"]["run_id"]: "completed",
                                                               runs["other-agent"]["run_id"]: "completed"}
    assert len(store.rows("outputs", runs["qa"]["run_id"])) == 4

    both = cobalt(qa_project, "run", "--resume", "latest", "-f", "a")
    assert both.returncode == 2
    assert both.stderr.strip() == ("error: --resume finishes one run, but --filter/--tag match 2 experiments "
                                   "(other-agent, qa); narrow them to one.")
    none = cobalt(qa_project, "run", "--resume", "latest", "-f", "zzz")
    assert none.returncode == 2 and "No experiment name contains 'zzz' (--filter)" in none.stderr


# Item 3's agent call waits for a byte on GATE_FD: the test closes its end of stdout first, so every
# line printed after it (item lines, the summary) meets a closed pipe, as with `cobalt run | head -1`.
GATED = """
import os
from cobalt_lib import Dataset, Evaluator, experiment

@experiment("gated", Dataset([{"input": f"q{i}", "expected_output": "a"} for i in range(6)]), concurrency=1,
            evaluators=[Evaluator(name="exact", type="exact-match")])
def agent(ctx):
    if ctx.index == 3:
        os.read(int(os.environ["GATE_FD"]), 1)
    return "a"
"""


@pytest.mark.parametrize("mode", [["--no-dagster"], []], ids=["no-dagster", "default"])
def test_a_closed_stdout_does_not_stop_the_run(project: Path, mode: list[str]) -> None:
    (project / "experiments").mkdir()
    (project / "experiments" / "gated.cobalt.py").write_text(GATED)
    gate_read, gate_write = os.pipe()
    clean = {k: v for k, v in os.environ.items() if k not in ("GITHUB_ACTIONS", "GITHUB_STEP_SUMMARY")}
    proc = subprocess.Popen([COBALT, "run", "--ci", *mode], cwd=project, env={**clean, "GATE_FD": str(gate_read)},
                            pass_fds=(gate_read,), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    os.close(gate_read)
    assert proc.stdout is not None and proc.stderr is not None
    assert proc.stdout.readline().startswith("cobalt run gated (")
    proc.stdout.close()  # the reader goes away, as `head -1` does
    os.write(gate_write, b"x")
    os.close(gate_write)
    err = proc.stderr.read()
    assert proc.wait(timeout=120) == 0, err
    assert "Traceback" not in err and "BrokenPipe" not in err
    [run] = Store(project / ".cobalt" / "cobalt.duckdb").runs()
    assert (run["status"], run["passed"]) == ("completed", True)
    assert len(Store(project / ".cobalt" / "cobalt.duckdb").rows("scores", run["run_id"])) == 6


BASELINED = '''
import os
from cobalt_lib import Dataset, Evaluator, experiment, no_regression, threshold

data = Dataset([{"input": f"q{i}", "expected_output": f"a{i}"} for i in range(4)])
WRONG = int(os.environ.get("WRONG", "0"))

@experiment("qa", data, evaluators=[Evaluator(name="exact", type="exact-match")],
            assertions=[no_regression("baselines/qa.json", tolerance=0.1), threshold("exact", 0.5)])
def agent(ctx):
    return "nope" if ctx.index < WRONG else ctx.item["expected_output"]
'''


def test_update_baselines_writes_the_first_baseline_and_the_gate_then_holds(project: Path) -> None:
    (project / "experiments").mkdir()
    (project / "experiments" / "qa.cobalt.py").write_text(BASELINED)
    baseline = project / "baselines" / "qa.json"
    missing = cobalt(project, "run", "--ci")
    assert missing.returncode == 2 and "--update-baselines" in missing.stderr and not baseline.exists()

    bad = cobalt(project, "run", "--update-baselines", WRONG="3")  # exact 0.25 fails its threshold
    assert bad.returncode == 1 and not baseline.exists()
    assert f"warning: baseline {baseline} not updated: run" in bad.stderr and "failed a gate" in bad.stderr

    first = cobalt(project, "run", "--update-baselines", WRONG="1")
    assert first.returncode == 0, first.stderr
    written = json.loads(baseline.read_text())
    assert {k: v for k, v in written.items() if not k.startswith("$")} == {"exact": 0.75}
    assert written["$identity"]["evaluators"][0]["kind"] == "exact-match"  # what the baseline measured with
    assert f"baseline {baseline} updated from run" in first.stdout
    assert cobalt(project, "run", "--ci", WRONG="1").returncode == 0
    worse = cobalt(project, "run", "--ci", WRONG="2")
    assert worse.returncode == 1 and "exact 0.50 < 0.675 = baseline 0.75 x (1 - 0.1)" in worse.stdout

    exported = cobalt(project, "export", "latest", "--format", "baseline", "-o", "b.json")
    exported_values = json.loads((project / "b.json").read_text())
    assert exported.returncode == 0 and {k: v for k, v in exported_values.items() if not k.startswith("$")} == {
        "exact": 0.5}


def test_a_shadowed_config_file_is_a_warning(project: Path) -> None:
    (project / "cobalt.toml").write_text("concurrency = 9\n")
    (project / "pyproject.toml").write_text("[tool.cobalt]\nconcurrency = 4\n")
    result = cobalt(project, "history")
    assert result.returncode == 0
    assert result.stderr.splitlines() == [
        f"warning: {project.resolve() / 'pyproject.toml'} is ignored: {project.resolve() / 'cobalt.toml'} comes "
        "first and is the configuration used; merge the two files into one."]


def test_an_incomplete_run_gives_no_baseline_and_its_export_says_it_is_partial(qa_project: Path) -> None:
    crashed = cobalt(qa_project, "run", "-f", "qa", CRASH="1", **SHORT_LEASE)
    assert crashed.returncode == 3
    run_id = Store(qa_project / ".cobalt" / "cobalt.duckdb").runs()[0]["run_id"]
    baseline = cobalt(qa_project, "export", "latest", "--format", "baseline", "-o", "b.json")
    assert baseline.returncode == 2 and not (qa_project / "b.json").exists()
    assert baseline.stderr.strip() == (f"error: Run {run_id} is incomplete; a baseline must come from a completed "
                                       "run with scores (an empty one would gate nothing).")
    csv = cobalt(qa_project, "export", "latest", "--format", "csv")
    assert csv.returncode == 0
    assert csv.stderr.strip() == f"warning: run {run_id} is incomplete: the export holds only its finished items."
    (qa_project / "empty.json").write_text("{}")
    (qa_project / "experiments" / "qa.cobalt.py").write_text(
        EXPERIMENT.replace('threshold("exact", 0.75)]', 'threshold("exact", 0.75), no_regression("empty.json")]')
        .replace("import Dataset, Evaluator, experiment, threshold", "import Dataset, Evaluator, experiment, "
                 "no_regression, threshold"))
    gated = cobalt(qa_project, "run", "-f", "qa")
    assert gated.returncode == 2 and "empty.json is empty, so it would gate nothing" in gated.stderr


def test_compare_with_an_unfinished_run_warns_and_refuses_to_gate(qa_project: Path) -> None:
    assert cobalt(qa_project, "run", "-f", "qa").returncode == 0
    assert cobalt(qa_project, "run", "-f", "qa", CRASH="1", **SHORT_LEASE).returncode == 3
    crashed = Store(qa_project / ".cobalt" / "cobalt.duckdb").runs()[0]["run_id"]
    plain = cobalt(qa_project, "compare", "previous", "latest")
    assert plain.returncode == 0
    assert f"warning: run B ({crashed}) is incomplete: only its finished items are compared." in plain.stderr
    gate = cobalt(qa_project, "compare", "previous", "latest", "--fail-on-regression")
    assert gate.returncode == 2
    assert gate.stderr.strip() == (f"error: Run B ({crashed}) is incomplete; --fail-on-regression compares completed "
                                   "runs only: wait for it, or finish it with `cobalt run --resume`.")


SIZED = '''
import asyncio, os
from cobalt_lib import Dataset, Evaluator, experiment

N = int(os.environ.get("N", "4"))

@experiment("sized", Dataset([{"input": f"q{i}", "expected_output": f"a{i}"} for i in range(N)]),
            evaluators=[Evaluator(name="exact", type="exact-match")], concurrency=1)
async def agent(ctx):
    if ctx.index == 2 and os.environ.get("BLOCK"):
        await asyncio.sleep(600)  # stuck until Ctrl-C
    return ctx.item["expected_output"]
'''


def test_resume_refuses_a_run_whose_dataset_changed(project: Path) -> None:
    import signal

    (project / "experiments").mkdir()
    (project / "experiments" / "sized.cobalt.py").write_text(SIZED)
    proc = subprocess.Popen([COBALT, "run"], cwd=project, text=True, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env={**os.environ, "BLOCK": "1"})
    assert proc.stdout is not None
    finished = 0
    while finished < 2:  # item lines as the reporter prints them: the condition, not a sleep
        line = proc.stdout.readline()
        assert line, "the run ended early"
        finished += "✓" in line
    proc.send_signal(signal.SIGINT)
    proc.communicate(timeout=60)
    assert proc.returncode == 130
    run_id = Store(project / ".cobalt" / "cobalt.duckdb").runs()[0]["run_id"]
    fewer = cobalt(project, "run", "--resume", "latest", N="3")
    assert fewer.returncode == 2
    assert fewer.stderr.strip() == (f"error: Run {run_id} of 'sized' was made with another dataset (4 items then, "
                                    "3 now); resuming would mix the two: start a new run instead.")
    (project / "experiments" / "sized.cobalt.py").write_text(SIZED.replace('f"q{i}"', 'f"Q{i}"'))
    edited = cobalt(project, "run", "--resume", "latest")
    assert edited.returncode == 2 and "(item 0 changed)" in edited.stderr
    (project / "experiments" / "sized.cobalt.py").write_text(SIZED)
    assert cobalt(project, "run", "--resume", "latest").returncode == 0
