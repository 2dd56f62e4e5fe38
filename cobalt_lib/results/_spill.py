"""A run's finished items on disk, so its memory stays flat in the number of items.

`ItemSpill` appends each finished item's JSON to an unnamed temporary file (unlinked from the start,
so nothing is left behind, whatever way the process ends) in the results directory, never in /tmp,
which may be memory. `StoredItems` is the read-only `Sequence[ItemResult]` a run's report holds:
every access reads the item back from that file.
"""

from __future__ import annotations

import contextlib
import operator
import os
import tempfile
from array import array
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import IO, Any, overload

from ._report import ItemResult


class _Unnamed:
    """The spill file, closed (quietly, not as a leaked file) when the last of the spill and the
    `StoredItems` reading it lets go of it: it outlives any `with` block."""

    def __init__(self, directory: Path) -> None:
        try:
            directory.mkdir(parents=True, exist_ok=True)
            self.file: IO[bytes] = tempfile.TemporaryFile(dir=directory, prefix=".items-")  # noqa: SIM115
        except OSError:  # an unwritable results directory fails the save, with its own message, later
            self.file = tempfile.TemporaryFile(prefix="cobalt-items-")  # noqa: SIM115

    def __del__(self) -> None:
        file = getattr(self, "file", None)  # None: creating it failed, and that error was raised
        if file is not None:
            with contextlib.suppress(OSError):  # a full disk: the last flush fails; the run said so already
                file.close()


class ItemSpill:
    """Finished items as indented JSON (as the results file holds them), in the order they finished."""

    def __init__(self, directory: Path) -> None:
        self._holder = _Unnamed(directory)
        self._file = self._holder.file
        self._end = 0
        self._offsets = array("q")
        self._lengths = array("q")
        self._keys: list[array[int]] = [array("q"), array("q")]  # index, run_index

    def __len__(self) -> int:
        return len(self._offsets)

    def append(self, item: ItemResult) -> None:
        self.append_json(item.model_dump_json(indent=2).encode("utf-8"), item.index, item.run_index)

    def append_json(self, data: bytes, index: int, run_index: int) -> None:
        """An item already as its indented JSON (a Dagster shard's, `run._partials`): written as given."""
        try:
            self._file.write(data)
        except BaseException:
            self._file.seek(self._end)  # no half-written item: the next one starts where this one did
            self._file.truncate()
            raise
        self._offsets.append(self._end)
        self._lengths.append(len(data))
        self._keys[0].append(index)
        self._keys[1].append(run_index)
        self._end += len(data)

    def items(self) -> StoredItems:
        """What was appended so far, sorted by (index, run_index) as a results file holds them."""
        self._file.flush()
        index, run_index = self._keys
        if all((index[p - 1], run_index[p - 1]) <= (index[p], run_index[p]) for p in range(1, len(self))):
            # Already in order (read from the store, say): no sort keys, which cost ~100 bytes an item.
            return StoredItems(self._holder, array("q", self._offsets), array("q", self._lengths))
        order = sorted(range(len(self)), key=lambda p: (index[p], run_index[p]))
        return StoredItems(self._holder, array("q", (self._offsets[p] for p in order)),
                           array("q", (self._lengths[p] for p in order)))


class StoredItem(ItemResult):
    """An item of a run's own report, read back from disk: read-only, since a change to it could not
    stick (the next access reads the item again). Equal to an `ItemResult` with the same fields."""

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(
            f"report.items[...].{name} cannot be set: a run's items are read back from its results on each access, "
            f"so the change would be lost; make a changed copy with item.model_copy(update={{{name!r}: ...}}).")

    def __delattr__(self, name: str) -> None:
        self.__setattr__(name, None)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, ItemResult):
            return self.__dict__ == other.__dict__
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]


class StoredItems(Sequence[ItemResult]):
    """A run's items, read-only, each read back from disk when it is asked for.

    Indexing, slicing (a list), iteration and `len` work as on a list; equality compares the items.
    Each item read is a fresh, read-only object (about 15 us to parse one): setting one of its fields
    raises AttributeError saying so (a change could not stick), and code that reads one item many times
    should keep it in a variable. It pickles and serialises as a plain list; a copy is the same sequence.
    """

    def __init__(self, holder: _Unnamed, offsets: array[int], lengths: array[int]) -> None:
        self._holder = holder  # the file stays open as long as the sequence lives
        self._fileno = holder.file.fileno()
        self._offsets = offsets
        self._lengths = lengths
        #: Per evaluator, (outputs given, outputs scored), as the run counted them while its items finished:
        #: what the "every evaluator scored" gate needs, without reading every item back.
        self.scored_counts: dict[str, tuple[int, int]] | None = None

    def __len__(self) -> int:
        return len(self._offsets)

    @overload
    def __getitem__(self, key: int) -> ItemResult: ...

    @overload
    def __getitem__(self, key: slice) -> list[ItemResult]: ...

    def __getitem__(self, key: int | slice) -> ItemResult | list[ItemResult]:
        if isinstance(key, slice):
            return [self._parse(p) for p in range(len(self))[key]]
        position = operator.index(key)
        if position < 0:
            position += len(self)
        if not 0 <= position < len(self):
            raise IndexError(f"item {key} of {len(self)}: out of range")
        return self._parse(position)

    def __iter__(self) -> Iterator[ItemResult]:
        for position in range(len(self)):
            yield self._parse(position)

    def _parse(self, position: int) -> ItemResult:
        # No cache of parsed items: each read is a fresh, read-only object.
        return StoredItem.model_validate_json(self.raw(position))

    def __setitem__(self, key: object, value: object) -> None:
        raise TypeError("report.items cannot be changed: a run's items are read back from its results on each "
                        "access; build a list of changed copies with item.model_copy(update={...}) instead.")

    def raw(self, position: int) -> bytes:
        """Item `position`'s JSON as the results file holds it (indented as a top-level object)."""
        return os.pread(self._fileno, self._lengths[position], self._offsets[position])

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Sequence) or isinstance(other, str | bytes):
            return NotImplemented
        return len(self) == len(other) and all(a == b for a, b in zip(self, other, strict=True))

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"StoredItems({len(self)} items)"

    def __copy__(self) -> StoredItems:
        return self  # read-only: a copy would be the same

    def __deepcopy__(self, memo: dict[int, Any]) -> StoredItems:
        return self

    def __reduce__(self) -> tuple[Any, ...]:
        return (list, (list(self),))
