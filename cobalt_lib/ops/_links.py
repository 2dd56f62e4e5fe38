"""Moved to `cobalt_lib.links`; kept only for `cli/_serve.py`, until it imports from there (the lead's branch)."""

from __future__ import annotations

from ..links import DAGSTER_URL_VARIABLE, PAGES_URL_VARIABLE, dagster_url

__all__ = ["DAGSTER_URL_VARIABLE", "PAGES_URL_VARIABLE", "dagster_url"]
