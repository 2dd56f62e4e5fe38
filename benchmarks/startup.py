"""Startup cost, as a user feels it: the wall time of `cobalt --help` and of `python -c "import cobalt_lib"`.

Each command runs as a fresh process, `--warmups` times unmeasured (to warm the OS file cache and the
`.pyc` files), then `--runs` times measured from spawn to exit (wall time, and the child's CPU time,
which other load on a shared machine inflates less). Also: how many modules each loads
(`len(sys.modules)` at exit), and the ten imports with the largest cumulative time under
`python -X importtime -c "import cobalt_lib"` (median over `--importtime-runs` runs).

    .venv/bin/python benchmarks/startup.py                 # 20 runs after 2 warm-ups
    .venv/bin/python benchmarks/startup.py --runs 50

The console script is the one next to the interpreter running this file (`.venv/bin/cobalt`). The
commands run from an empty temporary directory, so no project configuration is picked up.
"""

from __future__ import annotations

import argparse
import math
import os
import platform
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from dataclasses import dataclass
from datetime import date
from pathlib import Path

BIN = Path(sys.executable).parent
TARGET_HELP_S = 0.5

#: Counts the modules a command has loaded when it exits, on stderr: the console script's own code path
#: (`from cobalt_lib.cli import main; sys.exit(main())`), with `--help`.
COUNT_HELP = ("import atexit, sys; atexit.register(lambda: print('MODULES', len(sys.modules), file=sys.stderr)); "
              "sys.argv = ['cobalt', '--help']; from cobalt_lib.cli import main; sys.exit(main())")
COUNT_IMPORT = "import sys, cobalt_lib; print('MODULES', len(sys.modules), file=sys.stderr)"
COUNT_BARE = "import sys; print('MODULES', len(sys.modules), file=sys.stderr)"


@dataclass
class Timing:
    label: str
    command: list[str]
    module_count: int
    samples_ms: list[float]
    cpu_ms: list[float]

    @property
    def median(self) -> float:
        return statistics.median(self.samples_ms)

    @property
    def p90(self) -> float:
        ordered = sorted(self.samples_ms)
        return ordered[math.ceil(0.9 * len(ordered)) - 1]  # nearest rank

    @property
    def min(self) -> float:
        return min(self.samples_ms)


def _children_cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run_once(command: list[str], cwd: str) -> tuple[float, float]:
    """Wall ms from spawn to exit, and the child's CPU ms (user + system): the runs are sequential, so the
    growth of RUSAGE_CHILDREN is this child's. CPU time is what other load on the machine inflates least."""
    cpu = _children_cpu_s()
    start = time.perf_counter()
    subprocess.run(command, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    return (time.perf_counter() - start) * 1000, (_children_cpu_s() - cpu) * 1000


def module_count(code: str, cwd: str) -> int:
    result = subprocess.run([sys.executable, "-c", code], cwd=cwd, capture_output=True, text=True, check=False)
    for line in result.stderr.splitlines():
        if line.startswith("MODULES "):
            return int(line.split()[1])
    raise RuntimeError(f"no module count from {code!r}:\n{result.stderr}")


def measure(label: str, command: list[str], count_code: str, runs: int, warmups: int, cwd: str) -> Timing:
    for _ in range(warmups):
        run_once(command, cwd)
    samples = [run_once(command, cwd) for _ in range(runs)]
    return Timing(label, command, module_count(count_code, cwd), [wall for wall, _ in samples],
                  [cpu for _, cpu in samples])


def importtime(runs: int, cwd: str) -> list[tuple[str, float, float]]:
    """(module, median self ms, median cumulative ms) under `-X importtime -c "import cobalt_lib"`."""
    own: dict[str, list[float]] = defaultdict(list)
    cumulative: dict[str, list[float]] = defaultdict(list)
    for _ in range(runs):
        result = subprocess.run([sys.executable, "-X", "importtime", "-c", "import cobalt_lib"], cwd=cwd,
                                capture_output=True, text=True, check=True)
        for line in result.stderr.splitlines():
            fields = line.removeprefix("import time:").split("|")
            if not line.startswith("import time:") or len(fields) != 3 or not fields[0].strip().isdigit():
                continue
            name = fields[2].strip()
            own[name].append(int(fields[0]) / 1000)
            cumulative[name].append(int(fields[1]) / 1000)
    rows = [(name, statistics.median(own[name]), statistics.median(values)) for name, values in cumulative.items()]
    return sorted(rows, key=lambda row: row[2], reverse=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--warmups", type=int, default=2)
    parser.add_argument("--importtime-runs", type=int, default=5)
    args = parser.parse_args()

    load_before = os.getloadavg()[0]
    cobalt = BIN / "cobalt"
    if not cobalt.exists():
        sys.exit(f"no console script at {cobalt}: install the project into this interpreter's environment")
    with tempfile.TemporaryDirectory() as cwd:
        timings = [
            measure("`cobalt --help`", [str(cobalt), "--help"], COUNT_HELP, args.runs, args.warmups, cwd),
            measure('`python -c "import cobalt_lib"`', [sys.executable, "-c", "import cobalt_lib"], COUNT_IMPORT,
                    args.runs, args.warmups, cwd),
            measure('`python -c "pass"` (interpreter floor)', [sys.executable, "-c", "pass"], COUNT_BARE,
                    args.runs, args.warmups, cwd),
        ]
        imports = importtime(args.importtime_runs, cwd)
    load_after = os.getloadavg()[0]

    print(f"{date.today().isoformat()}, {os.cpu_count()} cores ({platform.machine()}), "
          f"Python {platform.python_version()}, {args.runs} runs after {args.warmups} warm-ups, "
          f"1-min load average {load_before:.2f} before, {load_after:.2f} after\n")
    print("| command | median ms | p90 ms | min ms | CPU ms (median) | modules loaded |")
    print("|---|---|---|---|---|---|")
    for t in timings:
        print(f"| {t.label} | {t.median:.0f} | {t.p90:.0f} | {t.min:.0f} | {statistics.median(t.cpu_ms):.0f} "
              f"| {t.module_count} |")
    help_s = timings[0].median / 1000
    verdict = "met" if help_s < TARGET_HELP_S else "**missed**"
    print(f"\nTarget `cobalt --help` < {TARGET_HELP_S} s: median {help_s:.3f} s, p90 {timings[0].p90 / 1000:.3f} s: "
          f"{verdict}.\n")
    print(f'Top 10 cumulative imports, `python -X importtime -c "import cobalt_lib"` '
          f"(median of {args.importtime_runs} runs):\n")
    print("| module | cumulative ms | self ms |")
    print("|---|---|---|")
    for name, own_ms, cumulative_ms in imports[:10]:
        print(f"| `{name}` | {cumulative_ms:.1f} | {own_ms:.1f} |")


if __name__ == "__main__":
    main()
