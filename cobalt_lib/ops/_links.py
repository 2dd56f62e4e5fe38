"""Where a person opens a run: the URLs of cobalt's pages and of the Dagster UI under `cobalt serve`.

One place for them, so the Dagster metadata (links to the pages), the pages (links to Dagster), the
terminal and the MCP server all point at the same addresses. `cobalt serve` exports
`COBALT_PAGES_URL` and `COBALT_DAGSTER_URL` to the processes it starts, so runs launched under it
link to the ports actually served; elsewhere the configured ports are used.
"""

from __future__ import annotations

import os
import re
from typing import TYPE_CHECKING
from urllib.parse import quote, urlencode

if TYPE_CHECKING:
    from ..config._config import Config

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


def dagster_name(name: str) -> str:
    """`my-summarizer-agent` -> `my_summarizer_agent`: an experiment's Dagster asset-key prefix and
    DuckDB-safe identifier (every character outside [A-Za-z0-9_] becomes `_`)."""
    safe = re.sub(r"[^A-Za-z0-9_]", "_", name)
    return f"x_{safe}" if not safe or safe[0].isdigit() else safe
