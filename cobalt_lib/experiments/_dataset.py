"""Datasets: an ordered, immutable list of items (dicts), read from memory, files or URLs."""

from __future__ import annotations

import builtins
import csv
import io
import json
import random
import re
import sys
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, overload
from urllib.parse import urlsplit

from .._errors import CobaltError, DatasetError, raise_bad_lines
from ._itemcheck import check_item

if TYPE_CHECKING:
    from ..store import Store

Item = dict[str, Any]

#: A stored dataset's name: letters, digits, `_`, `-` and `.`, starting with a letter or digit.
DATASET_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")
_REF = re.compile(r"(?P<name>[^@:]+)(?:@(?P<version>[^:]*))?(?::(?P<split>.*))?")


@dataclass(frozen=True)
class StoredVersion:
    """Which stored dataset a Dataset holds: `name`, `version` and `split` (None: every item), and whether
    it was asked for pinned (`qa@3`) or following the latest (`qa`)."""

    name: str
    version: int
    split: str | None = None
    pinned: bool = True

    @property
    def ref(self) -> str:
        return f"{self.name}@{self.version}" + (f":{self.split}" if self.split else "")


def parse_ref(ref: str) -> tuple[str, int | None, str | None]:
    """`qa`, `qa@3`, `qa:test` or `qa@3:test` as (name, version or None, split or None)."""
    found = _REF.fullmatch(ref.strip())
    if found is None or not DATASET_NAME.fullmatch(found["name"]):
        raise DatasetError(f"Dataset {ref!r} is not a dataset name: use letters, digits, '_', '-' and '.', "
                           "optionally with @VERSION and :SPLIT (qa, qa@3, qa@3:test).")
    version = found["version"]
    if version is not None and not (version.isdigit() and int(version) > 0):
        raise DatasetError(f"Dataset {ref!r}: the version after '@' must be a number from 1, got {version!r}.")
    return found["name"], int(version) if version is not None else None, found["split"] or None

_FORMATS = (".json", ".jsonl", ".csv")


class Dataset:
    """An ordered collection of items. Every transformation returns a new Dataset."""

    __slots__ = ("_items", "source", "stored")

    def __init__(self, items: Iterable[Mapping[str, Any]] = (), *, source: str | None = None,
                 stored: StoredVersion | None = None) -> None:
        materialised: list[Item] = []
        for i, item in enumerate(items):
            if not isinstance(item, Mapping):
                where = f" in {source}" if source else ""
                raise DatasetError(
                    f"Dataset item {i}{where} is a {type(item).__name__}, not an object; "
                    "give each item as a dict such as {'input': ..., 'expected_output': ...}."
                )
            materialised.append(dict(item))
        self._items = materialised
        self.source = source
        #: The stored version these items come from (`from_store`), kept by the transformations: a run
        #: records it with the content hash of the items it read.
        self.stored = stored

    # -- construction -------------------------------------------------------------------------

    @classmethod
    def from_file(cls, path: str | Path, *, format: str | None = None) -> Dataset:
        """Read a `.json` (array, or object with `items`), `.jsonl` or `.csv` file.

        A relative path is read from the working directory or, failing that, from the directory of
        the file calling `from_file` (an experiment file next to its data works from anywhere).
        """
        p = _locate(Path(path))
        fmt = _format_of(str(p), format)
        try:
            text = p.read_bytes().decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            raise DatasetError(f"Dataset file {p} is not UTF-8 ({exc.reason} at byte {exc.start}).") from None
        return cls(_parse(text, fmt, str(p)), source=str(p))

    @classmethod
    def from_url(cls, url: str, *, format: str | None = None, timeout: float = 30.0) -> Dataset:
        """Download a dataset in one of the `from_file` formats over http(s)."""
        import httpx

        if not url.startswith(("http://", "https://")):
            raise DatasetError(f"Dataset URL {url!r} must start with http:// or https://.")
        fmt = _format_of(urlsplit(url).path, format)
        try:
            response = httpx.get(url, timeout=timeout, follow_redirects=True)
        except httpx.HTTPError as exc:
            raise DatasetError(f"Could not download dataset {url}: {exc}.") from None
        if response.status_code >= 400:
            raise DatasetError(f"Could not download dataset {url}: HTTP {response.status_code}.")
        try:
            text = response.content.decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            raise DatasetError(f"Dataset {url} is not UTF-8 ({exc.reason} at byte {exc.start}).") from None
        return cls(_parse(text, fmt, url), source=url)

    @classmethod
    def from_store(cls, name: str, *, version: int | None = None, split: str | None = None,
                   store: Store | str | Path | None = None) -> Dataset:
        """A version of a dataset stored with `cobalt dataset push` (docs/datasets.md): `name` alone follows
        the latest version (read when this is called), `version=3` or `"qa@3"` pins one, `split="test"` or
        `"qa@3:test"` takes one split. `store`: the project's store by default (found from the working
        directory)."""
        from ..store import Store

        ref_name, ref_version, ref_split = parse_ref(name)
        version, split = version if version is not None else ref_version, split or ref_split
        if store is None:
            from ..config import load_config

            store = Store.for_config(load_config())
        elif not isinstance(store, Store):
            store = Store(Path(store))
        stored = resolve_stored(store, ref_name, version, split)
        rows = store.dataset_items(ref_name, stored.version, split)
        return cls((row["item"] for row in rows), source=stored.ref, stored=stored)

    # -- transformations ----------------------------------------------------------------------

    def map(self, fn: Callable[[Item], Mapping[str, Any]]) -> Dataset:
        return Dataset((fn(dict(item)) for item in self._items), source=self.source, stored=self.stored)

    def filter(self, predicate: Callable[[Item], bool]) -> Dataset:
        return Dataset((item for item in self._items if predicate(dict(item))), source=self.source, stored=self.stored)

    def sample(self, n: int, *, seed: int | None = 0) -> Dataset:
        """`n` items chosen without replacement, in their original order; same seed, same items.

        The default seed is 0, so an eval samples the same items every run; `seed=None` draws anew."""
        if n < 0:
            raise DatasetError(f"sample(n={n}): n must be zero or more.")
        if n >= len(self._items):
            return Dataset(self._items, source=self.source, stored=self.stored)
        picked = sorted(random.Random(seed).sample(range(len(self._items)), n))
        return Dataset((self._items[i] for i in picked), source=self.source, stored=self.stored)

    def slice(self, start: int, stop: int | None = None) -> Dataset:
        return Dataset(self._items[start:stop], source=self.source, stored=self.stored)

    # -- access -------------------------------------------------------------------------------

    @property
    def items(self) -> list[Item]:
        return [dict(item) for item in self._items]

    def __len__(self) -> int:
        return len(self._items)

    def __iter__(self) -> Iterator[Item]:
        return (dict(item) for item in self._items)

    @overload
    def __getitem__(self, index: int) -> Item: ...
    @overload
    def __getitem__(self, index: builtins.slice) -> Dataset: ...
    def __getitem__(self, index: int | builtins.slice) -> Item | Dataset:
        if isinstance(index, builtins.slice):
            return Dataset(self._items[index], source=self.source, stored=self.stored)
        return dict(self._items[index])

    def __repr__(self) -> str:
        src = f", source={self.source!r}" if self.source else ""
        return f"Dataset({len(self)} items{src})"


def resolve_stored(store: Store, name: str, version: int | None, split: str | None) -> StoredVersion:
    """The stored version `name@version:split` names (the latest without a version), or a DatasetError
    saying what the store holds."""
    versions = store.dataset_versions(name)
    if not versions:
        known = sorted({v["dataset"] for v in store.dataset_versions()})
        raise DatasetError(f"No dataset named {name!r} in the store {store.where}; "
                           + (f"stored datasets: {', '.join(known)}." if known
                              else f"push one first: `cobalt dataset push {name} FILE.jsonl`."))
    chosen = versions[-1] if version is None else next((v for v in versions if v["version"] == version), None)
    if chosen is None:
        raise DatasetError(f"Dataset {name!r} has no version {version}; its versions are 1 to "
                           f"{versions[-1]['version']}.")
    if split is not None and split not in chosen["splits"]:
        held = ", ".join(sorted(chosen["splits"])) or "none"
        raise DatasetError(f"Dataset {name}@{chosen['version']} has no split {split!r}; its splits: {held}.")
    return StoredVersion(name, int(chosen["version"]), split, pinned=version is not None)


def _format_of(name: str, explicit: str | None) -> str:
    fmt = (explicit or Path(name).suffix).lower()
    if not fmt:
        raise DatasetError(f"Cannot tell the format of dataset {name or '/'} from its name; pass "
                           f"format= one of {', '.join(f[1:] for f in _FORMATS)}.")
    fmt = fmt if fmt.startswith(".") else f".{fmt}"
    if fmt not in _FORMATS:
        raise DatasetError(
            f"Dataset {name} has an unsupported format {fmt!r}; use one of {', '.join(_FORMATS)} "
            "(or pass format='jsonl' etc.)."
        )
    return fmt


def _parse(text: str, fmt: str, where: str) -> list[Item]:
    if fmt == ".jsonl":
        return _parse_jsonl(text, where)
    if fmt == ".csv":
        return _parse_csv(text, where)
    return _parse_json(text, where)


def _parse_json(text: str, where: str) -> list[Item]:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise DatasetError(f"{where}, line {exc.lineno}: invalid JSON ({exc.msg}).") from None
    except RecursionError:
        raise DatasetError(_too_deep(where)) from None
    if isinstance(data, dict):
        if "items" not in data:
            raise DatasetError(f"{where}: a JSON object dataset needs an 'items' array.")
        data = data["items"]
    if not isinstance(data, list):
        raise DatasetError(f"{where}: expected a JSON array of items or an object with 'items'.")
    problems: list[str | CobaltError] = []
    for i, item in enumerate(data):
        if not isinstance(item, dict):
            problems.append(f"{where}: item {i} is a {type(item).__name__}, not an object.")
            continue
        try:
            check_item(item, f"{where}, item {i}")
        except DatasetError:
            try:
                check_item(item, f"{where}, line {_item_lines(text)[i]}")
            except DatasetError as exc:
                problems.append(exc)
    raise_bad_lines(problems, where)
    if any(_CHECKS in item for item in data):
        for item, line in zip(data, _item_lines(text), strict=True):
            _declare_checks(item, f"{where}, line {line}")
    if any(_CONVERSATION in item for item in data):
        for item, line in zip(data, _item_lines(text), strict=True):
            _declare_conversation(item, f"{where}, line {line}")
    return data


_WS = re.compile(r"[ \t\n\r]*")


def _skip(text: str, pos: int) -> int:
    """The position after the JSON whitespace at `pos`."""
    match = _WS.match(text, pos)
    assert match is not None  # the pattern matches the empty string
    return match.end()


def _item_lines(text: str) -> list[int]:
    """The line each item of a valid JSON dataset starts on (an array, or an object's `items` array)."""
    decoder = json.JSONDecoder()
    pos = _skip(text, 0)
    if text.startswith("{", pos):
        pos += 1
        while True:  # walk the top-level keys to the "items" array
            key, pos = decoder.raw_decode(text, _skip(text, pos))
            pos = _skip(text, _skip(text, pos) + 1)  # past the colon
            if key == "items":
                break
            _, pos = decoder.raw_decode(text, pos)
            pos = _skip(text, pos) + 1  # past the comma
    starts, pos = [], pos + 1
    while not text.startswith("]", pos := _skip(text, pos)):
        starts.append(pos)
        _, pos = decoder.raw_decode(text, pos)
        pos = _skip(text, pos)
        pos += text.startswith(",", pos)
    lines, line, last = [], 1, 0
    for start in starts:
        line += text.count("\n", last, start)
        lines.append(line)
        last = start
    return lines


#: The item field holding an item's own checks (see cobalt_lib.evaluators._itemchecks).
_CHECKS = "checks"


def _declare_checks(item: Item, where: str) -> None:
    """Validate an item's checks where it was read, so an unknown kind or option names the file and line.
    A CSV cell holds them as JSON text: it is parsed, and an empty cell means none."""
    from ..evaluators._itemchecks import declare_checks

    if _CHECKS not in item:
        return
    value = item[_CHECKS]
    if isinstance(value, str) and not value.strip():
        del item[_CHECKS]
        return
    value = _json_cell(item, _CHECKS, where)
    declare_checks(value, where)
    item[_CHECKS] = value


#: The item field that makes an item a conversation (see cobalt_lib.conversations).
_CONVERSATION = "conversation"


def _declare_conversation(item: Item, where: str) -> None:
    """Validate an item's conversation where it was read, so a bad one names the file, line and field.
    A CSV cell holds it as JSON text: it is parsed, and an empty cell means none."""
    from ..conversations._spec import read_conversation

    value = item[_CONVERSATION]
    if value is None or (isinstance(value, str) and not value.strip()):
        del item[_CONVERSATION]
        return
    value = _json_cell(item, _CONVERSATION, where)
    read_conversation(value, where)
    item[_CONVERSATION] = value


def _json_cell(item: Item, field: str, where: str) -> Any:
    """The field's value, a JSON string (a CSV cell) parsed here so that one nested past what Python reads,
    or past what cobalt stores, names the data file, line and field; invalid JSON is left to the field's
    own reader to explain."""
    value = item[field]
    if not isinstance(value, str):
        return value
    try:
        parsed = json.loads(value)
    except json.JSONDecodeError:
        return value
    except RecursionError:
        raise DatasetError(_too_deep(f"{where}, field {field}")) from None
    check_item({field: parsed}, where)
    return parsed


_LINE_END = re.compile(r"\r\n|\r|\n")


def _too_deep(where: str) -> str:
    """A value nested past what Python's JSON reader (and every later step) can recurse through."""
    return (f"{where}: a value is nested deeper than Python can read (about {sys.getrecursionlimit()} levels of "
            "arrays or objects); flatten it, or keep the deep part as a JSON string.")


def _parse_jsonl(text: str, where: str) -> list[Item]:
    items: list[Item] = []
    problems: list[str | CobaltError] = []
    # Split on real line ends only: str.splitlines() also breaks on U+2028, U+0085 etc., which
    # may appear unescaped inside a JSON string.
    for lineno, line in enumerate(_LINE_END.split(text), start=1):
        if line.strip():
            try:
                items.append(_jsonl_item(line, lineno, where))
            except CobaltError as exc:  # every bad line is said at once, not the first only
                problems.append(exc)
    raise_bad_lines(problems, where)
    return items


def _jsonl_item(line: str, lineno: int, where: str) -> Item:
    try:
        item = json.loads(line)
    except json.JSONDecodeError as exc:
        raise DatasetError(
            f"{where}, line {lineno}: invalid JSON ({exc.msg} at column {exc.colno}); "
            "each line must be one JSON object."
        ) from None
    except RecursionError:
        raise DatasetError(_too_deep(f"{where}, line {lineno}")) from None
    if not isinstance(item, dict):
        raise DatasetError(f"{where}, line {lineno}: expected a JSON object, got {type(item).__name__}.")
    check_item(item, f"{where}, line {lineno}")
    if _CHECKS in item:
        _declare_checks(item, f"{where}, line {lineno}")
    if _CONVERSATION in item:
        _declare_conversation(item, f"{where}, line {lineno}")
    return item


#: Python's csv module refuses fields over 128 KiB by default; long documents are ordinary here.
_CSV_FIELD_LIMIT = 64 * 2**20


def _locate(path: Path) -> Path:
    if path.is_file() or path.is_absolute():
        if not path.is_file():
            raise DatasetError(f"Dataset file {path} does not exist; check the path.")
        return path
    caller = Path(sys._getframe(2).f_code.co_filename).parent  # frames: [0] _locate, [1] from_file
    beside = caller / path
    if beside.is_file():
        return beside
    raise DatasetError(f"Dataset file {path} does not exist, neither in {Path.cwd()} nor beside the calling "
                       f"file in {caller}; check the path.")


def _parse_csv(text: str, where: str) -> list[Item]:
    if csv.field_size_limit() < _CSV_FIELD_LIMIT:
        csv.field_size_limit(_CSV_FIELD_LIMIT)
    reader = csv.reader(io.StringIO(text, newline=""))
    try:
        header = next(reader)
    except StopIteration:
        return []
    except csv.Error as exc:
        raise DatasetError(f"{where}, line 1: malformed CSV header ({exc}).") from None
    header = [h.strip() for h in header]
    if not header or not all(header) or len(set(header)) != len(header):
        raise DatasetError(f"{where}, line 1: the header row needs unique, non-empty column names.")
    items: list[Item] = []
    problems: list[str | CobaltError] = []
    start = reader.line_num + 1
    try:
        for row in reader:
            # A quoted field may span lines: report the line the row starts on.
            row_line, start = start, reader.line_num + 1
            if not row or not any(cell.strip() for cell in row):
                continue
            try:
                items.append(_csv_item(header, row, f"{where}, line {row_line}"))
            except CobaltError as exc:  # every bad row is said at once
                problems.append(exc)
    except csv.Error as exc:  # the reader cannot go on past this one
        problems.append(f"{where}, line {reader.line_num}: malformed CSV ({exc}).")
    raise_bad_lines(problems, where)
    return items


def _csv_item(header: list[str], row: list[str], where: str) -> Item:
    if len(row) != len(header):
        raise DatasetError(f"{where}: {len(row)} fields where the header has {len(header)}; quote fields that "
                           "contain commas.")
    item: Item = dict(zip(header, row, strict=True))
    if _CHECKS in item:
        _declare_checks(item, where)
    if _CONVERSATION in item:
        _declare_conversation(item, where)
    return item
