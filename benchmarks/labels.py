"""What labelling and calibration cost on a big run: a 20,000-item run (two evaluators) made by the library
path, 500 labels set through the same function the pages' POST calls, then the reads the run page makes
for labelling (`/labels`: every label of the run's items; `/queue`: the labelling order and progress), one
label write, and `cobalt calibrate` (1,000 bootstrap resamples) over the 500 labelled items.

    .venv/bin/python benchmarks/labels.py                  # N=20000
    .venv/bin/python benchmarks/labels.py --items 5000 --repeats 3
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any


def timed(action: Any, repeats: int) -> list[float]:
    """Seconds `action` takes, `repeats` times after one warm-up."""
    times = []
    for i in range(repeats + 1):
        started = time.perf_counter()
        action()
        if i:
            times.append(time.perf_counter() - started)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=20_000)
    parser.add_argument("--labels", type=int, default=500)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from pages import make_run

    from cobalt_lib.grading._calibrate import calibrate_evaluator
    from cobalt_lib.grading._labels import label_queue, run_labels, set_label

    with tempfile.TemporaryDirectory() as tmp:
        os.chdir(tmp)
        config, run_id = make_run(Path(tmp), args.items)
        step = max(1, args.items // args.labels)
        started = time.perf_counter()
        for n, index in enumerate(range(0, args.items, step)[: args.labels]):
            set_label(config, run_id, index, "length", (n % 5) / 4, note="bench")  # type: ignore[arg-type]
        per_label = (time.perf_counter() - started) / args.labels
        results = {
            "GET /labels (every label of the run)": timed(lambda: run_labels(config, run_id), args.repeats),  # type: ignore[arg-type]
            "GET /queue (order and progress)": timed(lambda: label_queue(config, run_id, "length"), args.repeats),  # type: ignore[arg-type]
            "cobalt calibrate (1,000 resamples)": timed(
                lambda: calibrate_evaluator(config, "big", "length", save=False), args.repeats),  # type: ignore[arg-type]
        }
        print(f"{platform.python_implementation()} {platform.python_version()}, {os.cpu_count()} cores; "
              f"{args.items:,} items, {args.labels} labels")
        print(f"set one label (POST's work): {per_label * 1000:.1f} ms mean over {args.labels}")
        for name, times in results.items():
            print(f"{name}: median {statistics.median(times) * 1000:.0f} ms, max {max(times) * 1000:.0f} ms "
                  f"over {len(times)}")


if __name__ == "__main__":
    main()
