"""An experiment judged by an LLM. Needs OPENAI_API_KEY (or ANTHROPIC_API_KEY with
COBALT_JUDGE_PROVIDER=anthropic), or OPENAI_BASE_URL pointing at any OpenAI-compatible server.

    OPENAI_API_KEY=sk-... python examples/llm_judge.py
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from cobalt_lib import CobaltError, Dataset, Evaluator, experiment, load_config, threshold

HERE = Path(__file__).parent
PROVIDER = os.environ.get("COBALT_JUDGE_PROVIDER", "openai")
MODEL = {"openai": "gpt-4o-mini", "anthropic": "claude-haiku-4-5"}.get(PROVIDER)

ANSWERS = {
    "France": "Paris is the capital of France.",
    "Japan": "Tokyo.",
    "Canada": "I believe it is Toronto, the largest city.",
}

relevance = Evaluator(
    name="relevance",
    provider=PROVIDER,
    model=MODEL,
    prompt=(
        "Question: {{input}}\n"
        "Reference answer: {{expected_output}}\n"
        "Agent's answer: {{output}}\n\n"
        "Score 1.0 if the agent's answer is correct and directly answers the question, 0.5 if it "
        "is partly correct or hedged, 0.0 if it is wrong."
    ),
)


@experiment(
    "capitals-judged",
    Dataset.from_file(HERE / "data" / "capitals.jsonl").slice(0, 6),
    evaluators=[relevance, Evaluator(name="exact", type="exact-match", ignore_case=True)],
    concurrency=3,
    tags=["example", "llm-judge"],
    assertions=[threshold("relevance", 0.6)],
)
def judged_agent(ctx):
    country = ctx.input.rsplit(" ", 1)[-1].rstrip("?")
    return ANSWERS.get(country, "I am not sure.")


def main() -> int:
    try:
        report = judged_agent.run(config=load_config())
    except CobaltError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    s = report.summary
    rel = s.scores["relevance"]
    mean = "n/a" if rel.avg is None else f"{rel.avg:.2f}"
    print(f"relevance: mean {mean} over {rel.count} scores ({rel.errors} judge errors), "
          f"{s.cached_scores} from the cache")
    judge_cost = "unknown" if s.judge_cost is None else f"${s.judge_cost:.5f}"
    print(f"judge: {s.judge_calls} calls, {s.judge_tokens} tokens, cost {judge_cost}")
    for gate in report.assertions:
        print(f"gate {'PASS' if gate.passed else 'FAIL'}: {gate.name} ({gate.message})")
    print(f"results: {report.results_path}")
    return 0 if report.passed else 1


if __name__ == "__main__":
    sys.exit(main())
