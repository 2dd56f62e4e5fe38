"""What running variants as one group costs (issue 28): the same agent calls and judge calls as one run
of N items, or as a group of 4 variants of N/4 items each (one shared agent limit, one judge and cache).

Against the loopback LLM server (`tests/fakellm.py`, 20 ms per answer): an async agent that sleeps 20 ms
and an LLM judge on every output, concurrency 20. Each variant answers differently, so the group makes
as many judge calls as the single run; with `--alike` two of the four variants answer alike, and the
group's one judge cache makes a quarter fewer calls. Prints wall time, CPU time and judge calls.

    .venv/bin/python benchmarks/variants.py                 # N = 800, 3 rounds
    .venv/bin/python benchmarks/variants.py --items 2000 --alike
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from fakellm import FakeLLM  # noqa: E402

from cobalt_lib import Dataset, Evaluator, experiment, load_config  # noqa: E402


def _agent(alike: bool):  # type: ignore[no-untyped-def]
    async def agent(ctx):  # type: ignore[no-untyped-def]
        await asyncio.sleep(0.02)
        flavour = ctx.variant.get("model", "single")
        if alike and flavour == "b":
            flavour = "a"  # variant b answers as variant a does: its judge calls come from the cache
        return f"answer {ctx.index} by {flavour} SCORE=0.7"
    return agent


def one_round(items: int, alike: bool, llm: FakeLLM) -> dict[str, tuple[float, float, int]]:
    figures = {}
    for shape in ("single run", "group of 4"):
        with tempfile.TemporaryDirectory() as tmp:
            root = Path(tmp)
            (root / "cobalt.toml").write_text(f'concurrency = 20\n[judge]\nprovider = "openai"\n'
                                              f'model = "gpt-4o-mini"\nbase_url = "{llm.openai_url}"\n'
                                              '[dagster]\nrecord = "off"\n')
            config = load_config(root)
            evaluators = [Evaluator(name="quality", prompt="Rate: {{output}}")]
            llm.reset()
            started, cpu = time.perf_counter(), time.process_time()
            if shape == "single run":
                data = Dataset([{"input": f"q{i}"} for i in range(items)])
                experiment("bench", data, _agent(alike), evaluators=evaluators).run(config=config)
            else:
                data = Dataset([{"input": f"q{i}"} for i in range(items // 4)])
                grouped = experiment("bench", data, _agent(alike), evaluators=evaluators,
                                     variants={"model": ["a", "b", "c", "d"]})
                grouped.run_variants(config=config)
            figures[shape] = (time.perf_counter() - started, time.process_time() - cpu, llm.count())
    return figures


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--items", type=int, default=800, help="agent calls in all (default 800)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--alike", action="store_true", help="two of the four variants answer alike")
    args = parser.parse_args()
    os.environ.pop("OPENAI_API_KEY", None)
    llm = FakeLLM(latency=0.02).start()
    try:
        rounds = [one_round(args.items, args.alike, llm) for _ in range(args.rounds)]
    finally:
        llm.stop()
    print(f"{args.items} agent calls (20 ms each), one judge call per distinct output (20 ms), concurrency 20; "
          f"median of {args.rounds} rounds")
    for shape in ("single run", "group of 4"):
        wall = statistics.median(r[shape][0] for r in rounds)
        cpu = statistics.median(r[shape][1] for r in rounds)
        calls = rounds[-1][shape][2]
        print(f"{shape:<11}  wall {wall:6.2f} s  cpu {cpu:6.2f} s  judge calls {calls}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
