"""CI integration: GitHub Actions step summary and annotations, and webhooks after a run."""

from __future__ import annotations

from ._github import github_outputs
from ._webhooks import apost_webhooks, post_webhooks

__all__ = [
    "apost_webhooks",
    "github_outputs",
    "post_webhooks",
]
