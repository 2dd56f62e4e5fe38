"""The local embeddings backend of `similarity` (`provider="local"`): a sentence-transformers model on
disk, so no text leaves the machine. Needs the optional extra `cobalt-evals[local]`."""

from __future__ import annotations

import asyncio
import importlib.util
import threading
from typing import Any

from .._errors import ConfigError
from ..llm._judge import Embedded, Judge
from ..llm._providers import Endpoint

LOCAL = "local"
INSTALL_HINT = "pip install 'cobalt-evals[local]' (it brings sentence-transformers)"

_models: dict[str, Any] = {}
_loading = threading.Lock()


def local_endpoint(model: str, who: str) -> Endpoint:
    """The endpoint of a local model; an error naming the extra to install when sentence-transformers is absent."""
    if importlib.util.find_spec("sentence_transformers") is None:
        raise ConfigError(f"{who} uses the local embeddings backend (provider='local'), which needs the optional "
                          f"extra: {INSTALL_HINT}.")
    return Endpoint(provider=LOCAL, model=model, base_url=None, api_key="")


def _model(name: str) -> Any:
    with _loading:  # loading takes seconds and memory: once per process and model, whatever the concurrency
        if name not in _models:
            from sentence_transformers import SentenceTransformer

            _models[name] = SentenceTransformer(name, local_files_only=True)
        return _models[name]


async def embed_locally(judge: Judge, endpoint: Endpoint, texts: list[str]) -> Embedded:
    """Vectors for `texts` from the local model (off the event loop), each text cached like remote ones."""
    found, missing = judge.cached_vectors(endpoint, texts)
    if missing:
        encoded = await asyncio.to_thread(lambda: _model(endpoint.model).encode(missing))
        fresh = {text: [float(x) for x in vector] for text, vector in zip(missing, encoded, strict=True)}
        judge.cache_vectors(endpoint, fresh)
        found.update(fresh)
    return Embedded([found[t] for t in texts], 0, 0, cached=not missing)
