"""Moved to `cobalt_lib.links`; kept only for `_assets`, `_automation` and `_orchestrate`, until they import
from there (the lead's branch)."""

from __future__ import annotations

from cobalt_lib.links import TAG_PREFIX, cobalt_tags, dagster_tags, tag_key

__all__ = ["TAG_PREFIX", "cobalt_tags", "dagster_tags", "tag_key"]
