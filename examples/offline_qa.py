"""An experiment that runs offline: a deterministic agent, function and exact-match evaluators.

    python examples/offline_qa.py
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

from cobalt_lib import Dataset, EvalContext, Evaluator, experiment, threshold

HERE = Path(__file__).parent

# The "agent" knows some capitals, answers one of them wrongly and some in lower case.
KNOWLEDGE = {
    "France": "Paris", "Japan": "Tokyo", "Italy": "rome", "Canada": "Toronto", "Australia": "Canberra",
    "Brazil": "Brasília", "Kenya": "Nairobi", "Norway": "Oslo", "Egypt": "Cairo", "Peru": "Lima",
    "Mongolia": "Ulaanbaatar",
}


def mentions_expected(ctx: EvalContext) -> dict[str, object]:
    """1 when the expected answer appears in the output, ignoring case."""
    found = str(ctx.expected_output).lower() in str(ctx.output).lower()
    return {"score": 1.0 if found else 0.0, "reason": "mentions the answer" if found else "answer missing"}


def concise(ctx: EvalContext) -> float:
    """Shorter answers score higher: 1 for up to 2 words, falling to 0 at 12."""
    words = len(str(ctx.output).split())
    return max(0.0, min(1.0, (12 - words) / 10))


@experiment(
    "capitals-offline",
    Dataset.from_file(HERE / "data" / "capitals.jsonl"),
    evaluators=[
        Evaluator(name="exact", type="exact-match", field="expected_output"),
        Evaluator(name="exact-nocase", type="exact-match", field="expected_output", ignore_case=True),
        Evaluator(name="mentions", type="function", fn=mentions_expected),
        Evaluator(name="concise", type="function", fn=concise),
    ],
    concurrency=4,
    timeout=5,
    tags=["example", "offline"],
    assertions=[threshold("mentions", 0.7), threshold("latency.p95", 1000)],
)
async def capitals_agent(ctx):
    """Looks the country up in a fixed table, after a short simulated model latency."""
    await asyncio.sleep(0.01)
    country = ctx.input.rsplit(" ", 1)[-1].rstrip("?")
    answer = KNOWLEDGE.get(country, "I don't know")
    return {"output": answer, "metadata": {"model": "lookup-table", "tokens": len(ctx.input.split()) + 1}}


def main() -> int:
    report = capitals_agent.run()
    s = report.summary
    for name, stats in s.scores.items():
        print(f"{name:>14}: mean {stats.avg:.2f}  p50 {stats.p50:.2f}  min {stats.min:.2f}  max {stats.max:.2f}")
    print(f"{s.total_runs} items in {s.total_duration_ms:.0f} ms; {s.errors} errors, {s.timeouts} timeouts")
    for gate in report.assertions:
        print(f"gate {'PASS' if gate.passed else 'FAIL'}: {gate.name} ({gate.message})")
    print(f"run id:  {report.id}")
    print(f"results: {report.results_path}")
    print(f"store:   {Path(report.results_path or '.').parent.parent / 'cobalt.duckdb'}")
    return 0 if report.passed else 1


if __name__ == "__main__":
    sys.exit(main())
