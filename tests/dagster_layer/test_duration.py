"""One definition of a run's duration on both paths: the working time its stages spent on it,
summed over every process that worked on it, never the wall time since the run started."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from dagster_jobs import execute_job

from cobalt_lib import Config, Dataset, Evaluator, Store, experiment, load_config
from cobalt_lib.run import prepare

#: Each agent call sleeps this long, one call at a time: the least working time a run of N items has.
CALL_SECONDS = 0.05
ITEMS = 4


class AgentCrash(BaseException):
    """Gets past cobalt's per-item error handling, so the Dagster outputs step fails half-way."""


def _config(root: Path) -> Config:
    root.mkdir(parents=True, exist_ok=True)
    (root / "cobalt.toml").write_text("", encoding="utf-8")
    return load_config(root)


def _sleepy(name: str, crash_from: list[int]) -> Any:
    def agent(ctx: Any) -> str:
        if ctx.index >= crash_from[0]:
            raise AgentCrash("the agent's process died")
        time.sleep(CALL_SECONDS)  # the agent's own work, which the duration must include
        return ctx.item["expected_output"]

    return experiment(name, Dataset([{"expected_output": f"a{i}"} for i in range(ITEMS)]), agent, concurrency=1,
                      evaluators=[Evaluator(name="exact", type="exact-match")])


def test_both_paths_report_working_time_and_dagster_leaves_out_the_wait_before_its_steps(tmp_path: Path) -> None:
    config = _config(tmp_path / "proj")
    sleepy = _sleepy("sleepy", [ITEMS])
    least = ITEMS * CALL_SECONDS * 1000
    began = time.perf_counter()
    library = sleepy.run(config=config)
    library_wall = (time.perf_counter() - began) * 1000
    plan = prepare(sleepy, config)
    # The partition's run was started an hour ago (its dataset step ran, then the run waited in a queue):
    # the hour is not time anyone worked on it.
    hour_ago = (datetime.now(UTC) - timedelta(hours=1)).isoformat()
    Store.for_config(config).start_run({"run_id": plan.run_id, "experiment": "sleepy", "started_at": hour_ago,
                                        "tags": [], "config": {}})
    began = time.perf_counter()
    dagster, _ = execute_job(config, sleepy, run_id=plan.run_id)
    assert dagster is not None
    dagster_wall = (time.perf_counter() - began) * 1000
    assert dagster.timestamp == hour_ago and dagster.status == "completed"
    assert least <= library.summary.total_duration_ms <= library_wall
    assert least <= dagster.summary.total_duration_ms <= dagster_wall
    assert Store.for_config(config).worked_ms(dagster.id) == dagster.summary.total_duration_ms


def test_a_failed_dagster_run_finished_on_the_library_path_adds_up_the_time_each_part_worked(tmp_path: Path) -> None:
    config = _config(tmp_path / "proj")
    crash_from = [2]
    sleepy = _sleepy("resumed", crash_from)
    cut, _ = execute_job(config, sleepy)
    assert cut is not None
    # The shard's last attempt ended the run's lease. Its two finished items wait in the exchange for a
    # re-execution from failure (Dagster's way of finishing it); the store has none of them yet.
    assert cut.status == "incomplete" and len(cut.items) == 0
    first_part = Store.for_config(config).worked_ms(cut.id)  # what the steps that reach the store stored
    crash_from[0] = ITEMS
    began = time.perf_counter()
    finished = sleepy.run(config=config, resume=cut.id)  # the library path runs what the store lacks: all 4
    second_part = (time.perf_counter() - began) * 1000
    assert (finished.id, finished.status, len(finished.items)) == (cut.id, "completed", ITEMS)
    assert first_part + ITEMS * CALL_SECONDS * 1000 <= finished.summary.total_duration_ms <= first_part + second_part
