"""What versioned datasets cost at 100,000 items (docs/datasets.md): `push` of a new file (parse, identities,
content hash, one transaction), `push` of the unchanged file (no new version), `push` of an edited copy (1,000
items changed, 1,000 added, 1,000 removed), `diff` of the two versions, and `Dataset.from_store` reading one.
Each through the functions the CLI calls, on a DuckDB store file in a temporary directory.

    .venv/bin/python benchmarks/datasets.py                      # N=100000
    .venv/bin/python benchmarks/datasets.py --items 10000
"""

from __future__ import annotations

import argparse
import json
import platform
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any


def timed(action: Callable[[], Any]) -> tuple[float, Any]:
    started = time.perf_counter()
    result = action()
    return time.perf_counter() - started, result


def write(path: Path, items: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(item) + "\n" for item in items), encoding="utf-8")
    return path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=100_000)
    args = parser.parse_args()
    from cobalt_lib import Dataset, Store
    from cobalt_lib.datasets import diff_versions, push_dataset

    n = args.items
    items = [{"id": f"q{i}", "input": f"question number {i} about a topic " * 3, "expected_output": f"answer {i}",
              "split": "test" if i % 5 == 0 else "train"} for i in range(n)]
    edited = [dict(item) for item in items[1000:]]
    for item in edited[:1000]:
        item["expected_output"] += " (edited)"
    edited += [{"id": f"new{i}", "input": f"new question {i}", "expected_output": "x", "split": "test"}
               for i in range(1000)]
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        store = Store(root / "cobalt.duckdb")
        first, second = write(root / "v1.jsonl", items), write(root / "v2.jsonl", edited)
        rows = [("push (new version)", lambda: push_dataset(store, "qa", first, split="split")),
                ("push (unchanged: no version)", lambda: push_dataset(store, "qa", first, split="split")),
                ("push (3,000 items differ)", lambda: push_dataset(store, "qa", second, split="split")),
                ("diff qa@1 qa@2", lambda: diff_versions(store, "qa@1", "qa@2")),
                ("Dataset.from_store('qa@2')", lambda: Dataset.from_store("qa@2", store=store)),
                ("Dataset.from_store('qa@2:test')", lambda: Dataset.from_store("qa@2:test", store=store))]
        print(f"{n:,} items, {first.stat().st_size / 2**20:.1f} MB JSONL; Python {platform.python_version()}, "
              f"{platform.machine()}")
        for label, action in rows:
            seconds, result = timed(action)
            extra = f"  ({result.counts_text()})" if hasattr(result, "counts_text") else ""
            print(f"{label:34s} {seconds:7.2f} s{extra}")


if __name__ == "__main__":
    main()
