"""The celery app of workers that run cobalt's shards: `celery -A cobalt_dagster.celery_app worker -Q dagster`.

Dagster's worker app (`dagster_celery.app`, configured by your `dagster_celery_config` module, as
`dagster-celery worker start` reads it) under `celery_settings`: a shard whose worker dies is run
again by another worker, from its committed parts. Needs `dagster-celery` installed.
"""

from dagster_celery.app import app, execute_job, execute_plan, resume_job

from ._celery import configure

configure(app)

__all__ = ["app", "execute_job", "execute_plan", "resume_job"]
