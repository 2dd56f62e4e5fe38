"""What a Dagster-tracked `cobalt run` costs over a library run (issue 14, target 2), in process and
through the warm run worker (docs/worker.md).

The 4-item offline experiment `support-bot` of `examples/dagster_project`, copied to a temporary
project, three ways, each a fresh `cobalt` process timed from spawn to exit (imports included), in
turn so all see the same load:

- `in-process`: Dagster-tracked with the worker switched off (`COBALT_WORKER=off`), as before;
- `worker`: Dagster-tracked, handed to a worker started before timing (its one-off start is reported);
- `--no-dagster`: the plain library path.

One warm-up of each first (the first creates and migrates the local Dagster instance); then `--runs`
measured rounds. Prints the medians and both overheads against the target (at most 1.0 s). The
worker lives in a temporary socket directory of its own (COBALT_WORKER_DIR) and is stopped at the end.

    .venv/bin/python benchmarks/dagster_overhead.py              # 7 rounds
    .venv/bin/python benchmarks/dagster_overhead.py --runs 15

The console script is the one next to the interpreter running this file (`.venv/bin/cobalt`).
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "dagster_project"
COBALT = str(Path(sys.executable).parent / "cobalt")
TARGET_S = 1.0
#: name -> (extra arguments, extra environment)
MODES: dict[str, tuple[tuple[str, ...], dict[str, str]]] = {
    "in-process": ((), {"COBALT_WORKER": "off"}),
    "worker": ((), {}),
    "--no-dagster": (("--no-dagster",), {}),
}


def timed(project: Path, env: dict[str, str], *extra: str) -> tuple[float, float]:
    """(wall seconds, the child's CPU seconds) of one `cobalt run` of support-bot."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run([COBALT, "run", "experiments/support_bot.cobalt.py", "--ci", *extra], cwd=project,
                          env=env, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"cobalt run {' '.join(extra)} exited {done.returncode}:\n{done.stdout}\n{done.stderr}")
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def _env(worker_dir: Path, **extra: str) -> dict[str, str]:
    dropped = ("DAGSTER_HOME", "COBALT_PROJECT_DIR", "COBALT_WORKER", "COBALT_WORKER_DIR")
    return {**{k: v for k, v in os.environ.items() if k not in dropped}, "COBALT_WORKER_DIR": str(worker_dir),
            **extra}


def _cobalt(env: dict[str, str], *args: str) -> str:
    done = subprocess.run([COBALT, *args], env=env, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"cobalt {' '.join(args)} exited {done.returncode}:\n{done.stdout}\n{done.stderr}")
    return done.stdout.strip()


def _served(env: dict[str, str]) -> int:
    import json

    return sum(int(w["served"]) for w in json.loads(_cobalt(env, "worker", "status", "--json")) if w["matches"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--runs", type=int, default=7, help="measured rounds (default 7)")
    args = parser.parse_args()
    samples: dict[str, list[tuple[float, float]]] = {mode: [] for mode in MODES}
    worker_dir = Path(tempfile.mkdtemp(prefix="cobalt-bench-", dir="/tmp"))
    os.chmod(worker_dir, 0o700)
    base = _env(worker_dir)
    try:
        with tempfile.TemporaryDirectory() as tmp:
            project = Path(tmp) / "proj"
            shutil.copytree(EXAMPLE, project, ignore=shutil.ignore_patterns(".cobalt", "__pycache__"))
            started = time.perf_counter()
            print(_cobalt(base, "worker", "start"))
            start_cost = time.perf_counter() - started
            for extra, env in MODES.values():  # the first creates and migrates the instance: a one-off cost
                timed(project, {**base, **env}, *extra)
            served = _served(base)
            for _ in range(args.runs):
                for mode, (extra, env) in MODES.items():
                    samples[mode].append(timed(project, {**base, **env}, *extra))
            if _served(base) - served != args.runs:
                raise SystemExit("the worker did not serve every `worker` run: see `cobalt worker status`")
    finally:
        subprocess.run([COBALT, "worker", "stop"], env=base, capture_output=True, check=False)
        shutil.rmtree(worker_dir, ignore_errors=True)
    _report(samples, args.runs, start_cost)


def _report(samples: dict[str, list[tuple[float, float]]], runs: int, start_cost: float) -> None:
    wall = {k: statistics.median(w for w, _ in v) for k, v in samples.items()}
    cpu = {k: statistics.median(c for _, c in v) for k, v in samples.items()}
    print(f"{runs} rounds, load average {os.getloadavg()[0]:.2f}; medians (wall s / client CPU s):")
    for mode in MODES:
        print(f"  cobalt run ({mode}):{' ' * (14 - len(mode))}{wall[mode]:.2f} / {cpu[mode]:.2f}")
    print(f"  worker start (one-off, `cobalt worker start`, first for this fingerprint): {start_cost:.2f} s")
    library = samples["--no-dagster"]
    for mode in ("in-process", "worker"):
        overhead = wall[mode] - wall["--no-dagster"]
        verdict = "met" if overhead <= TARGET_S else "MISSED"
        pairs = sorted(d - lib for (d, _), (lib, _) in zip(samples[mode], library, strict=True))
        print(f"  Dagster overhead, {mode}: {overhead:.2f} s wall (target <= {TARGET_S:.1f} s: {verdict}); "
              f"per round min {pairs[0]:.2f}, median {statistics.median(pairs):.2f}, max {pairs[-1]:.2f} s")
    print("  (a worker run's CPU is spent in the worker's forked child, not in the client: compare wall times)")


if __name__ == "__main__":
    main()
