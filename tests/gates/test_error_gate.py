"""Errors fail a run by default (issue 23): failed and timed-out agent calls, eval-errors and duplicate item
ids, unless `[ci] max_error_rate` or the experiment's `max_error_rate` allows them; an agent's `sys.exit`
is its item's error; through the library and `cobalt run`."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path

import pytest

from cobalt_lib import ConfigError, Dataset, Evaluator, define_config, experiment, load_config

COBALT = str(Path(sys.executable).parent / "cobalt")


def _gate(report) -> tuple[bool, str]:  # type: ignore[no-untyped-def]
    [rate] = [a for a in report.assertions if a.name.startswith("error rate")]
    return rate.passed, rate.message


async def _half_hang(ctx) -> str:  # type: ignore[no-untyped-def]
    if ctx.index % 2:
        await asyncio.Event().wait()  # never answers: the item's timeout ends it
    return "a"


def test_timed_out_calls_fail_the_run_unless_max_error_rate_allows_them(project: Path) -> None:
    data = Dataset([{"input": f"q{i}", "expected_output": "a"} for i in range(4)])
    exp = experiment("half", data, _half_hang, timeout=0.05, evaluators=[Evaluator(name="exact", type="exact-match")])
    report = exp.run(config=define_config())
    assert [i.status for i in report.items] == ["ok", "timeout", "ok", "timeout"]
    assert report.summary.scores["exact"].avg == 1.0  # the means leave the timed-out calls out ...
    assert report.passed is False  # ... the gate does not
    assert _gate(report) == (False, "error rate 33.3% (2 of 6 attempts): 2 of 4 agent calls failed or timed out, "
                                    "0 of 2 evaluations were eval-errors")
    (project / "cobalt.toml").write_text("[ci]\nmax_error_rate = 0.34\n")
    assert exp.run(config=load_config()).passed is True
    lenient = experiment("half", data, _half_hang, timeout=0.05, max_error_rate=0.5,
                         evaluators=[Evaluator(name="exact", type="exact-match")])
    (project / "cobalt.toml").write_text("[ci]\nmax_error_rate = 0\n")
    report = lenient.run(config=load_config())  # the experiment's own setting wins over [ci]
    assert report.passed is True and report.assertions[0].name == "error rate <= 50%"


def test_a_duplicate_item_id_fails_the_run(project: Path) -> None:
    items = [{"id": "a", "expected_output": "x"}, {"id": "b", "expected_output": "x"},
             {"id": "a", "expected_output": "x"}, {"expected_output": "x"}]
    exp = experiment("dupes", items, lambda ctx: "x", evaluators=[Evaluator(name="exact", type="exact-match")],
                     runs=2)
    report = exp.run(config=define_config())
    assert report.summary.scores["exact"].avg == 1.0 and report.passed is False
    assert _gate(report) == (False, "error rate 6.2% (1 of 16 attempts): 0 of 8 agent calls failed or timed out, "
                                    "0 of 8 evaluations were eval-errors, 1 item repeated an earlier item's id (\"a\")")
    assert exp.run(config=define_config(ci={"max_error_rate": 0.1})).passed is True


def test_max_error_rate_is_checked_where_it_is_declared(project: Path) -> None:
    with pytest.raises(ConfigError, match=r"max_error_rate=1\.5 must be a share of attempts within 0\.\.1"):
        experiment("bad", [{"input": "a"}], lambda ctx: "a", max_error_rate=1.5)
    with pytest.raises(ConfigError, match="max_error_rate"):
        define_config(ci={"max_error_rate": -0.1})


@pytest.mark.parametrize("kind", ["sync", "async"])
def test_sys_exit_in_the_agent_is_that_items_error(project: Path, kind: str) -> None:
    def sync_agent(ctx):  # type: ignore[no-untyped-def]
        if ctx.index == 1:
            sys.exit(3)
        return "a"

    async def async_agent(ctx):  # type: ignore[no-untyped-def]
        return sync_agent(ctx)

    exp = experiment(f"exits-{kind}", [{"input": f"q{i}", "expected_output": "a"} for i in range(3)],
                     sync_agent if kind == "sync" else async_agent,
                     evaluators=[Evaluator(name="exact", type="exact-match")])
    report = exp.run(config=define_config())
    assert [i.status for i in report.items] == ["ok", "error", "ok"]
    assert report.items[1].error == "SystemExit: sys.exit(3) was called; raise an exception to fail one item " \
                                    "(the run went on)"
    assert report.passed is False and _gate(report)[0] is False


def test_sys_exit_in_a_scoring_function_is_that_evaluations_error(project: Path) -> None:
    def score(ctx):  # type: ignore[no-untyped-def]
        if ctx.index == 0:
            sys.exit("no")
        return 1.0

    report = experiment("scorer-exits", [{"input": "a"}, {"input": "b"}], lambda ctx: "a",
                        evaluators=[Evaluator(name="s", type="function", fn=score)]).run(config=define_config())
    first = report.items[0].evaluations["s"]
    assert (first.status, first.error) == ("eval-error", "SystemExit: sys.exit('no') was called; raise an exception "
                                                         "to fail one item (the run went on)")
    assert report.items[1].evaluations["s"].score == 1.0


def test_a_run_report_refuses_changes_to_its_items(project: Path) -> None:
    report = experiment("frozen", [{"input": "a"}], lambda ctx: "a").run(config=define_config())
    with pytest.raises(AttributeError, match=r"^report\.items\[\.\.\.\]\.output cannot be set: a run's items are read"):
        report.items[0].output = "x"
    assert report.items[0].output == "a"


EXITS = '''
import sys
from cobalt_lib import Evaluator, experiment

@experiment("exits", [{"input": f"q{i}", "expected_output": "a"} for i in range(4)],
            evaluators=[Evaluator(name="exact", type="exact-match")])
def agent(ctx):
    if ctx.index == 2:
        sys.exit(3)
    return "a"
'''


@pytest.mark.slow
def test_cobalt_run_goes_on_past_sys_exit_and_exits_1_on_the_error_gate(project: Path) -> None:
    (project / "experiments").mkdir()
    (project / "experiments" / "exits.cobalt.py").write_text(EXITS)
    env = {k: v for k, v in os.environ.items() if k not in ("GITHUB_ACTIONS", "GITHUB_STEP_SUMMARY")}

    def run() -> subprocess.CompletedProcess[str]:
        return subprocess.run([COBALT, "run", "--no-dagster"], cwd=project, capture_output=True, text=True,
                              timeout=120, env=env)

    failed = run()
    assert failed.returncode == 1, failed.stdout + failed.stderr
    assert "#2 ✗ ERROR SystemExit: sys.exit(3) was called; raise an exception to fail one item" in failed.stdout
    assert ("gate FAIL error rate <= 0%  error rate 14.3% (1 of 7 attempts): 1 of 4 agent calls failed or timed "
            "out, 0 of 3 evaluations were eval-errors") in failed.stdout
    assert "gate PASS every evaluator scored" in failed.stdout
    (project / "cobalt.toml").write_text("[ci]\nmax_error_rate = 0.2\n")
    allowed = run()
    assert allowed.returncode == 0, allowed.stdout + allowed.stderr
    assert "gate PASS error rate <= 20%" in allowed.stdout


@pytest.mark.slow
def test_cobalt_init_writes_a_config_that_fails_on_errors(project: Path) -> None:
    import tomllib

    init = subprocess.run([COBALT, "init"], cwd=project, capture_output=True, text=True, timeout=120)
    assert init.returncode == 0, init.stderr
    text = (project / "cobalt.toml").read_text()
    assert tomllib.loads(text)["ci"] == {"max_error_rate": 0}
    assert "# Any failed or timed-out agent call, eval-error or duplicate item id fails the run (exit 1)." in text
    assert load_config(project).ci.max_error_rate == 0.0
