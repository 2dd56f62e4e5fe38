"""Recording a finished library run in Dagster, peak RSS and CPU against the run's size (issue 35).

A temporary project runs an experiment of `--items` items (an agent that answers at once, an
`exact-match` and a `function` evaluator, inputs of about 300 characters) with `cobalt run` (recording
off); then a fresh process records the run as `[dagster] record = "inline"` and the record sensor's
run do (`cobalt_dagster.record_runs`: the experiment's job executed in process, four assets and the
gate checks), and prints its peak RSS (getrusage) and CPU. `--before DIR` records the same run a
second time with the checkout in DIR on `sys.path` (a `git worktree` of an older commit), in a
project of its own.

    .venv/bin/python benchmarks/recording.py --items 1000,100000
    .venv/bin/python benchmarks/recording.py --items 100000 --before /tmp/old
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

EXPERIMENT = '''
from cobalt_lib import Dataset, Evaluator, experiment

PAD = "lorem ipsum dolor sit amet " * 10
data = Dataset([{{"input": f"question {{i}} {{PAD}}", "expected_output": f"answer {{i % 7}}"}} for i in range({n})])


@experiment("bench", data, evaluators=[Evaluator(name="exact", type="exact-match"),
                                       Evaluator(name="half", type="function", fn=lambda ctx: 0.5)],
            concurrency=50)
async def bench(ctx):
    return f"answer {{ctx.index % 5}}"
'''

RECORD = '''
import json, resource, sys, time
from pathlib import Path
import cobalt_dagster
from cobalt_lib import Store, load_config
config = load_config(Path(sys.argv[1]))
run_id = Store.for_config(config).runs()[0]["run_id"]
started = time.perf_counter()
recorded = cobalt_dagster.record_runs([run_id], config=config)
usage = resource.getrusage(resource.RUSAGE_SELF)
print(json.dumps({"recorded": len(recorded), "wall": time.perf_counter() - started,
                  "cpu": usage.ru_utime + usage.ru_stime, "rss_mb": usage.ru_maxrss / 1024}))
'''


def make_run(root: Path, n: int) -> None:
    (root / "experiments").mkdir(parents=True)
    (root / "experiments" / "bench.cobalt.py").write_text(EXPERIMENT.format(n=n))
    (root / "cobalt.toml").write_text('[cache]\nenabled = false\n[dagster]\nrecord = "off"\n')
    subprocess.run([str(Path(sys.executable).parent / "cobalt"), "run", "experiments/bench.cobalt.py"], cwd=root,
                   check=False, capture_output=True)


def record(root: Path, checkout: Path) -> dict[str, float]:
    env = {**os.environ, "PYTHONPATH": str(checkout), "COBALT_DAGSTER_RECORD": "off"}
    done = subprocess.run([sys.executable, "-c", RECORD, str(root)], cwd=root, env=env, check=False,
                          capture_output=True, text=True)
    if done.returncode:
        raise SystemExit(f"recording failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--items", default="1000,100000")
    parser.add_argument("--before", type=Path, help="an older checkout to record the same run with")
    args = parser.parse_args()
    print("| items | code | load | results file MB | recorded | wall s | CPU s | peak RSS MB |")
    print("|---|---|---|---|---|---|---|---|")
    for n in (int(x) for x in args.items.split(",")):
        with tempfile.TemporaryDirectory(prefix="cobalt-record-") as tmp:
            root = Path(tmp) / "project"
            make_run(root, n)
            size = sum(p.stat().st_size for p in (root / ".cobalt" / "results").glob("*.json")) / 1e6
            sides = [("this checkout", ROOT, root)]
            if args.before is not None:
                other = Path(tmp) / "before"
                shutil.copytree(root, other, ignore=shutil.ignore_patterns("dagster"))
                sides.append((f"before ({args.before.name})", args.before, other))
            for label, checkout, project in sides:
                load = os.getloadavg()[0]
                got = record(project, checkout)
                print(f"| {n:,} | {label} | {load:.1f} | {size:.0f} | {got['recorded']} | {got['wall']:.1f} | "
                      f"{got['cpu']:.1f} | {got['rss_mb']:.0f} |", flush=True)


if __name__ == "__main__":
    main()
