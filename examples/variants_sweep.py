"""Variants offline: two models x two prompts of a deterministic agent, side by side against the baseline.

    python examples/variants_sweep.py          # then: cobalt compare --group latest

Each variant is its own run under one run group; the grid gives every variant's mean, its paired
interval and verdict against the baseline (small/terse), its cost per item and whether it is on the
quality/cost frontier. Gates apply to every variant, and one names the variant that must pass it.
"""

from __future__ import annotations

import sys
from pathlib import Path

from cobalt_lib import Dataset, EvalContext, Evaluator, experiment, threshold
from cobalt_lib.results import build_grid

HERE = Path(__file__).parent

# The small "model" knows some capitals; the large one knows them all, at ten times the price.
SMALL = {"France": "Paris", "Japan": "Tokyo", "Italy": "Rome", "Kenya": "Nairobi", "Norway": "Oslo",
         "Egypt": "Cairo", "Peru": "Lima"}
LARGE = {**SMALL, "Canada": "Ottawa", "Australia": "Canberra", "Brazil": "Brasília", "Mongolia": "Ulaanbaatar",
         "Chile": "Santiago", "Spain": "Madrid", "Germany": "Berlin", "India": "New Delhi"}
PRICE = {"small": 0.0001, "large": 0.001}


def mentions_expected(ctx: EvalContext) -> float:
    return 1.0 if str(ctx.expected_output).lower() in str(ctx.output).lower() else 0.0


@experiment(
    "capitals-sweep",
    Dataset.from_file(HERE / "data" / "capitals.jsonl"),
    variants={"model": ["small", "large"], "prompt": ["terse", "polite"]},
    evaluators=[
        Evaluator(name="mentions", type="function", fn=mentions_expected),
        Evaluator(name="exact", type="exact-match", field="expected_output", ignore_case=True),
    ],
    assertions=[threshold("mentions", 0.5), threshold("mentions", 0.9, variant="model=large,prompt=terse")],
    tags=["example", "variants"],
)
def capitals_agent(ctx):
    """Answers from its variant's table, tersely or in a sentence."""
    country = ctx.input.rsplit(" ", 1)[-1].rstrip("?")
    table = LARGE if ctx.variant["model"] == "large" else SMALL
    answer = table.get(country, "I don't know")
    text = answer if ctx.variant["prompt"] == "terse" else f"The capital of {country} is {answer}."
    return {"output": text, "metadata": {"cost_usd": PRICE[ctx.variant["model"]]}}


def main() -> int:
    reports = capitals_agent.run_variants()
    grid = build_grid(str(reports[0].group_id), reports)
    print(f"group {grid.group_id}: {len(grid.rows)} variants against {grid.baseline}")
    for row in grid.rows:
        cells = "  ".join(f"{c.evaluator} {c.mean:.2f} ({c.word})" for c in row.cells if c.mean is not None)
        mark = " frontier" if row.frontier else ""
        print(f"{row.variant:<26} {cells}  cost/item ${row.cost_per_item:.4f}{mark}  "
              f"{'passed' if row.passed else 'FAILED: ' + ', '.join(row.failed_gates)}")
    return 0 if grid.passed else 1


if __name__ == "__main__":
    sys.exit(main())
