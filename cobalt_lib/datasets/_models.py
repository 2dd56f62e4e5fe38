"""The records the dataset use cases return: a version, a push's outcome, a diff between two versions."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field


class VersionInfo(BaseModel):
    """One immutable version of a stored dataset."""

    dataset: str
    version: int
    #: The content hash of its items in order: a run reading the whole version records the same hash.
    hash: str
    items: int
    #: {split: item count}; empty when the version has no splits.
    splits: dict[str, int] = Field(default_factory=dict)
    source: str | None = None
    note: str | None = None
    created_at: str | None = None

    @property
    def ref(self) -> str:
        return f"{self.dataset}@{self.version}"


class PushOutcome(BaseModel):
    """What `push` or `add` did: the version it made, or the unchanged latest (`created` False)."""

    version: VersionInfo
    created: bool
    #: Items added from runs or labels (`add`); the identities already in the dataset, left as they were.
    added: list[str] = Field(default_factory=list)
    already_in: list[str] = Field(default_factory=list)


class DiffEntry(BaseModel):
    item_id: str
    change: str
    #: Positions in A and B (None where the item is absent).
    position_a: int | None = None
    position_b: int | None = None


class DatasetDiff(BaseModel):
    """How version B of a dataset differs from version A, item by item identity."""

    dataset: str
    a: int
    b: int
    added: list[DiffEntry] = Field(default_factory=list)
    removed: list[DiffEntry] = Field(default_factory=list)
    changed: list[DiffEntry] = Field(default_factory=list)

    def counts(self) -> dict[str, int]:
        return {"added": len(self.added), "removed": len(self.removed), "changed": len(self.changed)}

    def counts_text(self) -> str:
        """`2 added, 1 removed, 0 changed`."""
        return ", ".join(f"{n} {what}" for what, n in self.counts().items())


class ShownVersion(BaseModel):
    """A version with (the first of) its items, for `cobalt dataset show`."""

    version: VersionInfo
    split: str | None = None
    items: list[dict[str, Any]] = Field(default_factory=list)
    #: How many items the version (split) holds beyond those shown.
    more: int = 0
