"""Provider names as promptfoo and the Evals API write them, as the `Model` cobalt calls."""

from __future__ import annotations

from typing import Any

from ._plan import ModelSpec
from ._source import Document, Findings, KeyPath

#: promptfoo provider prefixes cobalt's client speaks, and the cobalt provider of each.
_PREFIXES = {"openai": "openai", "anthropic": "anthropic", "openrouter": "openrouter"}
#: promptfoo's second segment that is an API, not part of the model name (`openai:chat:gpt-4o`).
_APIS = {"chat", "messages", "responses"}
_CONFIG = {"temperature": "temperature", "max_tokens": "max_tokens", "apiBaseUrl": "base_url",
           "apiHost": "base_url"}


def provider_spec(entry: Any, doc: Document, at: KeyPath, findings: Findings) -> tuple[str, ModelSpec] | None:
    """`(label, spec)` of a promptfoo provider (`openai:gpt-4o-mini` or `{id, label, config}`), or None
    when refused."""
    label, config = None, {}  # type: tuple[Any, Any]
    if isinstance(entry, dict):
        label, config = entry.get("label"), entry.get("config") or {}
        for key in entry:
            if key not in ("id", "label", "config"):
                findings.refuse(doc.where((*at, key)), f"provider option {key!r} has no cobalt equivalent; remove it")
        entry = entry.get("id")
    if not isinstance(entry, str):
        findings.error(doc.where(at), "is not a provider; give an id such as openai:gpt-4o-mini")
        return None
    prefix, _, rest = entry.partition(":")
    api, _, model = rest.partition(":")
    if api not in _APIS or not model:
        api, model = "", rest
    if prefix not in _PREFIXES or not model or api == "responses" or model.startswith(("completion:", "embedding")):
        findings.refuse(doc.where(at), f"provider {entry!r} has no cobalt client; use openai:MODEL, "
                                       "anthropic:messages:MODEL or openrouter:MODEL (any OpenAI-compatible server: "
                                       "openai:chat:MODEL with config.apiBaseUrl)")
        return None
    options: dict[str, Any] = {}
    for key, value in config.items() if isinstance(config, dict) else ():
        if key not in _CONFIG:
            findings.refuse(doc.where((*at, "config", key)), f"provider config {key!r} has no cobalt equivalent; "
                                                             "remove it (cobalt sends temperature and max_tokens)")
            continue
        # apiHost is a bare host (`api.example.com`), apiBaseUrl a whole URL
        options[_CONFIG[key]] = f"https://{value}/v1" if key == "apiHost" and "://" not in str(value) else value
    return str(label or entry), ModelSpec(_PREFIXES[prefix], model, **options)
