"""How cobalt's things are named and reached outside it: the URLs of cobalt's pages and of the Dagster UI,
and the names experiments, gate checks and tags take in Dagster.

A package of its own, below both `ops` and `cobalt_dagster` and importing neither (nor dagster), so the
Dagster definitions, the pages, the terminal and the MCP server name and link things the same way
without importing one another.
"""

from __future__ import annotations

from ._names import dagster_check_name, dagster_check_names, dagster_name
from ._tags import JUDGE_BATCH_TAG, TAG_PREFIX, cobalt_tags, dagster_tags, judge_batch_of, tag_key
from ._urls import (
    DAGSTER_URL_VARIABLE,
    PAGES_URL_VARIABLE,
    compare_page_url,
    dagster_asset_url,
    dagster_check_result_url,
    dagster_check_url,
    dagster_run_url,
    dagster_url,
    pages_url,
    run_page_url,
    trends_page_url,
)
from ._variant_tags import GROUP_TAG, VARIANT_TAG, variant_of, variant_tags

__all__ = [
    "DAGSTER_URL_VARIABLE",
    "GROUP_TAG",
    "JUDGE_BATCH_TAG",
    "PAGES_URL_VARIABLE",
    "TAG_PREFIX",
    "VARIANT_TAG",
    "cobalt_tags",
    "compare_page_url",
    "dagster_asset_url",
    "dagster_check_name",
    "dagster_check_names",
    "dagster_check_result_url",
    "dagster_check_url",
    "dagster_name",
    "dagster_run_url",
    "dagster_tags",
    "dagster_url",
    "judge_batch_of",
    "pages_url",
    "run_page_url",
    "tag_key",
    "trends_page_url",
    "variant_of",
    "variant_tags",
]
