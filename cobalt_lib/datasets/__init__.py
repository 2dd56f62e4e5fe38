"""Stored datasets: immutable, numbered, content-addressed versions with splits, pushed from files and
grown from runs and labels (docs/datasets.md). The use cases and their text live here; the CLI, the
MCP server and the Dagster assets are thin adapters over them. Reading a version into an experiment is
`Dataset.from_store`."""

from __future__ import annotations

from ._changes import with_version_diffs
from ._grow import add_from_labels, add_from_run, add_items
from ._models import DatasetDiff, DiffEntry, PushOutcome, ShownVersion, VersionInfo
from ._render import diff_text, push_text, shown_text, version_line, versions_text
from ._versions import diff_versions, export_version, list_versions, push_dataset, resolve, show_version, version_diff

__all__ = [
    "DatasetDiff",
    "DiffEntry",
    "PushOutcome",
    "ShownVersion",
    "VersionInfo",
    "add_from_labels",
    "add_from_run",
    "add_items",
    "diff_text",
    "diff_versions",
    "export_version",
    "list_versions",
    "push_dataset",
    "push_text",
    "resolve",
    "show_version",
    "shown_text",
    "version_diff",
    "version_line",
    "versions_text",
    "with_version_diffs",
]
