"""A run on another version of a stored dataset than its baseline: the identity change says by how much."""

from __future__ import annotations

from ..results._evaluation_identity import EvaluationIdentity, IdentityChange
from ..store import Store
from ._versions import version_diff


def with_version_diffs(store: Store, a: EvaluationIdentity | None, b: EvaluationIdentity | None,
                       changes: list[IdentityChange]) -> list[IdentityChange]:
    """`changes` with a dataset version change (`qa@1 -> qa@2`) naming its diff counts (`1 added, 0 removed,
    1 changed`), when both runs read versions of the same stored dataset that the store still holds."""
    if a is None or b is None or a.dataset.name is None or a.dataset.name != b.dataset.name:
        return changes
    if a.dataset.version is None or b.dataset.version is None or a.dataset.version == b.dataset.version:
        return changes
    held = {v["version"] for v in store.dataset_versions(a.dataset.name)}
    if not {a.dataset.version, b.dataset.version} <= held:
        return changes
    counts = version_diff(store, a.dataset.name, a.dataset.version, b.dataset.version).counts_text()
    return [c.model_copy(update={"text": c.text.replace(f"{a.dataset.ref} -> {b.dataset.ref}",
                                                        f"{a.dataset.ref} -> {b.dataset.ref}: {counts}", 1)})
            if c.part == "dataset" else c for c in changes]
