"""A grader's content hash: what it says to the model, so a changed rubric is a new grader."""

from __future__ import annotations

import hashlib
import json
from typing import TYPE_CHECKING

from ._prompt import CONTRACT, STRICT_RETRY, SYSTEM

if TYPE_CHECKING:
    from ._deck import Grader

#: Bumped if the way a grader is turned into a prompt changes in a way its payload does not show.
FORMAT = 1


def content_hash(grader: Grader) -> str:
    """SHA-256 of the spec, the cards, the context values and the output contract (system prompt,
    contract and stricter retry). The name and the source file are left out: a renamed or moved
    grader with the same content keeps its calibration."""
    payload = {
        "format": FORMAT,
        "specs": list(grader.specs),
        "cards": [card.payload() for card in grader.cards],
        "context": [[c.name, c.as_text()] for c in grader.contexts],
        "contract": [SYSTEM, CONTRACT, STRICT_RETRY],
    }
    text = json.dumps(payload, ensure_ascii=False, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()
