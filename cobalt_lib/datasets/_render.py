"""The dataset commands' text: one line per version, a diff by item, a push's outcome."""

from __future__ import annotations

import json

from ._models import DatasetDiff, PushOutcome, ShownVersion, VersionInfo


def version_line(v: VersionInfo) -> str:
    """`qa@2  5 items  splits test 2, train 3  #1a2b3c4d5e6f7a8b  2026-12-02 04:40  (qa.jsonl)`."""
    splits = ", ".join(f"{name} {n}" for name, n in sorted(v.splits.items()))
    when = (v.created_at or "")[:16].replace("T", " ")
    parts = [v.ref, f"{v.items} item{'s' if v.items != 1 else ''}", f"splits {splits}" if splits else "",
             f"#{v.hash}", when, f"({v.source})" if v.source else "", v.note or ""]
    return "  ".join(p for p in parts if p)


def versions_text(versions: list[VersionInfo]) -> str:
    if not versions:
        return "No stored datasets yet; `cobalt dataset push NAME FILE.jsonl` stores one.\n"
    return "".join(version_line(v) + "\n" for v in versions)


def push_text(outcome: PushOutcome) -> str:
    v = outcome.version
    if not outcome.created:
        return f"{v.ref} already holds this content (#{v.hash}): no new version.\n"
    lines = [f"Stored {v.ref}: {v.items} item{'s' if v.items != 1 else ''} (#{v.hash})"]
    if outcome.added or outcome.already_in:
        lines.append(f"added {len(outcome.added)}: {', '.join(outcome.added)}" if outcome.added else "added none")
    if outcome.already_in:
        lines.append(f"already in the dataset, left as they were: {', '.join(outcome.already_in)}")
    return "".join(line + "\n" for line in lines)


def shown_text(shown: ShownVersion) -> str:
    lines = [version_line(shown.version)]
    if shown.split:
        lines.append(f"split {shown.split}")
    lines += [json.dumps(item, ensure_ascii=False)[:200] for item in shown.items]
    if shown.more:
        lines.append(f"... and {shown.more} more (`cobalt dataset export {shown.version.ref}` writes them all)")
    return "".join(line + "\n" for line in lines)


def diff_text(diff: DatasetDiff) -> str:
    lines = [f"{diff.dataset}@{diff.a} -> {diff.dataset}@{diff.b}: {diff.counts_text()}"]
    for mark, entries in (("+", diff.added), ("-", diff.removed), ("~", diff.changed)):
        lines += [f"{mark} {e.item_id}" for e in entries]
    return "".join(line + "\n" for line in lines)
