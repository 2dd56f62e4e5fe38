"""The exchange: where the shards of a run Dagster launched leave their rows for `merge`.

A directory (default `<output_dir>/exchange`) or an fsspec URL (`s3://bucket/prefix`, the `s3`
extra), so shards on different machines meet in object storage. Layout, one folder per run and shard:

    <exchange>/<run_id>/shard-00003/part-000002-<attempt>.scores.parquet
                                    part-000002-<attempt>.outputs.parquet
                                    part-000002-<attempt>.spans.parquet   the agent calls' spans
                                    part-000002-<attempt>.tally.json      its aggregate partial
                                    part-000002-<attempt>.items.json      its items, as the results
                                                                          file holds them
                                    part-000002-<attempt>.json      the commit marker: the part's item keys
                                                                    and tables
                                    work-<attempt>.json             the attempt's working time

A part holds whole items only, written scores first, outputs next, its partial (`run._partials`:
what `aggregates` merges instead of reading the items back), the marker last, each file
whole (a rename on a disk, one PUT in object storage): a part without its marker is ignored, so a
shard killed mid-write leaves nothing half-read. A retried shard reads its markers and runs only
the items they lack. Parquet is written by DuckDB from a local temporary file, then moved or
uploaded: DuckDB's own S3 support (httpfs) is an extension that cannot be relied on, and its
Python-filesystem bridge runs every read through Python callbacks.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .._errors import ConfigError
from .._secrets import scrub
from ._tables import read_rows_sql, write_rows
from ._values import MAX_VALUE_BYTES, VALUES_DIR

if TYPE_CHECKING:
    from ..config._config import Config

#: The default exchange directory under the project's output directory.
EXCHANGE_DIR = "exchange"
#: The tables a part holds, in the order they are written (the marker last commits them).
PART_TABLES = ("scores", "spans", "outputs")
#: A part's aggregate partial (`run._partials`): its tally's state, then its items' JSON.
PARTIAL_FILES = ("tally.json", "items.json")
_PART = re.compile(r"part-(\d{6})-([0-9a-f]+)\.json$")


@dataclass(frozen=True)
class Part:
    """A committed part of a shard: its name (`part-000002-<attempt>`) and the item keys it holds."""

    shard: int
    name: str
    keys: list[tuple[int, int]]
    #: The tables it has files of (a part written before spans were collected has no spans file).
    tables: tuple[str, ...] = ("scores", "outputs")
    #: Whether it has its aggregate partial (`tally.json`, `items.json`; a part of an earlier cobalt has not).
    partial: bool = False

    @property
    def number(self) -> int:
        return int(self.name.split("-")[1])


class Exchange:
    """A run's shard files at one location; every path is relative to it (`<run_id>/shard-00003/...`)."""

    def __init__(self, location: str | Path, *, values: Path | None = None,
                 max_value_bytes: int = MAX_VALUE_BYTES) -> None:
        self.location = str(location).rstrip("/")
        self.remote = "://" in self.location and not self.location.startswith("file://")
        self._fs: Any = None
        #: Where a shard keeps the whole of a value too long for a row (`_values`), and that length.
        self.values = values if values is not None else Path(tempfile.gettempdir()) / "cobalt-values"
        self.max_value_bytes = max_value_bytes

    @classmethod
    def for_config(cls, config: Config) -> Exchange:
        """`[dagster] exchange`: a URL as written, or a directory relative to the project (default
        `<output_dir>/exchange`)."""
        where = config.dagster.exchange
        location: str | Path
        if where is None:
            location = config.output_path / EXCHANGE_DIR
        elif "://" in where:
            location = where
        else:
            path = Path(where).expanduser()
            location = path if path.is_absolute() else config.root / path
        return cls(location, values=config.output_path / VALUES_DIR, max_value_bytes=config.store.max_value_bytes)

    def __str__(self) -> str:
        return scrub(self.location)

    # -- the files -------------------------------------------------------------------------------

    def shard_dir(self, run_id: str, shard: int) -> str:
        return f"{run_id}/shard-{shard:05d}"

    def parts(self, run_id: str, shard: int | None = None) -> list[Part]:
        """The committed parts of one shard (or of every shard of the run), in part order."""
        folder = f"{run_id}/shard-*" if shard is None else self.shard_dir(run_id, shard)
        pattern = f"{folder}/part-*.json"
        found = []
        markers = [rel for rel in self._glob(pattern) if _PART.search(rel)]
        for rel, text in zip(markers, self._read_many(markers), strict=True):
            marker = json.loads(text)
            keys = [(int(i), int(r)) for i, r in marker["keys"]]
            found.append(Part(int(rel.split("/")[-2].removeprefix("shard-")), Path(rel).stem, keys,
                              tuple(marker.get("tables") or ("scores", "outputs"))))
        return sorted(found, key=lambda p: (p.shard, p.number, p.name))

    def committed(self, run_id: str) -> list[Part]:
        """The run's committed parts from one listing, their markers unread (`keys` empty): what merge
        needs, each part's tables being the files listed beside its marker (written before it). A run's
        hundreds of parts then cost a listing, not a GET each."""
        listed = set(self._glob(f"{run_id}/shard-*/part-*"))
        found = []
        for rel in listed:
            if _PART.search(rel):
                base = rel.removesuffix(".json")
                tables = tuple(t for t in PART_TABLES if f"{base}.{t}.parquet" in listed)
                partial = all(f"{base}.{f}" in listed for f in PARTIAL_FILES)
                found.append(Part(int(rel.split("/")[-2].removeprefix("shard-")), Path(rel).stem, [], tables, partial))
        return sorted(found, key=lambda p: (p.shard, p.number, p.name))

    def write_part(self, run_id: str, shard: int, name: str, keys: Sequence[tuple[int, int]],
                   rows: dict[str, list[dict[str, Any]]], partial: tuple[dict[str, Any], bytes] | None = None) -> None:
        """Write one part: its scores, its outputs, its `partial` (tally state, items JSON) when given,
        then its marker (what commits it)."""
        base = f"{self.shard_dir(run_id, shard)}/{name}"
        with tempfile.TemporaryDirectory(prefix="cobalt-part-") as tmp:
            for table in PART_TABLES:
                local = Path(tmp) / f"{table}.parquet"
                write_parquet(table, rows.get(table, []), local, values=self.values, limit=self.max_value_bytes)
                self._put(local, f"{base}.{table}.parquet")
            if partial is not None:
                for file, data in zip(PARTIAL_FILES, (json.dumps(partial[0]).encode(), partial[1]), strict=True):
                    local = Path(tmp) / file
                    local.write_bytes(data)
                    self._put(local, f"{base}.{file}")
            marker = Path(tmp) / "marker.json"
            marker.write_text(json.dumps({"keys": [list(k) for k in keys], "tables": list(PART_TABLES)}))
            self._put(marker, f"{base}.json")

    def partials(self, run_id: str, parts: Sequence[Part], *, batch: int = 16,
                 ) -> Iterator[tuple[dict[str, Any], bytes]]:
        """Each part's partial (its tally state, its items' JSON), in the order of `parts`; from object
        storage `batch` parts per call, their GETs concurrent."""
        for start in range(0, len(parts), batch):
            rels = [f"{self.shard_dir(run_id, p.shard)}/{p.name}.{f}" for p in parts[start:start + batch]
                    for f in PARTIAL_FILES]
            got = self._read_bytes(rels)
            for k in range(0, len(got), 2):
                yield json.loads(got[k]), got[k + 1]

    def write_work(self, run_id: str, shard: int, attempt: str, worked_ms: float) -> None:
        """The working time of one attempt of a shard (merge sums them into the run's)."""
        with tempfile.TemporaryDirectory(prefix="cobalt-work-") as tmp:
            local = Path(tmp) / "work.json"
            local.write_text(json.dumps({"worked_ms": worked_ms}))
            self._put(local, f"{self.shard_dir(run_id, shard)}/work-{attempt}.json")

    def worked_ms(self, run_id: str) -> float:
        found = self._glob(f"{run_id}/shard-*/work-*.json")
        return sum(float(json.loads(text)["worked_ms"]) for text in self._read_many(found))

    def clear(self, run_id: str) -> None:
        """Remove the run's files (a new materialisation of the run starts from nothing)."""
        if not run_id or "/" in run_id or run_id.startswith("."):
            raise ConfigError(f"Not a run id: {run_id!r}")
        if self.remote:
            fs, root = self._remote()
            if fs.exists(f"{root}/{run_id}"):
                fs.rm(f"{root}/{run_id}", recursive=True)
        else:
            shutil.rmtree(Path(self.location) / run_id, ignore_errors=True)

    @contextmanager
    def local_files(self, parts: Sequence[Part], run_id: str) -> Iterator[dict[str, list[str]]]:
        """`{"outputs": [...], "scores": [...], "spans": [...]}`: the parts' Parquet files as local paths DuckDB reads
        (downloaded into a temporary directory from object storage). A path's stem names its part."""
        rels = {table: [f"{self.shard_dir(run_id, p.shard)}/{p.name}.{table}.parquet" for p in parts
                        if table in p.tables] for table in ("outputs", "scores", "spans")}
        if not self.remote:
            yield {t: [str(Path(self.location) / r) for r in found] for t, found in rels.items()}
            return
        fs, root = self._remote()
        with tempfile.TemporaryDirectory(prefix="cobalt-merge-") as tmp:
            local: dict[str, list[str]] = {}
            for table, found in rels.items():
                local[table] = [str(Path(tmp) / r) for r in found]
                for path in local[table]:
                    Path(path).parent.mkdir(parents=True, exist_ok=True)
                if found:  # no spans in parts written before they were collected
                    fs.get([f"{root}/{r}" for r in found], local[table])
            yield local

    # -- the two kinds of location ---------------------------------------------------------------

    def _remote(self) -> tuple[Any, str]:
        if self._fs is None:
            try:
                import fsspec
            except ImportError:  # pragma: no cover - fsspec comes with dagster
                raise ConfigError(f"The exchange {self} needs fsspec: pip install 'cobalt-evals[s3]'.") from None
            try:
                self._fs = fsspec.core.url_to_fs(self.location)
            except (ImportError, ValueError) as exc:
                raise ConfigError(f"Cannot open the exchange {self}: {scrub(str(exc))} "
                                  "(an s3:// exchange needs the s3 extra: pip install 'cobalt-evals[s3]').") from None
        fs, root = self._fs
        return fs, str(root).rstrip("/")

    def _put(self, local: Path, rel: str) -> None:
        if self.remote:
            fs, root = self._remote()
            fs.put_file(str(local), f"{root}/{rel}")
            return
        target = Path(self.location) / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        staged = target.with_name(f".{target.name}.tmp")
        shutil.copyfile(local, staged)
        os.replace(staged, target)  # whole or absent: a reader never sees half a file

    def _glob(self, pattern: str) -> list[str]:
        if self.remote:
            fs, root = self._remote()
            fs.invalidate_cache()  # another machine's shards wrote since the last listing
            return [str(p)[len(root) + 1:] for p in fs.glob(f"{root}/{pattern}")]  # fsspec's paths start with root
        base = Path(self.location)
        return [str(p.relative_to(base)) for p in base.glob(pattern)]

    def _read_many(self, rels: Sequence[str]) -> list[str]:
        """The files' texts, in order (`_read_bytes`)."""
        return [data.decode() for data in self._read_bytes(rels)]

    def _read_bytes(self, rels: Sequence[str]) -> list[bytes]:
        """The files' bytes, in order. From object storage in one call, the GETs concurrent (s3fs
        gathers them): one at a time, a merge of 100 parts waited on 100 round trips."""
        if not rels:
            return []
        if self.remote:
            fs, root = self._remote()
            paths = [f"{root}/{rel}" for rel in rels]
            got = fs.cat(paths, on_error="raise")
            # fsspec names the results by its own form of each path (no protocol); match on that.
            by_path = {fs._strip_protocol(path): data for path, data in got.items()}
            return [bytes(by_path[fs._strip_protocol(path)]) for path in paths]
        return [(Path(self.location) / rel).read_bytes() for rel in rels]


def write_parquet(table: str, rows: list[dict[str, Any]], path: Path, *, values: Path,
                  limit: int = MAX_VALUE_BYTES) -> None:
    """The rows of a store table as a Parquet file with the store's column types (DuckDB writes it,
    reading the rows through newline-delimited JSON, as the store's own inserts do), values over
    `limit` bytes cut, whole in a side file under `values`, as the store's are."""
    source = path.with_suffix(".ndjson")
    longest = write_rows(source, table, rows, values, limit)
    try:
        _converter().execute(f"COPY ({read_rows_sql(table, longest)}) TO '{_quoted(path)}' (FORMAT parquet)",
                             [str(source)])
    finally:
        source.unlink(missing_ok=True)


_local = threading.local()


def _converter() -> Any:
    """This thread's in-memory DuckDB, kept: opening one costs about 30 CPU-ms, and a shard writes three
    files a part (a 5,000-item shard: 30, 0.2 ms an item). It holds no table; each COPY reads its file."""
    con = getattr(_local, "con", None)
    if con is None:
        import duckdb

        con = _local.con = duckdb.connect(":memory:")
    return con


def _quoted(path: Path) -> str:
    return str(path).replace("'", "''")
