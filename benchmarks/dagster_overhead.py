"""What a Dagster-tracked `cobalt run` costs over a library run (issue 14, target 2).

The 4-item offline experiment `support-bot` of `examples/dagster_project`, copied to a temporary
project: `cobalt run experiments/support_bot.cobalt.py` against the same with `--no-dagster`, each a
fresh process timed from spawn to exit (imports included), alternating so both see the same load.
One warm-up of each first (it creates and migrates the local Dagster instance and warms the OS file
cache); then `--runs` measured pairs. Prints the medians and the overhead (target: at most 1.0 s).

    .venv/bin/python benchmarks/dagster_overhead.py              # 7 pairs
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


def timed(project: Path, *extra: str) -> tuple[float, float]:
    """(wall seconds, the child's CPU seconds) of one `cobalt run` of support-bot."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run([COBALT, "run", "experiments/support_bot.cobalt.py", "--ci", *extra], cwd=project,
                          env=_env(), capture_output=True, text=True, check=False)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"cobalt run {' '.join(extra)} exited {done.returncode}:\n{done.stdout}\n{done.stderr}")
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def _env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k not in ("DAGSTER_HOME", "COBALT_PROJECT_DIR")}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--runs", type=int, default=7, help="measured pairs (default 7)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        project = Path(tmp) / "proj"
        shutil.copytree(EXAMPLE, project, ignore=shutil.ignore_patterns(".cobalt", "__pycache__"))
        timed(project)  # creates and migrates the instance: a one-off cost, not a run's
        timed(project, "--no-dagster")
        samples: dict[str, list[tuple[float, float]]] = {"dagster": [], "library": []}
        for _ in range(args.runs):
            samples["dagster"].append(timed(project))
            samples["library"].append(timed(project, "--no-dagster"))
    wall = {k: statistics.median(w for w, _ in v) for k, v in samples.items()}
    cpu = {k: statistics.median(c for _, c in v) for k, v in samples.items()}
    print(f"{args.runs} pairs, medians (wall s / CPU s):")
    print(f"  cobalt run (Dagster-tracked): {wall['dagster']:.2f} / {cpu['dagster']:.2f}")
    print(f"  cobalt run --no-dagster:      {wall['library']:.2f} / {cpu['library']:.2f}")
    overhead = wall["dagster"] - wall["library"]
    verdict = "met" if overhead <= TARGET_S else "MISSED"
    print(f"  Dagster overhead: {overhead:.2f} s wall, {cpu['dagster'] - cpu['library']:.2f} s CPU "
          f"(target <= {TARGET_S:.1f} s wall: {verdict})")
    pairs = sorted(d - lib for (d, _), (lib, _) in zip(samples["dagster"], samples["library"], strict=True))
    print(f"  overhead per pair: min {pairs[0]:.2f}, median {statistics.median(pairs):.2f}, max {pairs[-1]:.2f} s")


if __name__ == "__main__":
    main()
