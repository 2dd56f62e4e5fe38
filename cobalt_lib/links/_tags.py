"""cobalt run tags as Dagster run tags: one Dagster tag per cobalt tag, so the Runs filter finds each.

A cobalt tag `nightly` becomes the Dagster tag `cobalt.tag/nightly: nightly` (Dagster's run filter
matches one key and one value; a comma-joined list could not be filtered by one of its tags). The key
keeps the characters Dagster allows in a key (others become `_`, at most 63); the value is the tag as
written, and is what cobalt reads back.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

TAG_PREFIX = "cobalt.tag/"
#: The Dagster run tag that says how the run judges: `true` through the provider's batch API, `false`
#: online; absent, as `[judge] batch` says (a schedule's `judge_batch` sets it).
JUDGE_BATCH_TAG = "cobalt/judge-batch"


def judge_batch_of(run_tags: Mapping[str, str]) -> bool | None:
    """What the run's `JUDGE_BATCH_TAG` asks: True, False, or None when it asks nothing."""
    return {"true": True, "false": False}.get(run_tags.get(JUDGE_BATCH_TAG, "").strip().lower())


def tag_key(tag: str) -> str:
    """The Dagster tag key of a cobalt tag: `nightly` -> `cobalt.tag/nightly`."""
    return TAG_PREFIX + (re.sub(r"[^A-Za-z0-9_.-]", "_", tag)[:63] or "_")


def dagster_tags(tags: Iterable[str]) -> dict[str, str]:
    """Dagster run tags for cobalt tags (an empty tag is dropped)."""
    return {tag_key(tag): tag for tag in tags if tag}


def cobalt_tags(run_tags: Mapping[str, str]) -> list[str]:
    """The cobalt tags a Dagster run carries, in the order of its tags."""
    return [value for key, value in run_tags.items() if key.startswith(TAG_PREFIX) and value]
