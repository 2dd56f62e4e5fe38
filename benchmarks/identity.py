"""What a run's evaluation identity costs (issue 25): computed once per run when its plan is made, it hashes
every dataset item (canonical JSON, in order), the evaluators' options and prompts and the agent's source
file, and reads the git commit from the repository's files; then one short write to the store.

Prints, for datasets of small QA items (an `id`, an input of ~80 characters, an expected output), the
time `evaluation_identity` takes (median of rounds) and per item, and what storing it adds to the write
that starts the run (`Store.start_run` with and without the identity, the same transaction; median of
rounds).

    .venv/bin/python benchmarks/identity.py                 # 1,000 / 10,000 / 100,000 items
    .venv/bin/python benchmarks/identity.py --items 1000000 --rounds 3
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from cobalt_lib import Dataset, Evaluator, experiment
from cobalt_lib.run._identity import evaluation_identity
from cobalt_lib.store import Store

ROOT = Path(__file__).resolve().parent.parent


def agent(ctx: object) -> str:
    return "answer"


def measure(items: int, rounds: int) -> tuple[float, float]:
    data = Dataset([{"id": f"q{i}", "input": f"What is the capital of country number {i}? Answer in one word.",
                     "expected_output": f"city {i}"} for i in range(items)])
    exp = experiment("bench-identity", data, agent, evaluators=[
        Evaluator(name="relevance", prompt="Rate {{output}} for {{input}} from 0 to 1."),
        Evaluator(name="exact", type="exact-match")])
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        identity = evaluation_identity(exp, exp.evaluators, {}, ROOT)
        times.append(time.perf_counter() - start)
    dumped = identity.model_dump(mode="json")
    with tempfile.TemporaryDirectory() as directory:
        store = Store(Path(directory) / "cobalt.duckdb")
        store.start_run(_row("warm-up"))  # the schema is made once per store file
        plain, with_identity = [], []
        for n in range(rounds):
            start = time.perf_counter()
            store.start_run(_row(f"plain-{n}"))
            plain.append(time.perf_counter() - start)
            start = time.perf_counter()
            store.start_run(_row(f"ident-{n}"), identity=dumped)
            with_identity.append(time.perf_counter() - start)
    return statistics.median(times), statistics.median(with_identity) - statistics.median(plain)


def _row(run_id: str) -> dict[str, object]:
    return {"run_id": run_id, "experiment": "bench-identity", "started_at": "2026-01-01T00:00:00+00:00",
            "tags": [], "config": {}}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--items", type=int, nargs="*", default=[1_000, 10_000, 100_000])
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    print(f"{'items':>10}  {'identity':>10}  {'per item':>10}  {'+ start_run':>11}")
    for count in args.items:
        took, stored = measure(count, args.rounds)
        print(f"{count:>10,}  {took * 1000:>8.1f}ms  {took / count * 1e6:>8.2f}µs  {stored * 1000:>+9.1f}ms")


if __name__ == "__main__":
    main()
