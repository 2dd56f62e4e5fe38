"""What Dagster costs a `cobalt run` (issue 21): each record mode against `--no-dagster`, the processes
left behind, and how soon the record sensor of `cobalt serve` records a finished run.

The 4-item offline experiment `support-bot` of `examples/dagster_project`, copied to a temporary
project, each way a fresh `cobalt` process timed from spawn to exit (imports included), in turn so
all see the same load:

- `default`: `[dagster] record = "daemon"`: the command does no Dagster work (target: within
  +0.3 s of `--no-dagster`);
- `inline`: `COBALT_DAGSTER_RECORD=inline`: the command records the run before it exits;
- `--no-dagster`: never recorded.

After every run the benchmark checks that no process of the run's session is left. Then, with
`--serve`, it starts `cobalt serve`, makes runs while it is up and prints how long each took from the
command's exit to its recording (the `dagster_runs` row; target: within 30 s).

    .venv/bin/python benchmarks/dagster_overhead.py              # 7 rounds
    .venv/bin/python benchmarks/dagster_overhead.py --runs 15 --serve 5

The console script is the one next to the interpreter running this file (`.venv/bin/cobalt`).
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "dagster_project"
COBALT = str(Path(sys.executable).parent / "cobalt")
TARGET_S = 0.3
RECORD_TARGET_S = 30.0
#: name -> (extra arguments, extra environment)
MODES: dict[str, tuple[tuple[str, ...], dict[str, str]]] = {
    "default": ((), {}),
    "inline": ((), {"COBALT_DAGSTER_RECORD": "inline"}),
    "--no-dagster": (("--no-dagster",), {}),
}


def _env(**extra: str) -> dict[str, str]:
    dropped = ("DAGSTER_HOME", "COBALT_PROJECT_DIR", "COBALT_DAGSTER_RECORD")
    return {**{k: v for k, v in os.environ.items() if k not in dropped}, **extra}


def timed(project: Path, env: dict[str, str], *extra: str) -> tuple[float, float]:
    """(wall seconds, the child's CPU seconds) of one `cobalt run` of support-bot; exits if a process of
    the run's session outlived it."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    proc = subprocess.Popen([COBALT, "run", "experiments/support_bot.cobalt.py", "--ci", *extra], cwd=project,
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    out, err = proc.communicate()
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        raise SystemExit(f"cobalt run {' '.join(extra)} exited {proc.returncode}:\n{out}\n{err}")
    try:
        os.killpg(proc.pid, 0)
    except ProcessLookupError:
        pass
    else:
        raise SystemExit(f"cobalt run {' '.join(extra)} left a process behind (session {proc.pid})")
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def overhead(project: Path, runs: int) -> None:
    for args, extra in MODES.values():  # warm-up: the first inline run creates the local instance
        timed(project, _env(**extra), *args)
    walls: dict[str, list[float]] = {name: [] for name in MODES}
    cpus: dict[str, list[float]] = {name: [] for name in MODES}
    for _ in range(runs):
        for name, (args, extra) in MODES.items():
            wall, cpu = timed(project, _env(**extra), *args)
            walls[name].append(wall)
            cpus[name].append(cpu)
    base = statistics.median(walls["--no-dagster"])
    print(f"{runs} rounds, medians (load {os.getloadavg()[0]:.2f}):")
    for name in MODES:
        wall, cpu = statistics.median(walls[name]), statistics.median(cpus[name])
        print(f"  {name:13s} wall {wall:.2f} s  CPU {cpu:.2f} s  over --no-dagster {wall - base:+.2f} s")
    extra = statistics.median(walls["default"]) - base
    verdict = "met" if extra <= TARGET_S else "MISSED"
    print(f"default over --no-dagster: {extra:+.2f} s (target <= +{TARGET_S} s): {verdict}")
    print("no process outlived any `cobalt run`")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def record_latency(project: Path, count: int) -> None:
    """Seconds from a `cobalt run`'s exit to its recording by the sensor of a running `cobalt serve`."""
    from cobalt_lib import Store, load_config

    store = Store.for_config(load_config(project))
    port = free_port()
    log = (project.parent / "serve.log").open("wb")
    serve = subprocess.Popen([COBALT, "serve", "--port", str(port), "--no-open"], cwd=project, env=_env(),
                             stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        started = time.perf_counter()
        while store.unrecorded_runs(["support-bot"]) or not store.runs():
            if time.perf_counter() - started > 180:
                raise SystemExit("cobalt serve recorded nothing in 180 s (see serve.log)")
            time.sleep(0.5)
        print(f"cobalt serve up; the runs made before it were recorded {time.perf_counter() - started:.1f} s "
              "after it started")
        delays = []
        for _ in range(count):
            timed(project, _env())
            ended = time.perf_counter()
            run_id = store.runs("support-bot", limit=1)[0]["run_id"]
            while run_id not in store.dagster_runs_of([run_id]):
                if time.perf_counter() - ended > 120:
                    raise SystemExit(f"run {run_id} not recorded within 120 s")
                time.sleep(0.25)
            delays.append(time.perf_counter() - ended)
        print(f"recorded after: {', '.join(f'{d:.1f}' for d in delays)} s; median {statistics.median(delays):.1f} s, "
              f"max {max(delays):.1f} s (target <= {RECORD_TARGET_S:.0f} s): "
              f"{'met' if max(delays) <= RECORD_TARGET_S else 'MISSED'}")
    finally:
        os.killpg(serve.pid, signal.SIGINT)
        try:
            serve.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(serve.pid, signal.SIGKILL)
        log.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--runs", type=int, default=7, help="measured rounds (default 7)")
    parser.add_argument("--serve", type=int, default=0, metavar="N",
                        help="also time N recordings by a running `cobalt serve` (default: none)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        project = Path(tmp) / "proj"
        shutil.copytree(EXAMPLE, project, ignore=shutil.ignore_patterns(".cobalt", "__pycache__"))
        overhead(project, args.runs)
        if args.serve:
            record_latency(project, args.serve)


if __name__ == "__main__":
    main()
