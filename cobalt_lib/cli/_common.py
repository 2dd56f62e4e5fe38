"""Helpers the commands share: the project's config, warnings and JSON output."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable
from typing import Any

from ..ci._github import github_outputs
from ..ci._webhooks import post_webhooks
from ..config._config import Config, load_config
from ..ops._project import config_warnings
from ..results._report import ExperimentReport


def project_config() -> Config:
    config = load_config()
    warn(config_warnings(config))
    return config


def warn(warnings: Iterable[str]) -> None:
    """Each warning as a `warning: ...` line on stderr."""
    for warning in warnings:
        print(f"warning: {warning}", file=sys.stderr)


def print_json(data: Any) -> None:
    sys.stdout.write(json.dumps(data, indent=2, default=str, ensure_ascii=False) + "\n")


def announce(reports: list[ExperimentReport], config: Config) -> None:
    """After runs: GitHub Actions outputs and webhooks; their failures are warnings, never failures."""
    warnings = github_outputs(reports)
    for report in reports:
        warnings += post_webhooks(config.webhooks, report)
    warn(warnings)
