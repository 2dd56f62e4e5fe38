"""Gates that hold across Dagster runs: a deploy asset materialised later re-reads the stored verdicts."""

from __future__ import annotations

from pathlib import Path

import dagster as dg

from cobalt_lib import Store

from ._project import project_config


def require_gates_passed(experiment: str, run_id: str, project_dir: str | Path | None = None) -> None:
    """Raise `dagster.Failure` unless the stored verdicts of `run_id` all passed.

    Blocking checks stop downstream steps only inside one Dagster run; call this at the top of a
    deploy asset so a deploy materialised later for a failed partition fails too. The project is
    `project_dir`, else `COBALT_PROJECT_DIR` (set by `cobalt serve`), else the working directory.
    """
    config = project_config(project_dir)
    store = Store.for_config(config)
    with store.reading():  # both reads over one connection
        status = store.run_status(run_id)
        verdicts = store.rows("verdicts", run_id) if status == "completed" else []
    if status is None:
        raise dg.Failure(description=f"cobalt run {run_id} of {experiment!r} has no stored results; run it first.")
    if status != "completed":
        raise dg.Failure(description=f"cobalt run {run_id} is {status}, not completed.")
    failed = [v for v in verdicts if not v["passed"]]
    if failed:
        lines = "; ".join(f"{v['name']}: {v['message']}" for v in failed)
        raise dg.Failure(description=f"quality gates failed for {experiment!r} run {run_id}: {lines}",
                         metadata={"failed_gates": dg.MetadataValue.int(len(failed))})
