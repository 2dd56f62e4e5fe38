"""Memory of the kappa bootstrap (calibration) at many samples (issue 35).

`kappa_interval(groups, resamples=1000)` over S samples of one to three iterations each, in a fresh
process per S: the peak of the bootstrap's own allocations (tracemalloc, which numpy reports to), and
the process's peak RSS before and after the call (resource.getrusage). The random stream, hence the
interval, is the same as before the bootstrap was chunked (tests/calibration/test_metrics.py pins it).

    .venv/bin/python benchmarks/kappa.py                       # S = 500, 5000, 20000
    .venv/bin/python benchmarks/kappa.py --samples 5000 --before /tmp/old   # also an older checkout's code
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import subprocess
import sys
import time
import tracemalloc
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def groups(samples: int) -> list[list[tuple[int, int]]]:
    rng = random.Random(1)
    truths = [rng.randint(-3, 3) for _ in range(samples)]
    return [[(t, max(-3, min(3, t + rng.choice((-1, 0, 0, 1))))) for _ in range(rng.choice((1, 2, 3)))]
            for t in truths]


def child(samples: int) -> None:
    import numpy  # noqa: F401  (imported before the baseline: its own footprint is not the bootstrap's)

    from cobalt_lib.grading.calibration import kappa_interval

    data = groups(samples)
    rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    tracemalloc.start()
    cpu = time.process_time()
    interval = kappa_interval(data, resamples=1000, seed=0)
    cpu = time.process_time() - cpu
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    print(json.dumps({"samples": samples, "interval": interval, "traced_peak_mb": peak / 2**20,
                      "rss_before_mb": rss_before, "cpu_s": cpu,
                      "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                      "code": str(Path(sys.modules["cobalt_lib"].__file__ or "").parent)}))


def run(samples: int, before: str | None) -> dict[str, object]:
    env = dict(os.environ)
    if before:
        env["PYTHONPATH"] = before
    out = subprocess.run([sys.executable, __file__, "--child", str(samples)], env=env, cwd=ROOT,
                         capture_output=True, text=True, check=True).stdout
    result: dict[str, object] = json.loads(out.strip().splitlines()[-1])
    result["load"] = os.getloadavg()[0]
    result["which"] = "before" if before else "this checkout"
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--samples", default="500,5000,20000", help="comma-separated sample counts")
    parser.add_argument("--before", metavar="DIR", help="also measure cobalt_lib imported from DIR")
    parser.add_argument("--child", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child)
        return
    print("| samples | code | load | bootstrap's peak allocation MB | RSS before MB | peak RSS MB | CPU s | interval |")
    print("|---|---|---|---|---|---|---|---|")
    for samples in (int(s) for s in args.samples.split(",")):
        for before in ([None, args.before] if args.before else [None]):
            r = run(samples, before)
            low, high = r["interval"]  # type: ignore[misc]
            print(f"| {samples} | {r['which']} | {r['load']:.2f} | {r['traced_peak_mb']:.1f} | "
                  f"{r['rss_before_mb']:.0f} | {r['peak_rss_mb']:.0f} | {r['cpu_s']:.2f} | {low:.6f}..{high:.6f} |",
                  flush=True)


if __name__ == "__main__":
    main()
