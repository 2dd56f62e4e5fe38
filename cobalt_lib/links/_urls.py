"""Where a person opens a run: the URLs of cobalt's pages and of the Dagster UI under `cobalt serve`.

`cobalt serve` exports `COBALT_PAGES_URL` and `COBALT_DAGSTER_URL` to the processes it starts, so runs
launched under it link to the ports actually served; elsewhere the configured ports are used.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING
from urllib.parse import quote, urlencode

from ._names import dagster_name

if TYPE_CHECKING:
    from ..config import Config

PAGES_URL_VARIABLE = "COBALT_PAGES_URL"
DAGSTER_URL_VARIABLE = "COBALT_DAGSTER_URL"


def dagster_url(config: Config) -> str:
    """The Dagster UI of `cobalt serve`: `[dashboard] port` on 127.0.0.1."""
    return (os.environ.get(DAGSTER_URL_VARIABLE) or f"http://127.0.0.1:{config.dashboard.port}").rstrip("/")


def pages_url(config: Config) -> str:
    """cobalt's own pages under `cobalt serve`: `[dashboard] pages_port` (default: the Dagster port + 1)."""
    port = config.dashboard.pages_port or config.dashboard.port + 1
    return (os.environ.get(PAGES_URL_VARIABLE) or f"http://127.0.0.1:{port}").rstrip("/")


def run_page_url(config: Config, run_id: str) -> str:
    return f"{pages_url(config)}/runs/{quote(run_id, safe='')}"


def compare_page_url(config: Config, run_a: str, run_b: str) -> str:
    return f"{pages_url(config)}/compare?{urlencode({'a': run_a, 'b': run_b})}"


def trends_page_url(config: Config, experiment: str) -> str:
    return f"{pages_url(config)}/trends?{urlencode({'experiment': experiment})}"


def dagster_run_url(config: Config, run_id: str) -> str:
    """Dagster's runs list filtered to the cobalt run's Dagster run: `cobalt run` materialises the run id
    as a partition, and Dagster tags that run `dagster/partition=<run id>`."""
    return f"{dagster_url(config)}/runs?{urlencode({'q[]': f'tag:dagster/partition={run_id}'})}"


def dagster_asset_url(config: Config, experiment: str, stage: str = "aggregates", partition: str | None = None) -> str:
    """The Dagster page of one of the experiment's assets (`dataset`, `outputs`, `scores`,
    `aggregates`), on its partitions tab at `partition` when given."""
    path = f"{dagster_url(config)}/assets/{quote(dagster_name(experiment), safe='')}/{quote(stage, safe='')}"
    return path + (f"?{urlencode({'view': 'partitions', 'partition': partition})}" if partition else "")


def dagster_check_url(config: Config, experiment: str, check: str) -> str:
    """The Dagster page of a gate's asset check (on the experiment's `aggregates`), by its check name."""
    return f"{dagster_asset_url(config, experiment)}?{urlencode({'view': 'checks', 'checkDetail': check})}"


def dagster_check_result_url(config: Config, dagster_run_id: str, check: str | None = None) -> str:
    """One run's result of a gate's check: the Dagster run's page (its run holds one partition) with its log
    filtered to check evaluations (and to `check` when given). The Dagster UI has no URL for one partition's
    result in the check's own view: that opens on the latest result, which may be another run's."""
    logs = "type:ASSET_CHECK_EVALUATION" + (f"|{check}" if check else "")
    return f"{dagster_url(config)}/runs/{quote(dagster_run_id, safe='')}?{urlencode({'logs': logs})}"
