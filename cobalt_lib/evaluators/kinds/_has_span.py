"""`has_span`: the agent's trace holds a span with a given name, kind and attributes."""

from __future__ import annotations

import re
from typing import Any, Literal, Self

from pydantic import Field, model_validator

from ...results._report import Evaluation
from ...results._spans import SpanRecord
from ...traces._genai import json_value
from .._context import EvalContext
from .._deterministic import Deterministic, quote, verdict
from .._toolcalls import no_trace, same_json


class HasSpan(Deterministic):
    """1 when the agent's trace holds at least `min_count` spans matching every condition given
    (`span_name`, `name_matches`, `span_kind`, `attributes`, `status`), else 0; negate=True checks that none does."""

    kind = "has_span"

    span_name: str | None = Field(None, description="the span's exact name, e.g. 'execute_tool get_weather'")
    name_matches: str | None = Field(None, description="a regular expression the span's name contains a match of")
    span_kind: Literal["model", "embeddings", "tool", "agent", "other"] | None = Field(
        None, description="model, embeddings, tool, agent or other (from gen_ai.operation.name)")
    attributes: dict[str, Any] = Field(default_factory=dict, description="attributes the span must have, with these "
                                       "values (a JSON text attribute is compared as its JSON)")
    status: Literal["ok", "error", "unset"] | None = Field(None, description="the span's status")
    min_count: int = Field(1, ge=1, description="how many matching spans pass")

    @property
    def reads_spans(self) -> bool:
        return True

    @model_validator(mode="after")
    def _something_to_match(self) -> Self:
        if self.span_name is None and self.name_matches is None and self.span_kind is None and not self.attributes \
                and self.status is None:
            raise ValueError("give at least one of span_name, name_matches, span_kind, attributes or status")
        if self.name_matches is not None:
            try:
                re.compile(self.name_matches)
            except re.error as exc:
                raise ValueError(f"name_matches={self.name_matches!r} is not a regular expression: {exc}") from None
        return self

    def check(self, ctx: EvalContext) -> Evaluation:
        if not ctx.spans:
            return Evaluation(status="eval-error", error=no_trace("its spans"))
        found = [s for s in ctx.spans if self.matches(s)]
        wanted = self.describe_query()
        return verdict(len(found) >= self.min_count,
                       f"{len(found)} of {len(ctx.spans)} spans match {wanted}"
                       + (f" (at least {self.min_count} wanted)" if self.min_count > 1 else "")
                       + (f": {', '.join(sorted({s.name for s in found})[:5])}" if found else ""))

    def matches(self, span: SpanRecord) -> bool:
        if self.span_name is not None and span.name != self.span_name:
            return False
        if self.name_matches is not None and not re.search(self.name_matches, span.name):
            return False
        if self.span_kind is not None and span.kind != self.span_kind:
            return False
        if self.status is not None and span.status != self.status:
            return False
        return all(key in span.attributes and _same(value, span.attributes[key])
                   for key, value in self.attributes.items())

    def describe_query(self) -> str:
        parts = [f"name {quote(self.span_name, 60)}" if self.span_name is not None else "",
                 f"name matching {quote(self.name_matches, 60)}" if self.name_matches is not None else "",
                 f"kind {self.span_kind}" if self.span_kind else "", f"status {self.status}" if self.status else "",
                 *(f"{k}={quote(v, 40)}" for k, v in self.attributes.items())]
        return ", ".join(p for p in parts if p)


def _same(expected: Any, actual: Any) -> bool:
    return same_json(expected, actual) or same_json(expected, json_value(actual))
