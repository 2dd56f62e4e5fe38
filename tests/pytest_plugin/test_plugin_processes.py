"""The plugin in its own processes: pytest-xdist workers, the store rows beside `cobalt run`'s, and what a
plain pytest start loads of cobalt."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from cobalt_lib import Store

pytestmark = pytest.mark.slow

BIN = Path(sys.executable).parent

#: Four experiments of 12 items, deterministic: `wrong-2` fails its gate, the others pass.
EXPERIMENTS = '''
from cobalt_lib import Dataset, Evaluator, experiment, threshold

data = Dataset([{"id": f"q{i}", "input": f"q{i}", "expected_output": f"a{i}"} for i in range(12)])

def agent_for(wrong):
    def agent(ctx):
        return "nope" if ctx.index < wrong else ctx.item["expected_output"]
    return agent

for wrong in (0, 2):
    for copy in ("a", "b"):
        experiment(f"wrong-{wrong}-{copy}", data, agent_for(wrong), tags=["nightly"],
                   evaluators=[Evaluator(name="exact", type="exact-match"),
                               Evaluator(name="short", type="function", fn=lambda ctx: len(ctx.output) < 4)],
                   assertions=[threshold("exact", 0.9)])
'''


def make_project(root: Path) -> Path:
    (root / "experiments").mkdir(parents=True)
    (root / "experiments" / "all.cobalt.py").write_text(EXPERIMENTS, encoding="utf-8")
    return root


def run(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "PYTEST_", "COBALT_DAGSTER"))}
    env["COLUMNS"] = "400"  # the short summary whole: a failure's message is not cut at 80 columns
    return subprocess.run(args, cwd=root, capture_output=True, text=True, timeout=300, env=env)


def stored(root: Path) -> Store:
    """The store as the next cobalt command sees it: rows a run left in a journal go in first."""
    from cobalt_lib.store._journal import replay_left

    store = Store(root / ".cobalt" / "cobalt.duckdb")
    replay_left(store)
    return store


def test_xdist_runs_each_experiment_once_on_one_worker(tmp_path: Path) -> None:
    root = make_project(tmp_path / "proj")
    result = run(root, str(BIN / "pytest"), "-p", "no:cacheprovider", "--cobalt", "-n", "2", "-rA")
    assert result.returncode == 1, result.stdout + result.stderr
    assert "2 failed, 2 passed" in result.stdout, result.stdout[-6000:]
    assert "cobalt experiment 'wrong-2-a' failed 1 of 3 gates" in result.stdout
    store = stored(root)
    runs = store.runs()
    assert sorted(r["experiment"] for r in runs) == ["wrong-0-a", "wrong-0-b", "wrong-2-a", "wrong-2-b"]
    workers = {r["run_id"]: r["pid"] for r in runs}
    assert len(set(workers.values())) == 2  # both workers ran experiments
    for r in runs:
        assert r["status"] == "completed" and r["passed"] is (r["experiment"].startswith("wrong-0"))
        assert len(store.rows("outputs", r["run_id"])) == 12 and len(store.rows("scores", r["run_id"])) == 24
        assert f"{r['experiment']}: run {r['run_id']} {'passed' if r['passed'] else 'failed'}" in result.stdout


def test_xdist_items_mode_keeps_an_experiments_items_on_one_worker(tmp_path: Path) -> None:
    root = make_project(tmp_path / "proj")
    result = run(root, str(BIN / "pytest"), "-p", "no:cacheprovider", "--cobalt", "--cobalt-items", "-n", "2",
                 "-k", "wrong-2-a or wrong-0-b")
    assert result.returncode == 1, result.stdout + result.stderr
    # wrong-2-a: items q0 and q1 and its gates fail; everything of wrong-0-b passes
    assert "3 failed, 23 passed" in result.stdout
    runs = stored(root).runs()
    assert sorted(r["experiment"] for r in runs) == ["wrong-0-b", "wrong-2-a"]  # one run each, all items
    assert all("indices" not in r["config"] for r in runs)


def comparable(store: Store, run_id: str) -> dict[str, Any]:
    """A run's rows without what differs between any two runs: ids, clocks, process, durations."""
    timing = ("latency", "latency_ms", "run_id", "started_at", "finished_at", "lease_until", "pid", "worked_ms",
              "lease_token", "holder", "results_path", "total_duration_ms", "avg_latency_ms")

    def strip(value: Any) -> Any:
        if isinstance(value, dict):
            return {k: strip(v) for k, v in value.items() if k not in timing}
        if isinstance(value, list):
            return [strip(v) for v in value]
        return value

    rows = {table: store.rows(table, run_id) for table in ("outputs", "scores", "verdicts")}
    rows["aggregates"] = [a for a in store.rows("aggregates", run_id) if a["metric"] != "latency"]
    rows["run"] = store.get_run(run_id)
    rows["dagster"] = store.query("SELECT how FROM dagster_runs WHERE run_id = ?", [run_id])
    return strip(rows)


def results_file(run_row: dict[str, Any]) -> dict[str, Any]:
    report = json.loads(Path(run_row["results_path"]).read_text(encoding="utf-8"))
    for item in report["items"]:
        item.pop("latency_ms")
    return {k: v for k, v in report.items() if k not in ("id", "timestamp", "summary", "results_path")} | {
        "items": report["items"]}


RECORDS = {"daemon": ([], [], []), "no-dagster": (["--no-dagster"], ["--cobalt-no-dagster"], [{"how": "skipped"}]),
           "inline": ([], [], [{"how": "recorded"}])}


@pytest.mark.parametrize("record", list(RECORDS))
def test_a_pytest_run_is_stored_as_cobalt_run_stores_it(tmp_path: Path, record: str) -> None:
    """The same experiment by `cobalt run` and by `pytest --cobalt`: equal rows in every table, equal results
    files, the same Dagster recording (left to the daemon's sensor, skipped, or recorded before the command ends)."""
    root = make_project(tmp_path / "proj")
    if record == "inline":
        (root / "cobalt.toml").write_text('[dagster]\nrecord = "inline"\n', encoding="utf-8")
    cli_flags, pytest_flags, dagster = RECORDS[record]
    by_cli = run(root, str(BIN / "cobalt"), "run", "--filter", "wrong-2-a", "--ci", *cli_flags)
    assert by_cli.returncode == 1, by_cli.stdout + by_cli.stderr
    by_pytest = run(root, str(BIN / "pytest"), "-p", "no:cacheprovider", "--cobalt",
                    "experiments/all.cobalt.py::wrong-2-a", *pytest_flags)
    assert by_pytest.returncode == 1, by_pytest.stdout + by_pytest.stderr
    store = stored(root)
    cli_run, pytest_run = sorted(store.runs(), key=lambda r: r["started_at"])
    assert comparable(store, cli_run["run_id"]) == comparable(store, pytest_run["run_id"])
    assert comparable(store, cli_run["run_id"])["dagster"] == dagster
    assert results_file(cli_run) == results_file(pytest_run)
    assert Path(pytest_run["results_path"]).parent == root / ".cobalt" / "results"


LOADED = """
import sys, pytest
code = pytest.main(["-p", "no:cacheprovider", "-q", "--collect-only"])
print("LOADED", sorted(m for m in sys.modules if m.startswith("cobalt")))
"""


def test_a_plain_pytest_start_loads_nothing_of_cobalt_but_the_plugin(tmp_path: Path) -> None:
    root = make_project(tmp_path / "proj")
    (root / "test_unit.py").write_text("def test_one():\n    pass\n", encoding="utf-8")
    result = run(root, sys.executable, "-c", LOADED)
    assert "1 test collected" in result.stdout, result.stdout + result.stderr
    # cobalt_lib._lazy is the package's own name loader (stdlib only): it imports nothing on its own.
    assert ("LOADED ['cobalt_lib', 'cobalt_lib._lazy', 'cobalt_lib._version', 'cobalt_lib.pytest_plugin']"
            in result.stdout)
    assert not (root / ".cobalt").exists()


STUCK = '''
import asyncio, sys
from cobalt_lib import Dataset, Evaluator, experiment

@experiment("stoppable", Dataset([{"input": f"q{i}", "expected_output": f"a{i}"} for i in range(4)]), concurrency=1,
            evaluators=[Evaluator(name="exact", type="exact-match")])
async def agent(ctx):
    if ctx.index == 2:
        print("cobalt-testing: paused at stuck", file=sys.stderr, flush=True)
        await asyncio.sleep(600)
    return ctx.item["expected_output"]
'''


def _interrupted_pytest(root: Path, pause: str, **env: str) -> str:
    """`pytest --cobalt` on `root`, sent SIGINT once stderr says `paused at {pause}`; its stdout."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "PYTEST_", "COBALT_DAGSTER"))}
    clean["COLUMNS"] = "400"  # the short summary whole: a failure's message is not cut at 80 columns
    proc = subprocess.Popen([str(BIN / "pytest"), "-p", "no:cacheprovider", "--cobalt", "-s"], cwd=root, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env={**clean, "COBALT_TESTING": "1", **env})
    assert proc.stderr is not None
    seen = []
    while f"paused at {pause}" not in (line := proc.stderr.readline()):  # the condition, no sleep
        assert line, f"pytest ended before it paused at {pause}: {''.join(seen)}"
        seen.append(line)
    proc.send_signal(signal.SIGINT)
    out, _ = proc.communicate(timeout=120)
    assert proc.returncode == pytest.ExitCode.INTERRUPTED, out
    return out


def test_ctrl_c_in_a_run_names_the_run_to_resume(tmp_path: Path) -> None:
    root = tmp_path / "proj"
    (root / "experiments").mkdir(parents=True)
    (root / "experiments" / "stoppable.cobalt.py").write_text(STUCK, encoding="utf-8")
    out = _interrupted_pytest(root, "stuck")
    (run_row,) = stored(root).runs()
    assert run_row["status"] == "incomplete"
    assert (f"interrupted: finished items kept in run {run_row['run_id']} (incomplete); finish it with "
            f"`cobalt run --resume {run_row['run_id']}`") in out


def test_ctrl_c_once_the_run_is_stored_completed_says_it_completed(tmp_path: Path) -> None:
    """Issue 33 item 15's Ctrl-C race under `pytest --cobalt`: it said `(completed); finish it with --resume`."""
    root = tmp_path / "proj"
    (root / "experiments").mkdir(parents=True)
    (root / "experiments" / "stoppable.cobalt.py").write_text(STUCK.replace("ctx.index == 2", "False"),
                                                               encoding="utf-8")
    out = _interrupted_pytest(root, "after-finish", COBALT_TEST_PAUSE="after-finish")
    (run_row,) = stored(root).runs()
    assert run_row["status"] == "completed"
    assert f"interrupted after run {run_row['run_id']} completed: every item is stored" in out, out
    assert "--resume" not in out and "(completed)" not in out, out
