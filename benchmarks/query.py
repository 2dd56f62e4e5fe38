"""How long `cobalt_query` holds the store, and what it costs, on a store of 1,000,000 score rows.

The store: 100 runs x 2,500 items x 4 evaluators (1,000,000 score rows, 250,000 output rows), made
with DuckDB's `range()` through cobalt's own schema. Measured, each `--repeats` times:

- `snapshot`: the copy every query used to take (`Store.snapshot()`, every table into memory):
  its wall time (the file is held all along) and the memory DuckDB holds for the copy;
- `query`: `run_query` now (views over the file attached read-only), for typical questions: its
  wall time is the longest the file can be held, since the connection closes when it returns;
- `writer waits`: a writer in another process (`Store.start_run`) started while a heavy query runs:
  how long its write took (the writer retries while a reader holds the file).

    .venv/bin/python benchmarks/query.py                   # 1,000,000 score rows
    .venv/bin/python benchmarks/query.py --runs 10 --repeats 3
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

QUERIES = {
    "mean per evaluator": "SELECT evaluator, avg(score) AS mean, count(*) AS n FROM scores GROUP BY 1 ORDER BY 1",
    "one run's failures": "SELECT item_index, evaluator, score, reason FROM scores WHERE run_id = '{run}' "
                          "AND NOT passed ORDER BY score LIMIT 50",
    "join outputs x scores": "SELECT o.status, s.evaluator, avg(s.score) AS mean, avg(o.latency_ms) AS latency "
                             "FROM outputs o JOIN scores s USING (run_id, item_index, run_index) GROUP BY ALL",
    "200 rows": "SELECT * FROM scores LIMIT 200",
}
HEAVY = ("SELECT s.evaluator, count(DISTINCT s.reason || o.output) AS n FROM outputs o JOIN scores s "
         "USING (run_id, item_index, run_index) GROUP BY 1")
WRITER = """
import sys, time
from cobalt_lib.store import Store
store = Store(__import__("pathlib").Path(sys.argv[1]))
print("ready", flush=True)
sys.stdin.readline()
started = time.monotonic()
store.start_run({"run_id": sys.argv[2], "experiment": "bench", "started_at": "2026-11-26T00:00:00+00:00",
                 "tags": [], "config": {}})
print(time.monotonic() - started)
"""


def make_store(path: Path, runs: int, items: int, evaluators: int) -> None:
    import duckdb

    from cobalt_lib.store import Store

    Store(path).ensure_schema()
    with duckdb.connect(str(path)) as con:
        con.execute(f"""INSERT INTO runs (run_id, experiment, status, started_at, finished_at, tags, config, source,
                        passed) SELECT printf('run-%04d', range), 'bench', 'completed', TIMESTAMPTZ '2026-11-01'
                        + to_hours(range), TIMESTAMPTZ '2026-11-01' + to_hours(range) + to_minutes(5), '[]', '{{}}',
                        'library', true FROM range({runs})""")
        con.execute(f"""INSERT INTO outputs (run_id, item_index, run_index, input, output, status, latency_ms, tokens,
                        cost_usd, input_hash) SELECT printf('run-%04d', r.range), i.range, 0,
                        to_json('question number ' || i.range || ' about ' || md5(i.range::VARCHAR)),
                        to_json('answer to question ' || i.range || ': ' || md5(r.range || '-' || i.range)
                        || md5(i.range || '-' || r.range)), 'ok', 100 + (hash(r.range, i.range) % 900), 45, 0.0001,
                        md5(i.range::VARCHAR) FROM range({runs}) r, range({items}) i""")
        con.execute(f"""INSERT INTO scores (run_id, item_index, run_index, evaluator, score, reason, status, passed,
                        raw_response, cached, judge_model, latency_ms, tokens, cost_usd, judge_calls)
                        SELECT printf('run-%04d', r.range), i.range, 0, 'evaluator-' || e.range,
                        (hash(r.range, i.range, e.range) % 1000) / 1000.0, 'The answer is mostly right but misses '
                        || md5(r.range || i.range || e.range) || ' of the question.', 'ok',
                        (hash(r.range, i.range, e.range) % 1000) >= 500,
                        '{{"score": 0.5, "reason": "' || md5(e.range || i.range || r.range) || '"}}', false,
                        'openai/gpt-4o-mini', 250, 120, 0.00002, 1
                        FROM range({runs}) r, range({items}) i, range({evaluators}) e""")


def time_snapshot(path: Path, repeats: int) -> tuple[list[float], float]:
    """The copy's wall times, and the memory DuckDB holds for it (MiB)."""
    from cobalt_lib.store import Store

    times, held = [], 0.0
    for _ in range(repeats):
        started = time.monotonic()
        with Store(path).snapshot() as con:
            times.append(time.monotonic() - started)
            held = con.execute("SELECT sum(memory_usage_bytes) FROM duckdb_memory()").fetchall()[0][0] / 2**20
    return times, held


def time_queries(config: object, repeats: int) -> dict[str, list[float]]:
    from cobalt_lib.ops import run_query

    found: dict[str, list[float]] = {}
    for name, sql in QUERIES.items():
        found[name] = []
        for _ in range(repeats):
            started = time.monotonic()
            run_query(config, sql.format(run="run-0042"), limit=200)  # type: ignore[arg-type]
            found[name].append(time.monotonic() - started)
    return found


def writer_wait(config: object, path: Path, n: int) -> tuple[float, float]:
    """(the heavy query's wall time, how long a writer in another process took meanwhile)."""
    from cobalt_lib.ops import run_query

    took: list[float] = []

    def query() -> None:
        started = time.monotonic()
        run_query(config, HEAVY, limit=10)  # type: ignore[arg-type]
        took.append(time.monotonic() - started)

    writer = subprocess.Popen([sys.executable, "-c", WRITER, str(path), f"writer-{n}"], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
    assert writer.stdin is not None and writer.stdout is not None
    assert writer.stdout.readline().strip() == "ready"  # imported: the write itself is what gets timed
    thread = threading.Thread(target=query)
    thread.start()
    time.sleep(0.3)  # the query holds the file by now: it runs for seconds
    writer.stdin.write("go\n")
    writer.stdin.flush()
    waited = float(writer.stdout.readline().strip())
    writer.wait()
    thread.join()
    return took[0], waited


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=100)
    parser.add_argument("--items", type=int, default=2500)
    parser.add_argument("--evaluators", type=int, default=4)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()

    from cobalt_lib import load_config

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "cobalt.toml").write_text("")
        path = root / ".cobalt" / "cobalt.duckdb"
        path.parent.mkdir()
        started = time.monotonic()
        make_store(path, args.runs, args.items, args.evaluators)
        scores = args.runs * args.items * args.evaluators
        print(f"store: {scores:,} score rows, {args.runs * args.items:,} output rows, "
              f"{path.stat().st_size / 2**20:.0f} MiB, made in {time.monotonic() - started:.1f} s")
        print(f"python {platform.python_version()}, {os.cpu_count()} cores, load {os.getloadavg()[0]:.1f}")
        config = load_config(root)
        time_queries(config, 1)  # warm-up: imports, the file in the page cache
        for name, times in time_queries(config, args.repeats).items():
            print(f"query now   {name:24} median {statistics.median(times) * 1000:7.0f} ms  max "
                  f"{max(times) * 1000:7.0f} ms  (the file is held at most this long)")
        for n in range(3):
            query, wait = writer_wait(config, path, n)
            print(f"writer waits: heavy query {query * 1000:6.0f} ms, a write from another process meanwhile "
                  f"{wait * 1000:6.0f} ms")
        times, grew = time_snapshot(path, args.repeats)
        print(f"snapshot (before): median {statistics.median(times) * 1000:7.0f} ms  max {max(times) * 1000:7.0f} ms "
              f"held per query, whatever the query; {grew:.0f} MiB of memory for the copy")


if __name__ == "__main__":
    main()
