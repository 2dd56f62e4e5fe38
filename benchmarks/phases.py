"""Where a cobalt run's wall time goes besides its LLM calls, phase by phase (issue 14).

One child process like `overhead.py`'s cobalt runner (N items, an agent call and a judge call each,
at most C calls in flight against the loopback server `tests/fakellm.py`), with timestamps taken
inside it: cobalt's imports, building the experiment, the run's start up to its first agent call,
the last agent call's end up to `finish`, `finish` itself, and the interpreter's exit.

    .venv/bin/python benchmarks/phases.py                  # N=5000, C=200, two runs
    .venv/bin/python benchmarks/phases.py --n 1000 --concurrency 20 --runs 3
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def child(port: int, n: int, c: int) -> None:
    t0 = time.perf_counter()
    sys.path.insert(0, str(HERE))
    import aiohttp  # noqa: F401
    import overhead as ob  # aiohttp and the workload, as overhead.py's cobalt runner has them

    t1 = time.perf_counter()
    import cobalt_lib.run._execute as execute
    from cobalt_lib._aio import run

    t2 = time.perf_counter()
    agent, close = ob.make_agent(port)
    first: list[float] = []
    last = [0.0]

    async def timed_agent(ctx: object) -> str:
        if not first:
            first.append(time.perf_counter())
        answer = await agent(ctx)
        last[0] = time.perf_counter()
        return answer

    exp = ob.cobalt_experiment("phases", n, timed_agent, c // 2, c - c // 2)
    marks: list[float] = []
    finish = execute.finish

    def timed_finish(*args: object, **kwargs: object) -> object:
        marks.append(time.perf_counter())
        try:
            return finish(*args, **kwargs)  # type: ignore[arg-type]
        finally:
            marks.append(time.perf_counter())

    execute.finish = timed_finish  # type: ignore[assignment]

    async def main(config: object) -> object:
        try:
            return await exp.arun(config=config)
        finally:
            await close()

    import tempfile

    with tempfile.TemporaryDirectory() as out:
        config = ob.cobalt_config(port, out, cache=False)
        t3 = time.perf_counter()
        run(main(config))
        t4 = time.perf_counter()
    print(f"aiohttp and the workload {t1 - t0:.3f} s | cobalt's imports {t2 - t1:.3f} | experiment {t3 - t2:.3f} | "
          f"start to the first agent call {first[0] - t3:.3f} | last agent call to finish {marks[0] - last[0]:.3f} | "
          f"finish {marks[1] - marks[0]:.3f} | run {t4 - t3:.3f}", flush=True)
    print(f"END {time.time()}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--n", type=int, default=5000)
    parser.add_argument("--concurrency", type=int, default=200)
    parser.add_argument("--runs", type=int, default=2)
    parser.add_argument("--child", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child, args.n, args.concurrency)
        return
    sys.path.insert(0, str(HERE))
    import overhead as ob

    with ob.fake_llm(0.1) as port:
        for _ in range(args.runs):
            started = time.perf_counter()
            done = subprocess.run([sys.executable, __file__, "--child", str(port), "--n", str(args.n),
                                   "--concurrency", str(args.concurrency)], capture_output=True, text=True,
                                  env={**os.environ, "OPENAI_API_KEY": "sk-bench"}, check=True)
            ended = time.time()
            wall = time.perf_counter() - started
            lines = done.stdout.splitlines()
            exit_s = ended - float(lines[-1].split()[1])
            print(f"{lines[0]} | exit {exit_s:.3f} | process {wall:.3f}")


if __name__ == "__main__":
    main()
