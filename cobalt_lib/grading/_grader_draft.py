"""`cobalt grader draft`: a first grader written by the judge model from labelled samples."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from pydantic import BaseModel, ConfigDict

from .._aio import run_anywhere
from .._errors import ConfigError
from ..config._config import Config
from ..llm._cache import ResponseCache
from ..llm._judge import Judge
from ..llm._providers import Endpoint, import_sdks, resolve_judge
from .graders._deck import Grader
from .graders._draft import STRICT_RETRY, SYSTEM, draft_request, parse_draft, spread
from .graders._samples import Sample, route_model

#: A grader is a page of JSON: more room than a judge's score needs.
MIN_OUTPUT_TOKENS = 4096


class Drafted(BaseModel):
    """The drafted grader, the model that wrote it and what that cost."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    grader: Grader
    judge_model: str
    samples_shown: int
    tokens: int = 0
    cost_usd: float | None = None


def default_model(config: Config) -> str:
    """The configured judge as a `provider/name` model, as `--model` takes it."""
    from ..llm._providers import DEFAULT_MODELS

    return f"{config.judge.provider}/{config.judge.model or DEFAULT_MODELS[config.judge.provider]}"


def draft_endpoint(config: Config, model: str | None = None) -> Endpoint:
    """Where the draft request goes: `model` (provider/name) or the configured judge."""
    who = "cobalt grader draft (the judge model writes the grader)"
    if model is None:
        endpoint = resolve_judge(config.judge, who=who)
    else:
        provider, name = route_model(model, config.judge.provider)
        endpoint = resolve_judge(config.judge, provider=provider, model=name, who=who)
    import_sdks([endpoint])
    return dataclasses.replace(endpoint, max_tokens=max(endpoint.max_tokens, MIN_OUTPUT_TOKENS))


def draft_grader(config: Config, samples: Sequence[Sample], *, name: str | None = None, model: str | None = None,
                 guidance: str | None = None) -> Drafted:
    """Ask the model for a grader reproducing the samples' human scores (one stricter retry on a bad answer).

    Each draft is a fresh call: drafting again gives the model another chance.
    """
    request = draft_request(samples, name, guidance)
    endpoint = draft_endpoint(config, model)
    return run_anywhere(_ask(config, endpoint, request, name, len(spread(samples))))


async def _ask(config: Config, endpoint: Endpoint, request: str, name: str | None, shown: int) -> Drafted:
    judge = Judge(ResponseCache(config.output_path / "cache", 0, enabled=False), 1,
                  {key: (p.input, p.output) for key, p in config.prices.items()})
    try:
        answer = await judge.ask(endpoint, request, lambda text: parse_draft(text, name), system=SYSTEM,
                                 retry=STRICT_RETRY, purpose="draft-grader")
    finally:
        await judge.aclose()
    ev = answer.evaluation
    if answer.value is None:
        raise ConfigError(f"The judge model ({endpoint.label}) gave no usable grader, even after a stricter retry: "
                          f"{ev.error}. Draft again, or write the grader by hand (docs/graders.md).")
    return Drafted(grader=answer.value, judge_model=endpoint.label, samples_shown=shown,
                   tokens=ev.tokens, cost_usd=ev.cost_usd)
