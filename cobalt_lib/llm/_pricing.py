"""Estimated cost of LLM calls. Unknown models cost `None` (unknown), never $0."""

from __future__ import annotations

import re
from collections.abc import Mapping

#: US dollars per million (input, output) tokens, list prices. Extend with `[prices]` in config.
PRICES: dict[str, tuple[float, float]] = {
    "gpt-4o": (2.50, 10.00),
    "gpt-4o-mini": (0.15, 0.60),
    "gpt-4.1": (2.00, 8.00),
    "gpt-4.1-mini": (0.40, 1.60),
    "gpt-4.1-nano": (0.10, 0.40),
    "gpt-5": (1.25, 10.00),
    "gpt-5-mini": (0.25, 2.00),
    "gpt-5-nano": (0.05, 0.40),
    "o3": (2.00, 8.00),
    "o4-mini": (1.10, 4.40),
    "text-embedding-3-small": (0.02, 0.0),
    "text-embedding-3-large": (0.13, 0.0),
    "claude-opus-4-1": (15.00, 75.00),
    "claude-sonnet-4-5": (3.00, 15.00),
    "claude-sonnet-4": (3.00, 15.00),
    "claude-haiku-4-5": (1.00, 5.00),
    "claude-3-5-haiku-latest": (0.80, 4.00),
}


def price_for(model: str, extra: Mapping[str, tuple[float, float]] | None = None) -> tuple[float, float] | None:
    """Per-million prices for `model`, also as `provider/model` (OpenRouter) or a dated snapshot."""
    table = {**PRICES, **(extra or {})}
    candidates = [model, model.split("/", 1)[-1]]
    for name in candidates:
        if name in table:
            return table[name]
    for name in candidates:  # snapshots of a known model: gpt-4o-mini-2024-07-18, claude-haiku-4-5-20251001
        base = _SNAPSHOT.sub("", name)
        if base != name and base in table:
            return table[base]
    return None


#: Only a date or `-latest` marks a snapshot: `o3-mini` or `gpt-5-pro` are other models, with
#: other prices, so they stay unknown rather than priced as `o3` or `gpt-5`.
_SNAPSHOT = re.compile(r"-(\d{4}-\d{2}-\d{2}|\d{8}|latest)$")


def cost_usd(
    model: str, input_tokens: int, output_tokens: int, extra: Mapping[str, tuple[float, float]] | None = None
) -> float | None:
    prices = price_for(model, extra)
    if prices is None:
        return None
    return (input_tokens * prices[0] + output_tokens * prices[1]) / 1_000_000
