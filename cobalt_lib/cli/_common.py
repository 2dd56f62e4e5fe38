"""Helpers the commands share: the project's config, warnings and JSON output.

The command modules import cobalt's domain inside their functions: `cobalt --help` (and a usage
error) then loads only typer, and answers in a fraction of the time a run needs to start.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rich.console import Console

    from ..config._config import Config
    from ..results._report import ExperimentReport


def project_config() -> Config:
    from ..config._config import load_config
    from ..ops._project import config_warnings

    config = load_config()
    warn(config_warnings(config))
    _replay_journals(config)
    return config


def _replay_journals(config: Config) -> None:
    """Rows a run left on disk while another process held the store go in before the command reads it
    (waiting a moment at most: a store still held leaves them for the next command)."""
    from ..store._journal import left, replay_left
    from ..store._store import Store

    store = Store.for_config(config)
    if left(store):
        replay_left(store, wait=2.0)


def console() -> Console:
    """stdout; colour only on a terminal, and wide enough that piped tables do not fold; markup off, so text
    that looks like Rich markup (`[/INST]`, `[s7]`) prints as it is."""
    from ..render._console import plain_console

    out = plain_console()
    return out if out.is_terminal else plain_console(width=max(out.width, 160), no_color=True)


def warn(warnings: Iterable[str]) -> None:
    """Each warning as a `warning: ...` line on stderr."""
    for warning in warnings:
        print(f"warning: {warning}", file=sys.stderr)


def print_json(data: Any) -> None:
    """JSON on stdout: characters as they are, or as JSON escapes when stdout cannot encode UTF-8."""
    utf8 = (getattr(sys.stdout, "encoding", None) or "").lower().replace("-", "") in ("utf8", "utf8sig")
    sys.stdout.write(json.dumps(data, indent=2, default=str, ensure_ascii=not utf8) + "\n")


def announce(reports: list[ExperimentReport], config: Config) -> None:
    """After runs: GitHub Actions outputs and webhooks; their failures are warnings, never failures."""
    from ..ci._github import github_outputs
    from ..ci._webhooks import post_webhooks

    warnings = github_outputs(reports, config)
    for report in reports:
        warnings += post_webhooks(config.webhooks, report)
    warn(warnings)
