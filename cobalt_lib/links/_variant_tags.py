"""A variant's run in Dagster: its partition is its own run id (one key per variant), and two run tags say
which variant it is and which run group it belongs to, so the Runs filter finds a group's runs."""

from __future__ import annotations

from collections.abc import Mapping

GROUP_TAG = "cobalt/group"
VARIANT_TAG = "cobalt/variant"


def variant_tags(group_id: str | None, variant: str | None) -> dict[str, str]:
    """The Dagster run tags of a variant's run (none for a run without a variant)."""
    if variant is None:
        return {}
    return {VARIANT_TAG: variant, **({GROUP_TAG: group_id} if group_id else {})}


def variant_of(run_tags: Mapping[str, str]) -> tuple[str | None, str | None]:
    """`(variant, group_id)` a Dagster run's tags name, each None when absent."""
    return run_tags.get(VARIANT_TAG) or None, run_tags.get(GROUP_TAG) or None
