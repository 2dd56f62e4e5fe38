"""What cobalt's pytest plugin costs a pytest start where it is off (every pytest run in an environment with
cobalt installed), and what `--cobalt` adds to collecting a project's experiments.

Each command is `python -m pytest --collect-only -q -p no:cacheprovider` in a temporary project holding one
ordinary test (and, for the last rows, one experiment file of two experiments), run `--warmups` times
unmeasured, then `--runs` times measured from spawn to exit: wall time and the child's CPU time (which other
load on a shared machine inflates less). Also how many of cobalt's modules each start loaded.

    .venv/bin/python benchmarks/pytest_startup.py              # 15 runs after 2 warm-ups
    .venv/bin/python benchmarks/pytest_startup.py --runs 40
"""

from __future__ import annotations

import argparse
import os
import platform
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import date
from pathlib import Path

EXPERIMENT = '''
from cobalt_lib import Dataset, Evaluator, experiment

data = Dataset([{"id": f"q{i}", "input": f"q{i}", "expected_output": f"a{i}"} for i in range(20)])
for name in ("first", "second"):
    experiment(name, data, lambda ctx: ctx.item["expected_output"],
               evaluators=[Evaluator(name="exact", type="exact-match")])
'''

#: Prints how many `cobalt*` modules the pytest start loaded.
COUNT = ("import sys, pytest; pytest.main(sys.argv[1:]); "
         "print('MODULES', sum(m.startswith('cobalt') for m in sys.modules), file=sys.stderr)")


def _children_cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run_once(args: list[str], cwd: Path) -> tuple[float, float]:
    cpu = _children_cpu_s()
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "pytest", *args], cwd=cwd, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL, check=True)
    return (time.perf_counter() - start) * 1000, (_children_cpu_s() - cpu) * 1000


def cobalt_modules(args: list[str], cwd: Path) -> int:
    result = subprocess.run([sys.executable, "-c", COUNT, *args], cwd=cwd, capture_output=True, text=True,
                            check=False)
    return next(int(line.split()[1]) for line in result.stderr.splitlines() if line.startswith("MODULES "))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--warmups", type=int, default=2)
    options = parser.parse_args()

    base = ["--collect-only", "-q", "-p", "no:cacheprovider"]
    cases = [("plugin off (default)", base), ("plugin not loaded (`-p no:cobalt`)", [*base, "-p", "no:cobalt"]),
             ("`--cobalt`, experiments collected", [*base, "--cobalt"])]
    load_before = os.getloadavg()[0]
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "test_unit.py").write_text("def test_one():\n    pass\n", encoding="utf-8")
        (root / "experiments").mkdir()
        (root / "experiments" / "qa.cobalt.py").write_text(EXPERIMENT, encoding="utf-8")
        for label, args in cases:
            for _ in range(options.warmups):
                run_once(args, root)
            samples = [run_once(args, root) for _ in range(options.runs)]
            rows.append((label, statistics.median(s[0] for s in samples), min(s[0] for s in samples),
                         statistics.median(s[1] for s in samples), cobalt_modules(args, root)))
    load_after = os.getloadavg()[0]

    print(f"{date.today().isoformat()}, {os.cpu_count()} cores ({platform.machine()}), "
          f"Python {platform.python_version()}, {options.runs} runs after {options.warmups} warm-ups, "
          f"1-min load average {load_before:.2f} before, {load_after:.2f} after\n")
    print("| `pytest --collect-only` | median ms | min ms | CPU ms (median) | cobalt modules loaded |")
    print("|---|---|---|---|---|")
    for label, median, fastest, cpu, modules in rows:
        print(f"| {label} | {median:.0f} | {fastest:.0f} | {cpu:.0f} | {modules} |")
    off, absent = rows[0], rows[1]
    print(f"\nthe plugin, off, costs {off[3] - absent[3]:+.0f} ms CPU (median) per pytest start.")


if __name__ == "__main__":
    main()
