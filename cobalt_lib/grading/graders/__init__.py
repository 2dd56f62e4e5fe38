"""Graders: decks of spec and cards that score an output -3..3 with notes; files and content hashes."""

from __future__ import annotations

from ._deck import Card, Context, Grader, grader
from ._files import load_grader, resolve_grader_path
from ._hash import content_hash
from ._prompt import CONTRACT, SCALE, STRICT_RETRY, SYSTEM, block, normalised, parse_grade, render_prompt, rubric
from ._samples import Sample, canonical_model, load_samples, route_model

__all__ = [
    "CONTRACT",
    "SCALE",
    "STRICT_RETRY",
    "SYSTEM",
    "Card",
    "Context",
    "Grader",
    "Sample",
    "block",
    "canonical_model",
    "content_hash",
    "grader",
    "load_grader",
    "load_samples",
    "normalised",
    "parse_grade",
    "render_prompt",
    "resolve_grader_path",
    "route_model",
    "rubric",
]
