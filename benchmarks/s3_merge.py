"""Merging a sharded run's parts from an S3 exchange on moto's server (issue 35).

Starts moto's S3 server on 127.0.0.1 (a process of its own, as an object store is), writes the parts
of a run of `--items` items as shards would (`--shard-items` per shard, `--part-items` a part, each
part its outputs, scores and spans Parquet files and its marker, one working-time file per shard),
then times what `merge` does: find the committed parts, read the working times, download the Parquet
files and merge them into a store (`Store.merge_shards`). `--code DIR` runs it with the checkout in
DIR on `sys.path` instead (an older commit's `git worktree`).

    .venv/bin/python benchmarks/s3_merge.py --items 100000 --part-items 200
    .venv/bin/python benchmarks/s3_merge.py --items 100000 --part-items 200 --code /tmp/old
"""

from __future__ import annotations

import argparse
import os
import socket
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def cuts(start: int, stop: int, part_items: int, item_ms: float | None) -> list[tuple[int, int]]:
    """The parts `(first, end)` of a shard of items `start` to `stop`: every `part_items`, or as the shard
    writer of the checkout imported cuts them for items of `item_ms` each (an older one: every 10 s)."""
    if item_ms is None:
        return [(low, min(low + part_items, stop)) for low in range(start, stop, part_items)]
    from cobalt_lib.run import _shard

    rule = getattr(_shard, "part_seconds", lambda worked: _shard.PART_SECONDS)
    cap = _shard.part_items(stop - start)
    found, low, opened = [], start, 0.0
    for i in range(start, stop):
        now = (i - start + 1) * item_ms / 1000
        if i + 1 - low >= cap or now - opened >= rule(opened):
            found.append((low, i + 1))
            low, opened = i + 1, now
    return found + ([(low, stop)] if low < stop else [])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--items", type=int, default=100_000)
    parser.add_argument("--shard-items", type=int, default=25_000)
    parser.add_argument("--part-items", type=int, default=2000,
                        help="items per part (a shard also cuts a part every 10 s of work: slow items, many parts)")
    parser.add_argument("--item-ms", type=float,
                        help="cut the parts as a shard does whose items take this long each (its time rule and "
                             "item cap), instead of every --part-items")
    parser.add_argument("--code", type=Path, default=ROOT, help="the checkout to import cobalt from")
    args = parser.parse_args()
    sys.path.insert(0, str(args.code))
    import subprocess

    import boto3

    from cobalt_lib import Store
    from cobalt_lib.store import Exchange

    port = free_port()
    # A process of its own, as a real object store is: moto's in-process server would share the GIL
    # with the merge's requests and put its own CPU in the merge's.
    server = subprocess.Popen([str(Path(sys.executable).parent / "moto_server"), "-H", "127.0.0.1", "-p", str(port)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    while True:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                break
        except OSError:
            time.sleep(0.2)
    os.environ.update(AWS_ACCESS_KEY_ID="testing", AWS_SECRET_ACCESS_KEY="testing", AWS_DEFAULT_REGION="us-east-1",
                      AWS_ENDPOINT_URL=url, FSSPEC_S3_ENDPOINT_URL=url)
    boto3.client("s3", endpoint_url=url).create_bucket(Bucket="exchange")
    run_id = "20261202000000-bench0001"
    try:
        with tempfile.TemporaryDirectory(prefix="cobalt-s3-merge-") as tmp:
            exchange = Exchange("s3://exchange/runs", values=Path(tmp) / "values")
            started = time.perf_counter()
            for shard, start in enumerate(range(0, args.items, args.shard_items)):
                stop = min(start + args.shard_items, args.items)
                for number, (low, high) in enumerate(cuts(start, stop, args.part_items, args.item_ms)):
                    keys = [(i, 0) for i in range(low, high)]
                    rows = {"outputs": [{"run_id": run_id, "item_index": i, "run_index": 0, "status": "ok",
                                         "input": {"input": f"q{i}"}, "output": f"a{i}", "latency_ms": 1.0}
                                        for i, _ in keys],
                            "scores": [{"run_id": run_id, "item_index": i, "run_index": 0, "evaluator": "exact",
                                        "score": 1.0, "status": "ok"} for i, _ in keys]}
                    exchange.write_part(run_id, shard, f"part-{number:06d}-0a", keys, rows)
                exchange.write_work(run_id, shard, "0a", 1000.0)
            written = time.perf_counter() - started
            store = Store(Path(tmp) / "cobalt.duckdb")
            store.start_run({"run_id": run_id, "experiment": "bench", "started_at": "2026-12-02T00:00:00+00:00",
                             "tags": [], "config": {"runs": 1}})
            load = os.getloadavg()[0]
            cpu0, started = time.process_time(), time.perf_counter()
            fresh = Exchange("s3://exchange/runs", values=Path(tmp) / "values")  # a merge step's own
            parts = fresh.committed(run_id) if hasattr(fresh, "committed") else fresh.parts(run_id)
            listed = time.perf_counter() - started
            worked = fresh.worked_ms(run_id)
            with fresh.local_files(parts, run_id) as files:
                fetched = time.perf_counter() - started
                counts = store.merge_shards(run_id, files, expected=args.items, runs=1,
                                            shard_items=args.shard_items, worked_ms=worked)
            merged = time.perf_counter() - started
            cpu = time.process_time() - cpu0
    finally:
        server.terminate()
        server.wait()
    print("| items | code | load | parts | written s | markers listed and read s | files fetched s | "
          "merge wall s | merge CPU s | outputs merged |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    print(f"| {args.items:,} | {args.code.name} | {load:.1f} | {len(parts)} | {written:.1f} | {listed:.2f} | "
          f"{fetched:.2f} | {merged:.2f} | {cpu:.2f} | {counts['outputs']:,} |")


if __name__ == "__main__":
    main()
