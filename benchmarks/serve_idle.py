"""An idle `cobalt serve`: CPU of its whole process tree over a window (issue 35).

Copies `examples/dagster_project` to a temporary directory, starts `cobalt serve` there (pages, the
proxy, Dagster's webserver, daemon and, with this checkout, the shared code server), waits until the
Dagster UI answers, lets the first minute pass (start-up: loading the code), then measures the CPU
time of the tree over `--seconds` (default 600): every live process's user + system time and that of
the children it reaped (a code server the daemon started and stopped counts in the daemon's), from
/proc. Prints the share of one core, and the peak RSS of the processes seen. `--before DIR` measures
the same with the checkout in DIR on `sys.path` afterwards.

    .venv/bin/python benchmarks/serve_idle.py --seconds 600
    .venv/bin/python benchmarks/serve_idle.py --seconds 600 --before /tmp/old
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parent.parent
TICKS = os.sysconf("SC_CLK_TCK")


def tree(pid: int) -> list[int]:
    """`pid` and every process below it."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            children.setdefault(int(fields[1]), []).append(int(entry.name))
    found, todo = [], [pid]
    while todo:
        current = todo.pop()
        found.append(current)
        todo += children.get(current, [])
    return found


def cpu_seconds(pids: list[int]) -> float:
    """User + system time of `pids` and of the children they reaped."""
    total = 0
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += sum(int(f) for f in fields[11:15])  # utime stime cutime cstime
    return total / TICKS


def per_process(pids: list[int]) -> dict[int, tuple[str, float]]:
    """`{pid: (what it runs, CPU seconds so far)}` for `pids`, named from their command lines."""
    found = {}
    for pid in pids:
        try:
            argv = Path(f"/proc/{pid}/cmdline").read_bytes().decode().split("\0")
        except OSError:
            continue
        found[pid] = (_name(argv), cpu_seconds([pid]))
    return found


def _name(argv: list[str]) -> str:
    text = " ".join(argv)
    for needle, name in (("code-server start", "code server (proxy)"), ("api grpc", "code server (gRPC)"),
                         ("_webserver", "webserver"), ("dagster-webserver", "webserver"),
                         ("daemon run", "daemon"), ("daemon_main", "daemon"), ("serve", "cobalt serve")):
        if needle in text:
            return name
    return text[:60]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def measure(checkout: Path, seconds: float, settle: float, yaml: Path | None = None) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="cobalt-idle-") as tmp:
        root = Path(tmp) / "project"
        shutil.copytree(ROOT / "examples" / "dagster_project", root,
                        ignore=shutil.ignore_patterns(".cobalt", "__pycache__"))
        if yaml is not None:  # an instance configuration of one's own, in place of the one cobalt writes
            (root / ".cobalt" / "dagster").mkdir(parents=True)
            shutil.copy(yaml, root / ".cobalt" / "dagster" / "dagster.yaml")
        port = free_port()
        env = {k: v for k, v in os.environ.items() if k not in ("DAGSTER_HOME", "COBALT_PROJECT_DIR")}
        env["PYTHONPATH"] = str(checkout)
        proc = subprocess.Popen([sys.executable, "-c", "import sys; from cobalt_lib._entry import main; "
                                 "sys.argv[0] = 'cobalt'; main()", "serve", "--port", str(port), "--no-open"],
                                cwd=root, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                start_new_session=True)
        try:
            while True:  # until the UI answers through the proxy
                try:
                    if httpx.get(f"http://127.0.0.1:{port}/server_info", timeout=5).status_code == 200:
                        break
                except httpx.HTTPError:
                    pass
                if proc.poll() is not None:
                    raise SystemExit("cobalt serve exited before the UI answered")
                time.sleep(1)
            time.sleep(settle)
            before = per_process(tree(proc.pid))
            start, first = cpu_seconds(tree(proc.pid)), time.monotonic()
            peak, seen = 0, set()
            while time.monotonic() - first < seconds:
                time.sleep(5)
                pids = tree(proc.pid)
                seen.update(pids)
                peak = max(peak, sum(_rss(pid) for pid in pids))
            used, span = cpu_seconds(tree(proc.pid)) - start, time.monotonic() - first
            after = per_process(tree(proc.pid))
        finally:
            os.killpg(proc.pid, signal.SIGINT)
            proc.wait(timeout=60)
    parts: dict[str, float] = {}
    for pid, (name, cpu) in after.items():
        parts[name] = parts.get(name, 0.0) + cpu - before.get(pid, (name, 0.0))[1]
    return {"cpu": used, "span": span, "share": 100 * used / span, "rss_mb": peak / 1024, "processes": len(seen),
            "parts": ", ".join(f"{name} {cpu:.1f}" for name, cpu in sorted(parts.items(), key=lambda p: -p[1]))}


def _rss(pid: int) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=600)
    parser.add_argument("--settle", type=float, default=60, help="seconds after the UI answers before measuring")
    parser.add_argument("--before", type=Path, help="an older checkout to measure afterwards")
    parser.add_argument("--dagster-yaml", type=Path, help="the instance's dagster.yaml instead of cobalt's own")
    args = parser.parse_args()
    print("| code | load at start | window s | CPU s | % of one core | largest tree RSS MB | processes seen | "
          "CPU s by process |")
    print("|---|---|---|---|---|---|---|---|")
    sides = [("this checkout", ROOT)] + ([(f"before ({args.before.name})", args.before)] if args.before else [])
    for label, checkout in sides:
        load = os.getloadavg()[0]
        got = measure(checkout, args.seconds, args.settle, args.dagster_yaml)
        print(f"| {label} | {load:.1f} | {got['span']:.0f} | {got['cpu']:.1f} | {got['share']:.2f} | "
              f"{got['rss_mb']:.0f} | {got['processes']:.0f} | {got['parts']} |", flush=True)


if __name__ == "__main__":
    main()
