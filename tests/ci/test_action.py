"""The composite action at the repository root: it parses, every input and step output it names exists,
every cobalt command and option its steps call is a real one, and its run and comment steps, executed
by bash as the runner would, run the experiments and post the comment to a loopback GitHub."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import pytest
import typer
import yaml
from github_world import PULL, REPOSITORY, TOKEN, event_file, github

from cobalt_lib.cli import app, load_commands

ACTION = Path(__file__).parents[2] / "action.yml"
#: The actions the composite action may use, at these major versions.
ALLOWED = {"actions/setup-python@v5", "actions/cache/restore@v4", "actions/cache/save@v4",
           "actions/upload-artifact@v4"}


def action() -> dict[str, Any]:
    return dict(yaml.safe_load(ACTION.read_text(encoding="utf-8")))


def steps() -> list[dict[str, Any]]:
    return list(action()["runs"]["steps"])


def step(name: str) -> dict[str, Any]:
    [found] = [s for s in steps() if s["name"] == name]
    return found



def test_every_extra_the_action_and_the_docs_name_exists() -> None:
    """`pip install cobalt-evals[NAME]` with a NAME pyproject.toml lacks installs nothing extra, silently."""
    root = ACTION.parents[0]
    project = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    extras = set(project["optional-dependencies"])
    texts = {ACTION: ACTION.read_text(encoding="utf-8"), root / "README.md": (root / "README.md").read_text("utf-8")}
    texts |= {page: page.read_text(encoding="utf-8") for page in (root / "docs").glob("*.md")}
    named = {(path.name, extra) for path, text in texts.items() for extra in re.findall(r"cobalt-evals\[(\w+)\]", text)}
    assert named, "the action names an extra for `cobalt-package`"
    assert {(name, extra) for name, extra in named if extra not in extras} == set()

def test_the_action_is_composite_and_names_only_what_it_declares() -> None:
    data = action()
    assert data["runs"]["using"] == "composite"
    text = ACTION.read_text(encoding="utf-8")
    inputs = set(data["inputs"])
    assert set(re.findall(r"inputs\.([\w-]+)", text)) <= inputs
    ids: list[str] = []
    for s in steps():
        assert ("uses" in s) != ("run" in s), s["name"]
        if "uses" in s:
            assert s["uses"] in ALLOWED, s["uses"]
        else:
            assert s["shell"] == "bash", s["name"]
        for used in re.findall(r"steps\.([\w-]+)\.outputs", yaml.safe_dump(s)):
            assert used in ids, f"{s['name']} reads step {used!r} before it runs"
        if "id" in s:
            ids.append(s["id"])
    for output in data["outputs"].values():
        assert re.fullmatch(r"\$\{\{ steps\.(\w+)\.outputs\.[\w-]+ \}\}", output["value"])


def _command(words: list[str]) -> tuple[Any, list[str]]:
    """The click command `cobalt <words>` reaches, and the words after its name (typer may vendor click:
    its groups are recognised by their `commands`)."""
    load_commands()  # each command's module registers it on first use: all of them, to find any
    command: Any = typer.main.get_command(app)
    rest = list(words)
    while getattr(command, "commands", None) and rest and rest[0] in command.commands:
        command = command.commands[rest.pop(0)]
    return command, rest


def _check_options(command: Any, words: list[str]) -> None:
    options = {opt: param for param in command.params for opt in param.opts if opt.startswith("-")}
    for word in words:
        if word.startswith("--"):
            assert word in options, f"{command.name} has no option {word}"


def test_every_cobalt_command_and_option_the_steps_call_exists() -> None:
    calls = []
    for s in steps():
        for line in str(s.get("run", "")).splitlines():
            line = line.strip()
            if line.startswith("cobalt "):
                calls.append(shlex.split(line)[1:])
            for pushed in re.findall(r"flags\+=\(([^)]*)\)", line):  # options added to the comment's call
                calls.append(["ci", "comment", *shlex.split(pushed)])
    assert [c[:2] for c in calls] == [["--version"], ["run", "--ci"], ["ci", "comment"], ["ci", "comment"],
                                      ["ci", "comment"], ["ci", "comment"], ["ci", "comment"]]
    for words in calls[1:]:
        command, rest = _command(words)
        assert command.name == ("run" if words[0] == "run" else "comment"), (command.name, words)
        _check_options(command, rest)


@pytest.mark.slow
def test_the_run_and_comment_steps_run_the_experiments_and_post_the_comment(tmp_path: Path) -> None:
    project = tmp_path / "proj"
    (project / "experiments").mkdir(parents=True)
    (project / "experiments" / "qa.cobalt.py").write_text('''
from cobalt_lib import Dataset, Evaluator, experiment
experiment("qa", Dataset([{"id": f"q{i}", "expected_output": "a"} for i in range(3)]), lambda ctx: "a",
           evaluators=[Evaluator(name="exact", type="exact-match")])
''', encoding="utf-8")
    bin_dir = str(Path(sys.executable).parent)
    base = {k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "COBALT_"))}
    base.update(PATH=f"{bin_dir}{os.pathsep}{base.get('PATH', '')}", GITHUB_ACTIONS="true",
                GITHUB_STEP_SUMMARY=str(tmp_path / "summary.md"), GITHUB_RUN_ID="42", GITHUB_RUN_ATTEMPT="1")

    def run_step(name: str, **env: str) -> dict[str, str]:
        outputs = tmp_path / f"{name}.out"
        outputs.write_text("")
        result = subprocess.run(["bash", "-e", "-c", step(name)["run"]], cwd=project, capture_output=True, text=True,
                                env={**base, **env, "GITHUB_OUTPUT": str(outputs)}, timeout=120)
        assert result.returncode == 0, result.stdout + result.stderr
        return dict(line.split("=", 1) for line in outputs.read_text().splitlines())

    reports = tmp_path / "reports"
    assert run_step("Run the experiments", COBALT_REPORT_DIR=str(reports), RUN_ARGS="--no-dagster",
                    BRANCH_TAG="branch:main", RUN_TAG="ci:41-1") == {"exit-code": "0"}
    assert run_step("Run the experiments", COBALT_REPORT_DIR=str(reports), RUN_ARGS="--no-dagster",
                    BRANCH_TAG="branch:better", RUN_TAG="ci:42-1") == {"exit-code": "0"}
    assert len(list(reports.glob("qa-*.html"))) == 2  # the one-file reports the upload step takes
    with github() as hub:
        comment_env = dict(GITHUB_TOKEN=TOKEN, RUN_TAG="ci:42-1", BASELINE_TAG="branch:main",
                           REPORT_URL="https://example.test/artifacts/9", COMMENT_KEY="", FAIL_ON_REGRESSION="true",
                           ACCEPT_IDENTITY_CHANGE="false", GITHUB_EVENT_PATH=str(event_file(tmp_path)),
                           GITHUB_REPOSITORY=REPOSITORY, GITHUB_API_URL=hub.url)
        assert run_step("Comment on the pull request", **comment_env) == {"exit-code": "0"}
        assert run_step("Comment on the pull request", **comment_env) == {"exit-code": "0"}
        [mine] = [c for c in hub.comments if c["body"].startswith("<!-- cobalt:pr-comment -->")]
        assert "[HTML report](https://example.test/artifacts/9)" in mine["body"]
        assert "| exact | 1.000 | 1.000 | +0.000 |" in mine["body"]
        assert [r["method"] for r in hub.requests].count("POST") == 1
        assert [r["path"] for r in hub.requests if r["method"] == "PATCH"] == [
            f"/repos/{REPOSITORY}/issues/comments/{mine['id']}"]
    assert f"#{PULL}" in hub.requests[0]["path"] or f"/issues/{PULL}/" in hub.requests[0]["path"]


@pytest.mark.slow
def test_an_experiment_file_that_does_not_load_stops_the_run_and_the_comment_says_why(tmp_path: Path) -> None:
    project = tmp_path / "proj"
    (project / "experiments").mkdir(parents=True)
    (project / "experiments" / "qa.cobalt.py").write_text(
        'from cobalt_lib import Dataset, Evaluator, experiment\n'
        'experiment("qa", Dataset([{"expected_output": "a"}]), lambda ctx: "a",\n'
        '           evaluators=[Evaluator(name="c", type="contain", value="a")])\n', encoding="utf-8")
    bin_dir = str(Path(sys.executable).parent)
    reports = tmp_path / "reports"
    base = {k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "COBALT_"))}
    base.update(PATH=f"{bin_dir}{os.pathsep}{base.get('PATH', '')}", GITHUB_ACTIONS="true",
                GITHUB_STEP_SUMMARY=str(tmp_path / "summary.md"), COBALT_REPORT_DIR=str(reports))

    def run_step(name: str, **env: str) -> dict[str, str]:
        outputs = tmp_path / f"{name}.out"
        outputs.write_text("")
        result = subprocess.run(["bash", "-e", "-c", step(name)["run"]], cwd=project, capture_output=True, text=True,
                                env={**base, **env, "GITHUB_OUTPUT": str(outputs)}, timeout=120)
        assert result.returncode == 0, result.stdout + result.stderr
        return dict(line.split("=", 1) for line in outputs.read_text().splitlines())

    assert run_step("Run the experiments", RUN_ARGS="--no-dagster", BRANCH_TAG="branch:fix",
                    RUN_TAG="ci:42-1") == {"exit-code": "2", "stopped": "true"}
    comment = step("Comment on the pull request")
    assert "steps.run.outputs.stopped == 'true'" in comment["if"]  # the comment step runs after that exit 2
    assert comment["env"]["COBALT_REPORT_DIR"] == "${{ steps.names.outputs.reports }}"
    with github() as hub:
        assert run_step("Comment on the pull request", GITHUB_TOKEN=TOKEN, RUN_TAG="ci:42-1",
                        BASELINE_TAG="branch:main", REPORT_URL="", COMMENT_KEY="", FAIL_ON_REGRESSION="true",
                        ACCEPT_IDENTITY_CHANGE="false", GITHUB_EVENT_PATH=str(event_file(tmp_path)),
                        GITHUB_REPOSITORY=REPOSITORY, GITHUB_API_URL=hub.url) == {"exit-code": "0"}
        [mine] = [c for c in hub.comments if c["body"].startswith("<!-- cobalt:pr-comment -->")]
    assert mine["body"].startswith("<!-- cobalt:pr-comment -->\n## ❌ cobalt evals: no experiment ran, an experiment "
                                   "file did not load")
    assert "qa.cobalt.py did not load: Evaluator 'c' has unknown type 'contain'; did you mean 'contains'?" \
        in mine["body"]


def test_the_workflows_the_docs_show_use_the_action_with_the_permission_it_needs() -> None:
    root = ACTION.parent
    for page in (root / "README.md", root / "docs" / "github-action.md"):
        text = page.read_text(encoding="utf-8")
        [block] = [b for b in re.findall(r"```yaml\n(.*?)```", text, re.S) if "OWNER/cobalt@REF" in b]
        workflow = yaml.safe_load(block)
        assert workflow["permissions"]["pull-requests"] == "write", page
        events = workflow.get("on", workflow.get(True))  # YAML 1.1 reads a bare `on` key as True
        assert "pull_request" in events and events["push"]["branches"] == ["main"], page
        [job] = workflow["jobs"].values()
        assert [s["uses"] for s in job["steps"]] == ["actions/checkout@v4", "OWNER/cobalt@REF"], page


@pytest.mark.slow
def test_with_a_store_url_two_runners_share_the_baseline_and_the_cache_is_not_used(tmp_path: Path,
                                                                                  pg_url: str) -> None:
    """The base branch's run on one runner, the pull request's on another: the comment finds the baseline in
    the team store, and neither cache step runs."""
    for name in ("Restore the store (the base branch's runs)", "Save the store (runs of the base branch become "
                                                               "baselines)"):
        assert "inputs.store-url == ''" in step(name)["if"]
    bin_dir = str(Path(sys.executable).parent)
    base = {k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "COBALT_"))}
    base.update(PATH=f"{bin_dir}{os.pathsep}{base.get('PATH', '')}", GITHUB_ACTIONS="true",
                GITHUB_STEP_SUMMARY=str(tmp_path / "summary.md"), GITHUB_RUN_ID="42", GITHUB_RUN_ATTEMPT="1",
                COBALT_STORE_URL=pg_url)

    def run_step(project: Path, name: str, **env: str) -> dict[str, str]:
        outputs = tmp_path / f"{project.name}-{name}.out"
        outputs.write_text("")
        result = subprocess.run(["bash", "-e", "-c", step(name)["run"]], cwd=project, capture_output=True, text=True,
                                env={**base, **env, "GITHUB_OUTPUT": str(outputs)}, timeout=120)
        assert result.returncode == 0, result.stdout + result.stderr
        return dict(line.split("=", 1) for line in outputs.read_text().splitlines())

    runners = []
    for name in ("main-runner", "pr-runner"):
        project = tmp_path / name
        (project / "experiments").mkdir(parents=True)
        (project / "experiments" / "qa.cobalt.py").write_text('''
from cobalt_lib import Dataset, Evaluator, experiment
experiment("qa", Dataset([{"id": f"q{i}", "expected_output": "a"} for i in range(3)]), lambda ctx: "a",
           evaluators=[Evaluator(name="exact", type="exact-match")])
''', encoding="utf-8")
        runners.append(project)
    reports = tmp_path / "reports"
    for project, branch in zip(runners, ("main", "better"), strict=True):
        assert run_step(project, "Run the experiments", COBALT_REPORT_DIR=str(reports), RUN_ARGS="--no-dagster",
                        BRANCH_TAG=f"branch:{branch}", RUN_TAG=f"ci:4{len(branch)}-1") == {"exit-code": "0"}
    with github() as hub:
        comment_env = dict(GITHUB_TOKEN=TOKEN, RUN_TAG="ci:46-1", BASELINE_TAG="branch:main", REPORT_URL="",
                           COMMENT_KEY="", FAIL_ON_REGRESSION="true", ACCEPT_IDENTITY_CHANGE="false",
                           GITHUB_EVENT_PATH=str(event_file(tmp_path)), GITHUB_REPOSITORY=REPOSITORY,
                           GITHUB_API_URL=hub.url)
        assert run_step(runners[1], "Comment on the pull request", **comment_env) == {"exit-code": "0"}
        [mine] = [c for c in hub.comments if c["body"].startswith("<!-- cobalt:pr-comment -->")]
        assert "| exact | 1.000 | 1.000 | +0.000 |" in mine["body"]
    assert not any((p / ".cobalt" / "cobalt.duckdb").exists() for p in runners)
