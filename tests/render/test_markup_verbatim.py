"""Text that looks like Rich markup is printed as it is by every printer (issue 34 item 15): a model's
`[/INST]` crashed the studio's `dis` (MarkupError), a label note with it made `cobalt calibrate` exit 1, and
`[s7]` or `[bold]` vanished from tables. Each command runs as a user types it (typer's runner, in process)
on a project whose items, outputs, reasons, errors, tags, notes and samples all carry such text."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from fakellm import FakeLLM, Reply, text
from typer.testing import CliRunner

from cobalt_lib import Store
from cobalt_lib.cli import app

NASTY = "[/INST] [bold]b[/bold] [s7]"

EXPERIMENT = f'''
from cobalt_lib import Dataset, Evaluator, experiment

NASTY = {NASTY!r}


def judge(ctx):
    return {{"score": 0.2 if ctx.index == 0 else 0.9, "reason": "reason " + NASTY}}


def agent(ctx):
    if ctx.index == 2:
        raise RuntimeError("failed " + NASTY)
    return "answer " + NASTY


experiment("markup", Dataset([{{"id": f"i{{i}}", "input": "question " + NASTY}} for i in range(3)]), agent,
           evaluators=[Evaluator(name="judge", type="function", fn=judge)], tags=["tag" + NASTY],
           max_error_rate=1.0)
'''

DRAFT = {"name": "tidy", "spec": ["Grade the answer."], "cards": [{"title": "Form", "specs": ["It is tidy."]}]}


def _judge(kind: str, body: dict[str, Any]) -> Reply:
    system = next((m["content"] for m in body["messages"] if m["role"] == "system"), "")
    if system.startswith("You write graders"):
        return text(json.dumps(DRAFT))
    return text(json.dumps({"score": 1, "notes": "notes " + NASTY}))  # one step off every label: disagreements


def _cli(*args: str, stdin: str | None = None) -> str:
    result = CliRunner().invoke(app, list(args), input=stdin)
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    assert result.exit_code in (0, 1), (args, result.output)
    return result.output


def _verbatim(output: str, *texts: str) -> None:
    flat = re.sub(r"\s+", " ", output)  # a table may fold a long cell over two lines
    for wanted in texts:
        assert re.sub(r"\s+", " ", wanted) in flat, (wanted, output)


@pytest.fixture
def markup_project(judged_project: Path, llm: FakeLLM, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("COLUMNS", "250")
    (judged_project / "experiments").mkdir()
    (judged_project / "experiments" / "markup.cobalt.py").write_text(EXPERIMENT, encoding="utf-8")
    llm.respond = _judge
    return judged_project


def test_every_printer_shows_markup_like_text_verbatim(markup_project: Path, llm: FakeLLM) -> None:
    root = markup_project
    _verbatim(_cli("run"), "failed " + NASTY)
    _verbatim(_cli("run", "--ci"), "failed " + NASTY)
    _verbatim(_cli("show", "latest"), "answer " + NASTY, "failed " + NASTY)
    _verbatim(_cli("show", "latest", "0"), "question " + NASTY, "answer " + NASTY, "reason " + NASTY)
    _verbatim(_cli("history"), "tag" + NASTY)
    _verbatim(_cli("compare", "previous", "latest"), "markup")

    labels = root / "labels.jsonl"
    labels.write_text("".join(json.dumps({"experiment": "markup", "evaluator": "judge", "item_id": f"i{i}",
                                          "value": value, "note": "note " + NASTY}) + "\n"
                              for i, value in enumerate([1.0, 0.0])), encoding="utf-8")
    _cli("labels", "import", str(labels), "--who", "ana " + NASTY)
    _verbatim(_cli("calibrate", "markup", "--evaluator", "judge"), "note " + NASTY, "reason " + NASTY)

    samples = root / "samples.jsonl"
    samples.write_text("".join(json.dumps({"id": f"s{i}", "userMessage": "asked " + NASTY,
                                           "assistantResponse": "said " + NASTY, "score": 2}) + "\n"
                               for i in range(2)), encoding="utf-8")
    studio = _cli("studio", str(samples), "--model", "openai/a", stdin="draft\ngrade\ndis\nsample s0\nexport\nquit\n")
    dis = studio.split("studio> dis")[1].split("studio> sample")[0]
    _verbatim(dis, "asked " + NASTY, "said " + NASTY, "+1: notes " + NASTY)
    assert (root / "graders" / "tidy.py").is_file(), studio
    _verbatim(_cli("grade", "--input", str(samples), "--grader", "graders/tidy.py", "--model", "openai/a"),
              "notes " + NASTY)
    assert len(Store(root / ".cobalt" / "cobalt.duckdb").runs()) >= 2


def test_the_live_reporter_in_a_terminal_shows_markup_like_text_verbatim() -> None:
    """The run reporter on a terminal (colour, the header panel, the summary), with the experiment's and
    evaluators' names and the items' errors all holding markup-like text."""
    import io

    from cobalt_lib import Dataset, Evaluator, define_config, experiment
    from cobalt_lib.render._terminal import TerminalReporter
    from cobalt_lib.results._report import Evaluation, ItemResult
    from cobalt_lib.run import FreshRun, prepare
    from cobalt_lib.run._stages import build_report

    exp = experiment("exp " + NASTY, Dataset([{"input": "q"}, {"input": "r"}]), lambda ctx: "a",
                     evaluators=[Evaluator(name="judge" + NASTY, type="function", fn=lambda c: 1.0)])
    plan = prepare(exp, define_config(output_dir="/nonexistent"), FreshRun(run_id="run-1"))
    buffer = io.StringIO()
    reporter = TerminalReporter(buffer, width=250, force_terminal=True)
    reporter.on_start(plan)
    items = [ItemResult(index=0, output="a", latency_ms=1.0,
                        evaluations={"judge" + NASTY: Evaluation(score=0.1, passed=False, reason="low " + NASTY)}),
             ItemResult(index=1, status="error", error="failed " + NASTY, latency_ms=1.0)]
    for item in items:
        reporter.on_item(item)
    reporter.on_finish(build_report(plan, items, 2.0, "completed"))
    shown = re.sub(r"\x1b\[[0-9;]*[A-Za-z]", "", buffer.getvalue())
    _verbatim(shown, "cobalt exp " + NASTY, "judge" + NASTY + "=0.100", "failed " + NASTY)
