"""How a run's step processes start on Dagster's default executor (`_step_processes`): forked from a fork
server, which a process that launches runs itself replaces when its environment changed."""

from __future__ import annotations

import multiprocessing
import os
import sys
from multiprocessing import forkserver
from typing import Any

import pytest

import cobalt_dagster
from cobalt_dagster._step_processes import PRELOAD, fresh_fork_server


def _exit_with_marker() -> None:
    sys.exit(0 if os.environ.get("COBALT_FORK_TEST") == "changed" else 3)


def _exit_code() -> int | None:
    child = multiprocessing.get_context("forkserver").Process(target=_exit_with_marker)
    child.start()
    child.join()
    return child.exitcode


def test_a_changed_environment_gets_a_new_fork_server_whose_steps_see_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COBALT_FORK_TEST", "before")
    fresh_fork_server()  # notes the environment the server starts under
    assert _exit_code() == 3
    server: Any = forkserver._forkserver  # type: ignore[attr-defined]
    first = server._forkserver_pid
    fresh_fork_server()  # the same environment: the same server
    assert server._forkserver_pid == first is not None
    monkeypatch.setenv("COBALT_FORK_TEST", "changed")
    fresh_fork_server()
    assert server._forkserver_pid is None
    assert _exit_code() == 0  # a new server, started under the current environment
    assert server._forkserver_pid not in (None, first)


def test_the_jobs_fork_their_steps_on_dagsters_default_executor_only(tmp_path: Any) -> None:
    (tmp_path / "experiments").mkdir()
    (tmp_path / "experiments" / "tiny.cobalt.py").write_text(
        'from cobalt_lib import Dataset, experiment\n\n'
        '@experiment("tiny", Dataset([{"input": "a"}]))\ndef tiny(ctx):\n    return ctx.input\n')
    (tmp_path / "cobalt.toml").write_text("")

    def run_config(**kwargs: Any) -> dict[str, Any]:
        job = cobalt_dagster.build_definitions(tmp_path, **kwargs).resolve_job_def("tiny_eval")
        return dict(job.partitioned_config.get_run_config_for_partition_key("p"))

    forked = run_config()["execution"]["config"]["multiprocess"]["start_method"]["forkserver"]
    assert forked["preload_modules"] == list(PRELOAD)
    assert "execution" not in run_config(fork_steps=False)
    assert run_config(fork_steps=False)["loggers"] == run_config()["loggers"]


def test_a_run_launched_with_no_run_config_forks_its_steps_too(tmp_path: Any) -> None:
    """The asset graph's "Materialize" and an asset backfill launch Dagster's `__ASSET_JOB` with an empty run
    config: the executor's own default forks the steps, and a run config of its own is taken as written."""
    import dagster as dg

    (tmp_path / "experiments").mkdir()
    (tmp_path / "experiments" / "tiny.cobalt.py").write_text(
        'from cobalt_lib import Dataset, experiment\n\n'
        '@experiment("tiny", Dataset([{"input": "a"}]))\ndef tiny(ctx):\n    return ctx.input\n')
    (tmp_path / "cobalt.toml").write_text("")

    def execution(run_config: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        job = cobalt_dagster.build_definitions(tmp_path, **kwargs).resolve_implicit_global_asset_job_def()
        assert job.executor_def.name == dg.multi_or_in_process_executor.name  # what run configs name stays
        return dict(dg.validate_run_config(job, run_config)["execution"]["multi_or_in_process_executor"])

    assert execution({})["multiprocess"]["start_method"] == {"forkserver": {"preload_modules": list(PRELOAD)}}
    assert "in_process" in execution({"execution": {"config": {"in_process": {}}}})
    assert "start_method" not in execution({}, fork_steps=False)["multiprocess"]
