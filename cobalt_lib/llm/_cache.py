"""The judge and embeddings response cache: one small JSON file per key.

Each entry is written to a temporary file in the same directory and moved into place with
`os.replace`, which is atomic: several processes may write at once and a crash mid-write leaves
either the old entry or none, never half of one. Errors are never cached.
"""

from __future__ import annotations

import hashlib
import json
import time
from pathlib import Path
from typing import Any

from .._files import write_atomically
from .._secrets import safe_url, scrubber


def cache_key(kind: str, provider: str, model: str, prompt: Any, params: dict[str, Any],
              base_url: str | None = None) -> str:
    """SHA-256 of everything that determines the answer: the server too (two OpenAI-compatible
    servers may serve different weights under one model name), never the API key nor the
    credentials a base_url may carry (its user info and query)."""
    payload = json.dumps(
        {"kind": kind, "provider": provider, "model": model, "prompt": prompt, "params": params,
         **({"base_url": safe_url(base_url)} if base_url else {})},
        sort_keys=True,
        ensure_ascii=False,
        separators=(",", ":"),
    )
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()


class ResponseCache:
    """A directory of cached responses with a time-to-live."""

    def __init__(self, directory: Path, ttl_seconds: float, *, enabled: bool = True) -> None:
        self.directory = directory
        self.ttl_seconds = ttl_seconds
        self.enabled = enabled

    def _path(self, key: str) -> Path:
        return self.directory / key[:2] / f"{key}.json"

    def get(self, key: str) -> dict[str, Any] | None:
        if not self.enabled:
            return None
        try:
            with open(self._path(key), encoding="utf-8") as fh:
                entry = json.load(fh)
        except (OSError, ValueError):
            return None
        if not isinstance(entry, dict) or time.time() - float(entry.get("created", 0)) > self.ttl_seconds:
            return None
        value = entry.get("value")
        return value if isinstance(value, dict) else None

    def put(self, key: str, value: dict[str, Any]) -> None:
        if not self.enabled:
            return
        target = self._path(key)
        target.parent.mkdir(parents=True, exist_ok=True)
        # an answer that echoed a secret (a proxy's credentials, a key) is kept without it
        data = json.dumps({"created": time.time(), "value": scrubber().value(value)}, ensure_ascii=False)
        write_atomically(target, data)

    def clear(self) -> int:
        """Delete every entry; returns how many files were removed."""
        removed = 0
        if self.directory.is_dir():
            for path in self.directory.glob("*/*.json"):
                path.unlink(missing_ok=True)
                removed += 1
        return removed
