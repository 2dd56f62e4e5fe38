"""Celery settings under which a shard outlives the worker process that ran it, as on the multiprocess
executor.

Dagster's celery executor reads a step's events from the task's result; a worker killed mid-task sends
none. By default celery acknowledges a task when a worker takes it, so the task is gone with the
worker: a prefork pool's child dies and the task fails (`WorkerLostError`, the run with it); a solo
worker dies and the task's result never comes (the run waits for ever). Under these settings the task
is acknowledged only once it ran (`task_acks_late`), so the broker hands it out again: at once when a
prefork pool's child died (`task_reject_on_worker_lost`), and after `lost_after` seconds when a whole
worker went away (Redis's `visibility_timeout`, swept by the workers that remain). The shard that runs
again resumes from the parts its files hold (`run_shard`), so each item is run to the end once;
`_shards` bounds how often one shard is handed out again.

A task that runs longer than `lost_after` is handed out a second time while it still runs (Redis
cannot tell a slow worker from a dead one): set it above the longest shard's run.
"""

from __future__ import annotations

from typing import Any

#: How long a task stays with a worker that took it before Redis hands it to another (an hour: kombu's
#: default, above any shard's run at the default `shard_items`).
LOST_AFTER = 3600.0


def celery_settings(*, lost_after: float = LOST_AFTER, transport: dict[str, Any] | None = None) -> dict[str, Any]:
    """Celery settings for the workers that run cobalt's shards (and the executor's `config_source`):
    late acknowledgement, a task re-queued when its pool process dies, one task fetched at a time.
    `transport` holds broker transport options of your own (they win over cobalt's)."""
    return {
        "task_acks_late": True,
        "task_reject_on_worker_lost": True,
        # A worker that prefetched a second task would hold it, unacknowledged, until it dies with it.
        "worker_prefetch_multiplier": 1,
        "broker_transport_options": {
            "visibility_timeout": lost_after,
            # The remaining workers look for tasks of a lost one this often (kombu's default: 100 s).
            "unacked_restore_interval": max(1, min(10, int(lost_after // 4))),
            "unacked_restore_throttle": 1,
            **(transport or {})},
    }


def configure(app: Any) -> Any:
    """Apply `celery_settings` to a celery app, keeping the broker transport options it has (those of
    `dagster_celery_config`, the module Dagster's worker app reads): the app, for `celery -A`."""
    own = dict(app.conf.broker_transport_options or {})
    lost_after = float(own.get("visibility_timeout", LOST_AFTER))
    app.conf.update(celery_settings(lost_after=lost_after, transport=own))
    return app
