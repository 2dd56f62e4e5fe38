"""A 2 x 2 variant experiment (model x prompt) judged by the loopback LLM server, for the variant tests."""

from __future__ import annotations

from pathlib import Path

from fakellm import FakeLLM

from cobalt_lib import Config, load_config

#: `sweep`: 6 items; the judge scores by the `SCORE=` marker in each output. small/v1 (the baseline) and
#: small/v2 answer alike (0.5: one judge call for both); large/v1 answers better (0.8..0.88) and large/v2
#: worse (0.3), both at twice the cost; item 5 every variant answers alike (0.5). 16 distinct outputs.
SWEEP = '''
import os
from cobalt_lib import Dataset, Evaluator, experiment, threshold

data = Dataset([{"id": f"q{i}", "input": f"question {i}"} for i in range(6)])
SCORES = {("small", "v1"): lambda i: 0.5, ("small", "v2"): lambda i: 0.5,
          ("large", "v1"): lambda i: 0.8 + 0.02 * i, ("large", "v2"): lambda i: 0.3}

@experiment("sweep", data, variants={"model": ["small", "large"], "prompt": ["v1", "v2"]},
            evaluators=[Evaluator(name="quality", prompt="Rate: {{output}}")],
            assertions=[threshold("quality", 0.4), threshold("quality", 0.75, variant="model=large,prompt=v1")])
def agent(ctx):
    model, prompt = ctx.variant["model"], ctx.variant["prompt"]
    if (model, prompt) == ("large", "v1") and ctx.index == int(os.environ.get("SWEEP_STOP_AT", "99")):
        raise KeyboardInterrupt  # as a Ctrl-C would, mid-run
    if ctx.index == 5:
        return {"output": "SCORE=0.50 answer 5", "metadata": {"cost_usd": 0.002 if model == "large" else 0.001}}
    score = SCORES[(model, prompt)](ctx.index)
    return {"output": f"SCORE={score:.2f} answer {ctx.index}" + (" (large)" if model == "large" else ""),
            "metadata": {"cost_usd": 0.002 if model == "large" else 0.001}}
'''


def sweep_project(root: Path, llm: FakeLLM) -> Config:
    (root / "experiments").mkdir(exist_ok=True)
    (root / "experiments" / "sweep.cobalt.py").write_text(SWEEP, encoding="utf-8")
    (root / "cobalt.toml").write_text(f'[judge]\nprovider = "openai"\nmodel = "gpt-4o-mini"\n'
                                      f'base_url = "{llm.openai_url}"\n', encoding="utf-8")
    llm.respond = _score_from_output
    return load_config(root)


def _score_from_output(kind: str, body: dict) -> str:  # type: ignore[type-arg]
    from fakellm import score_from_prompt

    reply = score_from_prompt(kind, body)
    return reply.text or ""
