"""Observers (the terminal reporter) of in-process Dagster runs, keyed by cobalt run id."""

from __future__ import annotations

from cobalt_lib._pipeline import Observer

OBSERVERS: dict[str, Observer] = {}
