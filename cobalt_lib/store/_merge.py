"""The SQL of `Store.merge_shards` and of the merged run's counts (a sibling of `_store`, which calls it).

A run's shards meet here: their Parquet parts are read by DuckDB itself, checked to hold every item
of the run exactly once, and replace the run's rows, in one transaction; no item passes through Python.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .._errors import StoreError

#: A part's identity from any of its files' paths: the path without `.outputs.parquet`, `.scores.parquet`...
_PART_OF = r"regexp_replace(filename, '\.(outputs|scores|spans)\.parquet$', '')"
#: The tables a merge replaces the run's rows of.
_MERGED = ("outputs", "scores", "spans")


def _files(paths: Sequence[str]) -> str:
    return "[" + ", ".join("'" + p.replace("'", "''") + "'" for p in paths) + "]"


def merge(con: Any, run_id: str, files: dict[str, list[str]], columns: dict[str, list[str]], *, expected: int,
          runs: int, shard_items: int, worked_ms: float) -> dict[str, int]:
    """Inside the caller's transaction: check, then replace the run's outputs, scores and spans with the parts'
    (`columns`: each table's columns, the store's `COLUMNS`).

    An item a retried shard wrote twice (a part committed just before its process died, and again by
    a process that did not see it) is taken from its latest part. Returns the counts inserted and the
    duplicates dropped; raises StoreError, naming the shards short of items, unless every one of the
    `expected` items (positions `index * runs + run_index`) is there exactly once.
    """
    if not files["outputs"]:
        raise StoreError(f"Run {run_id}: the exchange holds none of its {expected} items; its shards wrote nothing.")
    con.execute(f"CREATE OR REPLACE TEMP TABLE chosen AS SELECT item_index, run_index, max({_PART_OF}) AS part, "
                f"count(*) AS copies FROM read_parquet({_files(files['outputs'])}, filename=true) GROUP BY ALL")
    _check(con, run_id, expected=expected, runs=runs, shard_items=shard_items)
    duplicates = con.execute("SELECT coalesce(sum(copies - 1), 0) FROM chosen").fetchone()[0]
    for table in _MERGED:
        con.execute(f"DELETE FROM {table} WHERE run_id = ?", [run_id])
    inserted = {"duplicates": int(duplicates)}
    for table in _MERGED:
        if not files.get(table):
            continue
        names = [c for c in columns[table] if c != "run_id"]
        picked = ", ".join(f"t.{c}" for c in names)
        con.execute(f"INSERT INTO {table} (run_id, {', '.join(names)}) SELECT ?, {picked} "
                    f"FROM read_parquet({_files(files[table])}, filename=true) t "
                    "JOIN chosen c USING (item_index, run_index) "
                    f"WHERE {_PART_OF.replace('filename', 't.filename')} = c.part", [run_id])
        inserted[table] = int(con.execute(f"SELECT count(*) FROM {table} WHERE run_id = ?", [run_id]).fetchone()[0])
    con.execute("UPDATE runs SET worked_ms = ? WHERE run_id = ?", [worked_ms, run_id])
    con.execute("DROP TABLE chosen")
    return inserted


def _check(con: Any, run_id: str, *, expected: int, runs: int, shard_items: int) -> None:
    """Every expected position once (the `chosen` keys are distinct), and none outside the run."""
    found = con.execute(
        "SELECT count(*), count(*) FILTER (WHERE run_index NOT BETWEEN 0 AND ? - 1 "
        "OR item_index * ? + run_index NOT BETWEEN 0 AND ? - 1) FROM chosen", [runs, runs, expected]).fetchone()
    total, strays = int(found[0]), int(found[1])
    if strays:
        raise StoreError(f"Run {run_id}: the exchange holds {strays} item(s) that are not part of the run "
                         "(the files of another run, or of a different dataset?).")
    if total == expected:
        return
    per_shard = dict(con.execute(f"SELECT (item_index * {int(runs)} + run_index) // {int(shard_items)} AS shard, "
                                 "count(*) FROM chosen GROUP BY ALL").fetchall())
    shards = (expected + shard_items - 1) // shard_items
    short = {k: min(shard_items, expected - k * shard_items) - int(per_shard.get(k, 0)) for k in range(shards)}
    named = ", ".join(f"shard {k} lacks {n}" for k, n in short.items() if n > 0)
    raise StoreError(f"Run {run_id}: the exchange holds {total} of its {expected} items ({named}); "
                     "re-execute the run from failure to finish those shards.")


def counts(con: Any, run_id: str) -> dict[str, Any]:
    """What the `outputs` and `scores` assets report, counted in SQL: items per status, and per evaluator
    the sum and count of usable scores and the eval-errors, the judge calls and the cached scores."""
    statuses = dict(con.execute("SELECT status, count(*) FROM outputs WHERE run_id = ? GROUP BY status",
                                [run_id]).fetchall())
    evaluators = {name: [float(total or 0.0), int(scored), int(errors)] for name, total, scored, errors in con.execute(
        "SELECT evaluator, sum(score) FILTER (WHERE status = 'ok' AND score IS NOT NULL), "
        "count(*) FILTER (WHERE status = 'ok' AND score IS NOT NULL), count(*) FILTER (WHERE status <> 'ok') "
        "FROM scores WHERE run_id = ? GROUP BY evaluator", [run_id]).fetchall()}
    # sum() of an integer column is a Decimal on Postgres: int() takes either
    judge_calls, cached = con.execute("SELECT coalesce(sum(judge_calls), 0), count(*) FILTER (WHERE cached) "
                                      "FROM scores WHERE run_id = ?", [run_id]).fetchone()
    return {"statuses": {str(k): int(v) for k, v in statuses.items()}, "evaluators": evaluators,
            "judge_calls": int(judge_calls), "cached": int(cached)}
