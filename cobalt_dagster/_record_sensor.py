"""The record sensor's bookkeeping: which recordings it requested, which failed and when each is tried
again, kept in the sensor's cursor (JSON), so a failing recording never holds up the others.

Each tick first settles the recordings it requested before: one the store now holds is done; one whose
Dagster run ended without recording it waits `RETRY_SECONDS * 2 ** (attempt - 1)` and is requested again,
up to `MAX_ATTEMPTS`, after which it is skipped for good (the store notes it `failed`, the sensor's log
says why, and `cobalt_dagster.record_runs` can still record it by hand). Then it requests up to
`RECORDS_PER_TICK` runs: new ones first, then the retries that are due. Each request of a run carries a
tag of its own (`cobalt/record-attempt`), so a retry is a new run and the sensor finds each attempt's
Dagster run by it.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass
from typing import Any

import dagster as dg

from cobalt_lib import Store
from cobalt_lib.render import duration

#: Recordings the sensor requests per evaluation (the rest wait for the next).
RECORDS_PER_TICK = 25
#: Tries of one recording before it is skipped, and the wait after the first failure (doubling after each).
MAX_ATTEMPTS = 4
RETRY_SECONDS = 60.0
#: A requested recording whose Dagster run has not appeared by then counts as failed (the request was lost).
LAUNCH_SECONDS = 600.0
#: How the store notes a run whose recording failed `MAX_ATTEMPTS` times: never requested again.
FAILED = "failed"
ATTEMPT_TAG = "cobalt/record-attempt"
#: How much of a failed step's error a reason keeps (the cursor holds one per failing run).
REASON_CHARS = 300
_ENDED = {dg.DagsterRunStatus.SUCCESS, dg.DagsterRunStatus.FAILURE, dg.DagsterRunStatus.CANCELED}


@dataclass
class Attempt:
    """A run's latest recording: its attempt number, when it was requested, and once it failed, why and
    when it is tried again (`retry_at` None: requested, not settled yet)."""

    attempt: int
    requested_at: float
    retry_at: float | None = None
    reason: str | None = None


def load_state(cursor: str | None) -> dict[str, Attempt]:
    """The cursor's recordings by cobalt run id (an empty or older cursor: none)."""
    try:
        data = json.loads(cursor or "{}")
        return {run_id: Attempt(**entry) for run_id, entry in data.get("runs", {}).items()}
    except (ValueError, TypeError, AttributeError):  # a cursor from before this bookkeeping
        return {}


def dump_state(state: Mapping[str, Attempt]) -> str:
    return json.dumps({"runs": {run_id: asdict(entry) for run_id, entry in state.items()}}, sort_keys=True)


def attempt_tag(run_id: str, attempt: int) -> dict[str, str]:
    return {ATTEMPT_TAG: f"{run_id}/{attempt}"}


def backoff(attempt: int) -> float:
    """Seconds to wait after attempt `attempt` (1, 2, ...) failed."""
    return RETRY_SECONDS * 2 ** (attempt - 1)


def settle(state: dict[str, Attempt], store: Store, instance: dg.DagsterInstance, now: float,
           warn: Callable[[str], None]) -> None:
    """Bring `state` up to date: drop the runs the store holds (recorded meanwhile, by the sensor or
    inline) or no longer needs recorded; note each ended attempt that recorded nothing, its reason and
    its retry time, or skip the run once it has had `MAX_ATTEMPTS` (each told to `warn`)."""
    noted = _noted(store, list(state))
    for run_id, entry in list(state.items()):
        row = store.get_run(run_id) if run_id not in noted else None
        if row is None or row["status"] == "running":
            del state[run_id]
            continue
        if entry.retry_at is not None:
            continue
        reason = _failure(instance, run_id, entry, now)
        if reason is None:
            continue  # still queued or running
        if entry.attempt >= MAX_ATTEMPTS:
            store.mark_in_dagster(run_id, None, FAILED)
            warn(f"cobalt run {run_id} is not recorded: its recording failed {entry.attempt} times, the "
                        f"last because {reason}; record it with cobalt_dagster.record_runs once that is fixed.")
            del state[run_id]
            continue
        entry.retry_at, entry.reason = now + backoff(entry.attempt), reason
        wait = duration(backoff(entry.attempt) * 1000)
        warn(f"recording cobalt run {run_id} failed ({reason}); tried again in {wait}.")


def _noted(store: Store, run_ids: list[str]) -> set[str]:
    """Those of `run_ids` the store notes in any way (recorded, executed, skipped, failed): not to record.
    (A cursor names runs only once `unrecorded_runs` found them, so the table exists.)"""
    if not run_ids:
        return set()
    rows = store.query("SELECT run_id FROM dagster_runs WHERE run_id IN (SELECT unnest(?))", [run_ids])
    return {str(r["run_id"]) for r in rows}


def _failure(instance: dg.DagsterInstance, run_id: str, entry: Attempt, now: float) -> str | None:
    """Why the attempt recorded nothing, once its Dagster run ended (None: not ended yet)."""
    records = instance.get_run_records(dg.RunsFilter(tags=attempt_tag(run_id, entry.attempt)), limit=1)
    if not records:
        return (f"its Dagster run was not launched within {duration(LAUNCH_SECONDS * 1000)}"
                if now - entry.requested_at > LAUNCH_SECONDS else None)
    run = records[0].dagster_run
    if run.status not in _ENDED:
        return None
    failures = instance.get_records_for_run(run.run_id, of_type=dg.DagsterEventType.STEP_FAILURE, limit=1).records
    event = failures[0].event_log_entry.dagster_event if failures else None
    error = getattr(getattr(event, "event_specific_data", None), "error", None) if event is not None else None
    while getattr(error, "cause", None) is not None:  # the step's own exception, not Dagster's wrapper of it
        error = error.cause  # type: ignore[union-attr]
    detail = " ".join(str(getattr(error, "message", "") or "").split())
    return f"Dagster run {run.run_id} ended {run.status.value}" + (f": {detail[:REASON_CHARS]}" if detail else "")


def choose(state: dict[str, Attempt], store: Store, experiments: list[str], now: float, *,
           prefix: str | None = None) -> list[tuple[dict[str, Any], int]]:
    """The runs to request this tick with their attempt numbers (runs of `experiments`, and of those named
    `prefix...`): new runs first, then the due retries, `RECORDS_PER_TICK` in all; each is noted in `state`
    as requested."""
    found = store.unrecorded_runs(experiments, limit=RECORDS_PER_TICK + len(state), prefix=prefix)
    chosen = [(row, 1) for row in found if row["run_id"] not in state][:RECORDS_PER_TICK]
    due = sorted((entry.retry_at or 0.0, run_id) for run_id, entry in state.items()
                 if entry.retry_at is not None and entry.retry_at <= now)
    for _, run_id in due[:RECORDS_PER_TICK - len(chosen)]:
        row = store.get_run(run_id)
        if row is not None:
            chosen.append((row, state[run_id].attempt + 1))
    for row, attempt in chosen:
        state[row["run_id"]] = Attempt(attempt, now)
    return chosen
