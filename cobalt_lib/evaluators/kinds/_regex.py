"""`regex`: 1 when a regular expression matches somewhere in the output."""

from __future__ import annotations

import re
from typing import Self

from pydantic import Field, model_validator

from ...results._report import Evaluation
from .._context import EvalContext
from .._deterministic import Deterministic, as_text, quote, verdict

_FLAGS = {"i": re.IGNORECASE, "m": re.MULTILINE, "s": re.DOTALL, "x": re.VERBOSE, "a": re.ASCII}


class Regex(Deterministic):
    """1 when `pattern` (a Python regular expression) matches anywhere in the output, else 0."""

    kind = "regex"

    pattern: str = Field(description=r"a Python regular expression, e.g. '\d{4}-\d{2}-\d{2}'")
    flags: str = Field("", description="letters: i (ignore case), m (multiline), s (dot matches newline), x, a")

    @model_validator(mode="after")
    def _compiles(self) -> Self:
        unknown = sorted(set(self.flags) - set(_FLAGS))
        if unknown:
            raise ValueError(f"flags={self.flags!r} has unknown flag {unknown[0]!r}; use letters from 'imsxa'")
        try:
            self.compiled()
        except re.error as exc:
            raise ValueError(f"pattern={self.pattern!r} is not a valid regular expression: {exc}") from None
        return self

    def compiled(self) -> re.Pattern[str]:
        flags = 0
        for letter in self.flags:
            flags |= _FLAGS[letter]
        return _compile(self.pattern, flags)

    def check(self, ctx: EvalContext) -> Evaluation:
        match = self.compiled().search(as_text(ctx.output))
        if match is None:
            return verdict(False, f"no match for /{self.pattern}/")
        return verdict(True, f"/{self.pattern}/ matches {quote(match.group(0), 60)}")


def _compile(pattern: str, flags: int) -> re.Pattern[str]:
    return re.compile(pattern, flags)  # re keeps its own cache of compiled patterns
