"""Which LLM provider, server, model and key a judge uses: OpenAI, Anthropic, OpenRouter, Azure
OpenAI or any OpenAI-compatible URL. `_wire` makes the calls."""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import unquote, urlparse, urlsplit

from .._errors import ConfigError, MissingApiKeyError
from .._secrets import MIN_LENGTH, register, register_url, scrubber, url_secrets
from ..config._config import EmbeddingsConfig, JudgeConfig

KEY_VARIABLES = {"openai": "OPENAI_API_KEY", "anthropic": "ANTHROPIC_API_KEY", "openrouter": "OPENROUTER_API_KEY"}
BASE_URL_VARIABLES = {"openai": "OPENAI_BASE_URL", "anthropic": "ANTHROPIC_BASE_URL"}
OPENROUTER_URL = "https://openrouter.ai/api/v1"
#: The judge model when neither the evaluator nor `[judge] model` (for its provider) names one.
DEFAULT_MODELS = {"openai": "gpt-4o-mini", "anthropic": "claude-haiku-4-5", "openrouter": "openai/gpt-4o-mini"}
#: Azure OpenAI resources (`https://NAME.openai.azure.com/openai/v1`) take their key in an `api-key`
#: header, from this variable when it is set.
AZURE_KEY_VARIABLE = "AZURE_OPENAI_API_KEY"
AZURE_HOST_SUFFIXES = (".openai.azure.com", ".cognitiveservices.azure.com", ".services.ai.azure.com")
_LOCAL_HOSTS = {"localhost", "127.0.0.1", "::1", "0.0.0.0"}
_PLACEHOLDER_KEY = "cobalt-local-placeholder"


@dataclass(frozen=True)
class Endpoint:
    """A resolved provider: where to send calls and with which key. The key never leaves here."""

    provider: str
    model: str
    base_url: str | None = field(repr=False)  # may carry credentials (user info, ?api-key=)
    api_key: str = field(repr=False)
    max_tokens: int = 512
    temperature: float | None = None
    send_temperature: bool = True
    max_retries: int = 4
    retry_max_seconds: float = 120.0
    timeout: float = 60.0

    @functools.cached_property
    def secrets(self) -> tuple[str, ...]:
        """What must never be shown: the key, and the password and query values of `base_url`
        (`user:pw@`, `?api-key=...`); `cobalt_lib._secrets` knows every way they are written back."""
        return tuple(s for s in (self.api_key, *url_secrets(self.base_url)) if len(s) >= MIN_LENGTH)

    @functools.cached_property
    def label(self) -> str:  # one string shared by every evaluation of the run, not one per evaluation
        return f"{self.provider}/{self.model}"

    def sampling(self) -> dict[str, Any]:
        if self.provider != "anthropic" and is_reasoning_model(self.model):
            # OpenAI's reasoning models reject max_tokens and temperature, and spend part of the
            # budget thinking: a judge answer needs more room than 512 tokens there.
            return {"max_completion_tokens": max(self.max_tokens, REASONING_MIN_TOKENS)}
        params: dict[str, Any] = {"max_tokens": self.max_tokens}
        if self.temperature is not None and self.send_temperature:
            params["temperature"] = self.temperature
        return params


#: The least output budget a reasoning-model judge gets (its reasoning tokens count against it).
REASONING_MIN_TOKENS = 4096
_REASONING = re.compile(r"^(o\d+|gpt-5)(\b|-|$)")


def is_reasoning_model(model: str) -> bool:
    """OpenAI's o-series and gpt-5 family, also behind a `vendor/` prefix (OpenRouter)."""
    return bool(_REASONING.match(model.rsplit("/", 1)[-1]))


def resolve_judge(judge: JudgeConfig, *, provider: str | None = None, model: str | None = None,
                  base_url: str | None = None, who: str = "the judge") -> Endpoint:
    """Combine config and per-evaluator overrides; raise if the provider's key is missing."""
    prov = provider or judge.provider
    if prov not in KEY_VARIABLES:
        raise ConfigError(f"{who}: unknown provider {prov!r}; use one of {', '.join(KEY_VARIABLES)}.")
    same_provider = prov == judge.provider
    url = base_url or (judge.base_url if same_provider else None) or _default_base_url(prov)
    if prov == "anthropic" and url:
        # /v1/messages is added per call; a base_url written the OpenAI way (…/v1) would call /v1/v1/messages.
        url = re.sub(r"/v1/?$", "", url.rstrip("/")) or url
    configured_key = judge.api_key.get_secret_value() if (judge.api_key and same_provider) else None
    variables = [KEY_VARIABLES[prov]]
    if prov == "openai" and is_azure(url):
        variables.insert(0, AZURE_KEY_VARIABLE)
    # A user:password in base_url goes as Basic auth; where the key would go in the Authorization
    # header too, the user info takes its place (as httpx did for the SDKs) and no key is needed.
    userinfo_auth = basic_credentials(url) is not None and key_in_authorization(prov, url)
    key = (configured_key or next((os.environ[v] for v in variables if os.environ.get(v)), None)
           or (_PLACEHOLDER_KEY if _is_local(url) or userinfo_auth else None))
    if not key:
        names = " or ".join(variables)
        raise MissingApiKeyError(
            f"{who} uses the {prov} provider but {names} is not set; "
            f"set {variables[0]} in the environment (or point [judge] base_url at a local server)."
        )
    register(key if key != _PLACEHOLDER_KEY else None)
    register_url(url)
    return Endpoint(
        provider=prov,
        model=model or (judge.model if same_provider else None) or DEFAULT_MODELS[prov],
        base_url=url,
        api_key=key,
        max_tokens=judge.max_tokens,
        temperature=judge.temperature,
        send_temperature=prov != "anthropic" or "temperature" in judge.model_fields_set,
        max_retries=judge.max_retries,
        retry_max_seconds=judge.retry_max_seconds,
        timeout=judge.timeout,
    )


def resolve_embeddings(judge: JudgeConfig, embeddings: EmbeddingsConfig, *, model: str | None = None,
                       who: str = "the similarity evaluator") -> Endpoint:
    provider = embeddings.provider or judge.provider
    if provider == "anthropic":
        raise ConfigError(
            f"{who} needs embeddings, which Anthropic does not offer; set [embeddings] provider = "
            "'openai' (or 'openrouter') and, if needed, its base_url."
        )
    base_url = embeddings.base_url or (judge.base_url if provider == judge.provider else None)
    return resolve_judge(judge, provider=provider, model=model or embeddings.model, base_url=base_url, who=who)


def _default_base_url(provider: str) -> str | None:
    if provider == "openrouter":
        return OPENROUTER_URL
    variable = BASE_URL_VARIABLES.get(provider)
    return os.environ.get(variable) if variable else None


def is_azure(url: str | None) -> bool:
    return bool(url) and str(urlparse(url).hostname or "").endswith(AZURE_HOST_SUFFIXES)


def _is_local(url: str | None) -> bool:
    return bool(url) and (urlparse(url).hostname or "") in _LOCAL_HOSTS


def import_sdks(endpoints: Iterable[Endpoint | None]) -> None:
    """Import the judge's HTTP client now, before any agent call: done lazily inside the event loop,
    the import would stall every agent call in flight."""
    if any(e is not None for e in endpoints):
        import aiohttp  # noqa: F401


def redact(text: str, endpoint: Endpoint) -> str:
    """`text` with the endpoint's secrets (its key, a password or query value in its `base_url`) and every
    other secret the process knows (a proxy's credentials, say) replaced by `***`, in any encoding: a server
    or a proxy may echo the request, URL and headers included."""
    return scrubber(*endpoint.secrets)(text)


def basic_credentials(url: str | None) -> str | None:
    """`user:password` (percent-decoded) from a URL's user info, or None when it has none."""
    parts = urlsplit(url or "")
    if parts.username is None and parts.password is None:
        return None
    return f"{unquote(parts.username or '')}:{unquote(parts.password or '')}"


def key_in_authorization(provider: str, base_url: str | None) -> bool:
    """Whether the provider sends its key as `Authorization: Bearer` (not `x-api-key` or `api-key`)."""
    return provider != "anthropic" and not is_azure(base_url)
