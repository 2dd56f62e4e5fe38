"""`json_valid`: 1 when the output is valid JSON."""

from __future__ import annotations

import json

from ...results._report import Evaluation
from .._context import EvalContext
from .._deterministic import Deterministic, NotJson, parse_json, verdict


class JsonValid(Deterministic):
    """1 when the output is valid JSON (a structured output, such as a dict, counts as JSON), else 0."""

    kind = "json_valid"

    def check(self, ctx: EvalContext) -> Evaluation:
        try:
            parse_json(ctx.output)
            if not isinstance(ctx.output, str | bytes | bytearray):
                json.dumps(ctx.output, allow_nan=False)
        except NotJson as exc:
            return verdict(False, str(exc))
        except (TypeError, ValueError) as exc:
            return verdict(False, f"the output cannot be written as JSON: {exc}")
        return verdict(True, "valid JSON")
