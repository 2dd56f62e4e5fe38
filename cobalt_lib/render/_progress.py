"""`cobalt run --progress-jsonl FILE`: one JSON line per event, for programs that follow a run (the MCP server).

    {"event": "start", "run_id": ..., "experiment": ..., "total": 8}
    {"event": "item", "run_id": ..., "experiment": ..., "done": 1, "total": 8, "index": 0, "run_index": 0,
     "status": "ok", "scores": {"exact": 1.0}, "message": "item 0: ok exact=1.00"}
    {"event": "finish", "run_id": ..., "experiment": ..., "status": "completed", "passed": true}

Each line is flushed as it is written, so a reader of a pipe sees every item as it finishes. The
observer wraps the terminal reporter (or nothing, with `--json`): what it prints is unchanged.
"""

from __future__ import annotations

import json
import threading
from typing import IO, TYPE_CHECKING, Any

from .._numbers import score

if TYPE_CHECKING:
    from ..results._report import ExperimentReport, ItemResult
    from ..run._plan import RunPlan
    from ..run._session import Observer


class ProgressLines:
    """An Observer writing JSON lines to `out`, and passing every event on to `inner`."""

    def __init__(self, out: IO[str], inner: Observer | None = None) -> None:
        self.out = out
        self.inner = inner
        self._lock = threading.Lock()
        self._run: dict[str, Any] = {}
        self._done = 0
        self._total = 0

    def on_start(self, plan: RunPlan) -> None:
        self._run = {"run_id": plan.run_id, "experiment": plan.experiment.name,
                     **({"variant": plan.variant.name, "group_id": plan.group_id} if plan.variant else {})}
        self._done = 0
        self._total = plan.total_items * plan.runs
        self._write({"event": "start", **self._run, "total": self._total})
        if self.inner is not None:
            self.inner.on_start(plan)

    def on_item(self, item: ItemResult) -> None:
        with self._lock:
            self._done += 1
            done = self._done
        scores = {name: ev.score for name, ev in item.evaluations.items()}
        shown = " ".join(f"{n}={'ERR' if s is None else score(s)}" for n, s in scores.items())
        message = f"item {item.index}" + (f".{item.run_index}" if item.run_index else "") + f": {item.status}"
        message += f" {shown}" if shown else (f" ({(item.error or '').splitlines()[0][:80]})" if item.error else "")
        self._write({"event": "item", **self._run, "done": done, "total": self._total, "index": item.index,
                     "run_index": item.run_index, "status": item.status, "scores": scores, "message": message})
        if self.inner is not None:
            self.inner.on_item(item)

    def on_judge_calls(self, in_flight: int, answered: int) -> None:
        counting = getattr(self.inner, "on_judge_calls", None)
        if counting is not None:
            counting(in_flight, answered)

    def for_plan(self, plan: RunPlan) -> ProgressLines:
        """The lines of one variant's run in a group: its own counts, the inner reporter's own observer."""
        split = getattr(self.inner, "for_plan", None)
        member = ProgressLines(self.out, split(plan) if split is not None else self.inner)
        member._lock = self._lock
        return member

    def on_finish(self, report: ExperimentReport) -> None:
        self._write({"event": "finish", **self._run, "status": report.status, "passed": report.passed})
        if self.inner is not None:
            self.inner.on_finish(report)

    def _write(self, event: dict[str, Any]) -> None:
        with self._lock:
            try:
                self.out.write(json.dumps(event, default=str, ensure_ascii=False) + "\n")
                self.out.flush()
            except (BrokenPipeError, ValueError):  # the reader went away: the run goes on without it
                pass
