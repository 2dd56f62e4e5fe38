"""The fixed cost of a library run, this checkout against older ones, in one sitting (issue 35).

`overhead.py`'s cobalt child (N items, an agent call and a judge call each, at most C in flight, against
`tests/fakellm.py` at 10 ms a call) in a fresh process per run, the checkouts interleaved round by round:
the whole process's CPU (user + system, imports and exit included) and the run's own CPU. With
`--imports`, one more run of each under `python -X importtime`: the modules this checkout imports that
the first older one does not, grouped by package, with their import time (self, median of 3).

Older checkouts: `git worktree add --detach /tmp/old <commit>` (imported through PYTHONPATH). Run it with
bytecode caching on (`env -u PYTHONDONTWRITEBYTECODE`): with PYTHONDONTWRITEBYTECODE=1 every process
compiles every module it imports from source, which is itself most of a small run's fixed cost.

    env -u PYTHONDONTWRITEBYTECODE .venv/bin/python benchmarks/fixed_cost.py --n 400 --rounds 3 /tmp/old
    env -u PYTHONDONTWRITEBYTECODE .venv/bin/python benchmarks/fixed_cost.py --n 2 --rounds 6 --imports /tmp/old
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OVERHEAD = ROOT / "benchmarks" / "overhead.py"


def child(port: int, n: int, c: int, pythonpath: str, *, importtime: bool = False) -> tuple[float, float, str]:
    env = {**os.environ, "OPENAI_API_KEY": "sk-bench"}
    if pythonpath:
        env["PYTHONPATH"] = pythonpath
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    cmd = [sys.executable, *(["-X", "importtime"] if importtime else []), str(OVERHEAD), "--child", "cobalt",
           "--port", str(port), "--n", str(n), "--concurrency", str(c)]
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, cwd=ROOT, check=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return cpu, float(json.loads(done.stdout.strip().splitlines()[-1])["run_cpu_s"]), done.stderr


def import_times(stderr: str) -> dict[str, float]:
    found = {}
    for line in stderr.splitlines():
        if m := re.match(r"import time:\s+(\d+) \|\s+\d+ \|\s*(\S+)", line):
            found[m.group(2)] = int(m.group(1)) / 1e6
    return found


def package(module: str) -> str:
    parts = module.split(".")
    return ".".join(parts[:2]) if parts[0] == "cobalt_lib" else parts[0]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("older", nargs="+", help="checkouts to pair against (directories holding cobalt_lib)")
    parser.add_argument("--n", type=int, default=400)
    parser.add_argument("--concurrency", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--imports", action="store_true", help="also compare what each run imports")
    args = parser.parse_args()
    server = subprocess.Popen([sys.executable, str(ROOT / "tests" / "fakellm.py"), "--latency", "0.01"],
                              stdout=subprocess.PIPE, text=True)
    try:
        assert server.stdout is not None
        port = int(server.stdout.readline().split()[1])
        sides = ["", *args.older]
        got: dict[str, list[tuple[float, float]]] = {side: [] for side in sides}
        for _ in range(args.rounds):
            for side in sides:
                cpu, run_cpu, _ = child(port, args.n, args.concurrency, side)
                got[side].append((cpu, run_cpu))
        print(f"N={args.n} C={args.concurrency}, {args.rounds} rounds interleaved, "
              f"load {os.getloadavg()[0]:.1f} at the end\n")
        print("| code | process CPU s (median) | each round | run CPU s (median) | outside the run s |")
        print("|---|---|---|---|---|")
        for side in sides:
            total = statistics.median(c for c, _ in got[side])
            run = statistics.median(r for _, r in got[side])
            rounds = ", ".join(f"{c:.2f}" for c, _ in got[side])
            print(f"| {side or 'this checkout'} | {total:.3f} | {rounds} | {run:.3f} | {total - run:.3f} |")
        if args.imports:
            mine = [import_times(child(port, 2, 2, "", importtime=True)[2]) for _ in range(3)]
            theirs = set(import_times(child(port, 2, 2, args.older[0], importtime=True)[2]))
            extra: dict[str, float] = {}
            for module in mine[0]:
                if module not in theirs:
                    key = package(module)
                    extra[key] = extra.get(key, 0.0) + statistics.median(m.get(module, 0.0) for m in mine)
            print(f"\nimported here and not by {args.older[0]} (import time, self, median of 3; "
                  f"load {os.getloadavg()[0]:.1f}):\n")
            for key, seconds in sorted(extra.items(), key=lambda kv: -kv[1]):
                print(f"- {key}: {seconds * 1000:.1f} ms")
            print(f"- in all: {sum(extra.values()) * 1000:.1f} ms")
    finally:
        server.terminate()
        server.wait()


if __name__ == "__main__":
    main()
