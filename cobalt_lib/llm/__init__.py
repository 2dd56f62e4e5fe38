"""Model calls: endpoints and providers, the judge, its response cache and model prices."""

from __future__ import annotations

from ._agent_chat import agent_chat
from ._cache import ResponseCache, cache_key
from ._judge import STRICT_RETRY, SYSTEM_PROMPT, Answer, Judge, json_objects, parse_judgement
from ._pricing import cost_usd, price_for
from ._providers import Endpoint, import_sdks, redact, resolve_embeddings, resolve_judge
from ._retry import retry_after_seconds
from ._usage import UsageMeter, track_usage

__all__ = [
    "STRICT_RETRY",
    "SYSTEM_PROMPT",
    "Answer",
    "Endpoint",
    "Judge",
    "ResponseCache",
    "UsageMeter",
    "agent_chat",
    "cache_key",
    "cost_usd",
    "import_sdks",
    "json_objects",
    "parse_judgement",
    "price_for",
    "redact",
    "resolve_embeddings",
    "resolve_judge",
    "retry_after_seconds",
    "track_usage",
]
