"""`cobalt compare` and the pull request comment of two large runs: peak RSS and CPU (issue 35).

A temporary project runs an experiment of `--items` items twice (`cobalt run`, recording off; inputs of
about 300 characters, an `exact-match` and a `function` evaluator; the second run answers a fifth of
the items differently, and the first is tagged `base`); then, each as a whole process,
`cobalt compare A B` and `cobalt ci comment --run B --baseline-tag base --dry-run`, with their peak RSS
(getrusage of the child) and CPU. `--before DIR` runs both commands a second time with the checkout
in DIR on `sys.path` (a `git worktree` of an older commit), on the same store.

    .venv/bin/python benchmarks/compare.py --items 100000
    .venv/bin/python benchmarks/compare.py --items 100000 --before /tmp/old
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

EXPERIMENT = '''
import os
from cobalt_lib import Dataset, Evaluator, experiment

PAD = "lorem ipsum dolor sit amet " * 10
SHIFT = int(os.environ.get("BENCH_SHIFT", "0"))
data = Dataset([{{"input": f"question {{i}} {{PAD}}", "expected_output": f"answer {{i % 7}}"}} for i in range({n})])


@experiment("bench", data, evaluators=[Evaluator(name="exact", type="exact-match"),
                                       Evaluator(name="half", type="function", fn=lambda ctx: 0.5)],
            concurrency=50)
async def bench(ctx):
    return f"answer {{(ctx.index + (SHIFT if ctx.index % 5 == 0 else 0)) % 7}}"
'''

#: `cobalt` as a process that says its own peak RSS on the way out (getrusage of the children keeps only
#: the largest so far).
ENTRY = ("import atexit, resource, sys; atexit.register(lambda: sys.stderr.write("
         "f'\\nMAXRSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss}\\n')); "
         "from cobalt_lib._entry import main; sys.argv[0] = 'cobalt'; main()")


def make_runs(root: Path, n: int) -> list[str]:
    (root / "experiments").mkdir(parents=True)
    (root / "experiments" / "bench.cobalt.py").write_text(EXPERIMENT.format(n=n))
    (root / "cobalt.toml").write_text('[cache]\nenabled = false\n[dagster]\nrecord = "off"\n')
    cobalt = str(Path(sys.executable).parent / "cobalt")
    for shift, tags in ((0, ["--add-tag", "base"]), (1, [])):
        subprocess.run([cobalt, "run", "experiments/bench.cobalt.py", *tags], cwd=root, check=False,
                       capture_output=True, env={**os.environ, "BENCH_SHIFT": str(shift)})
    sys.path.insert(0, str(ROOT))
    from cobalt_lib import Store, load_config

    return [r["run_id"] for r in reversed(Store.for_config(load_config(root)).runs())]


def measure(root: Path, checkout: Path, args: list[str]) -> tuple[float, float, float, int]:
    """Wall s, CPU s and peak RSS MB of `cobalt ARGS` as a process of its own, and its exit code."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    env = {**os.environ, "PYTHONPATH": str(checkout)}
    env.pop("GITHUB_EVENT_PATH", None)
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", ENTRY, *args], cwd=root, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode not in (0, 1):
        raise SystemExit(f"cobalt {' '.join(args)} failed:\n{done.stderr[-3000:]}")
    cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    rss = next(int(line.split()[1]) for line in reversed(done.stderr.splitlines()) if line.startswith("MAXRSS"))
    return wall, cpu, rss / 1024, done.returncode


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--items", type=int, default=100_000)
    parser.add_argument("--before", type=Path, help="an older checkout to run the same commands with")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="cobalt-compare-") as tmp:
        root = Path(tmp) / "project"
        run_a, run_b = make_runs(root, args.items)
        print(f"two runs of {args.items:,} items: {run_a}, {run_b}\n")
        print("| command | code | load | wall s | CPU s | peak RSS MB |")
        print("|---|---|---|---|---|---|")
        commands = {"cobalt compare A B": ["compare", run_a, run_b],
                    "cobalt ci comment --dry-run": ["ci", "comment", "--run", run_b, "--baseline-tag", "base",
                                                    "--dry-run"]}
        sides = [(f"before ({args.before.name})", args.before)] if args.before else []
        sides.append(("this checkout", ROOT))
        for label, checkout in sides:
            for name, command in commands.items():
                load = os.getloadavg()[0]
                wall, cpu, rss, _ = measure(root, checkout, command)
                print(f"| {name} | {label} | {load:.1f} | {wall:.1f} | {cpu:.1f} | {rss:.0f} |", flush=True)


if __name__ == "__main__":
    main()
