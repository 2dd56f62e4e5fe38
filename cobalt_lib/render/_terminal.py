"""The live terminal reporter: header, one line per item (or a progress bar), summary, gates."""

from __future__ import annotations

import sys
import threading
from typing import IO, TYPE_CHECKING, Any

from rich import box
from rich.panel import Panel
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn
from rich.table import Table
from rich.text import Text

from .._numbers import count, duration, money, score, seconds, threshold
from ..results._direction import mark_words, passes
from ..results._repeats import item_label
from ..results._report import ExperimentReport, ItemResult
from ._console import plain_console

if TYPE_CHECKING:
    from ..run._plan import RunPlan

#: Above this many agent calls, a progress bar replaces the line per item.
LINE_LIMIT = 50


_fmt = score


def _listed(labels: list[str], limit: int = 20) -> str:
    """The first `limit` labels, then how many more there are."""
    more = f" and {len(labels) - limit} more" if len(labels) > limit else ""
    return ", ".join(labels[:limit]) + more


def _label(index: int, run_index: int, repeats: int) -> str:
    """`#3`; with repeats, `#3:2` for item 3's run index 2 (as the pages, Dagster and `cobalt show 3:2`)."""
    return "#" + item_label(index, run_index, repeats)


class _Findings:
    """What the summary says about single items: scores under their pass mark per evaluator, failed
    agent calls (item indices), eval-errors per evaluator (item indices, the first message)."""

    def __init__(self) -> None:
        self.judged = False  # a model-backed evaluator ran, even if every judge call failed
        self.low: dict[str, list[tuple[int, int]]] = {}
        self.failed: list[int] = []
        self.errors: dict[str, tuple[list[int], str]] = {}


class TerminalReporter:
    """An Observer that prints a run as it happens. `ci=True`: compact, no colour, no live redraw."""

    def __init__(self, file: IO[str] | None = None, *, ci: bool = False, width: int | None = None,
                 force_terminal: bool | None = None) -> None:
        out = file or sys.stdout
        self.ci = ci
        self.console = plain_console(file=out, width=width, force_terminal=False if ci else force_terminal,
                                     no_color=ci, soft_wrap=True)
        self.live = self.console.is_terminal and not ci
        self._plain = not self.console.is_terminal  # asked once: rich calls isatty() on every ask
        self._lock = threading.Lock()
        self._progress: Progress | None = None
        self._task: Any = None
        self._judging: Any = None
        self._thresholds: dict[str, float] = {}
        self._done = 0
        self._total = 0
        self._reported: set[tuple[int, int]] = set()
        self._repeats = 1

    # -- Observer -------------------------------------------------------------------------------

    def on_start(self, plan: RunPlan) -> None:
        exp = plan.experiment
        self._thresholds = {e.name: e.threshold for e in plan.evaluators}
        self._total = plan.total_items * plan.runs
        self._repeats = plan.runs
        self._done = 0
        self._reported = set()
        n_eval = len(plan.evaluators)
        line = (f"{count(plan.total_items, 'item')} x {count(plan.runs, 'run')} x {count(n_eval, 'evaluator')}  |  "
                f"concurrency {plan.concurrency}  |  timeout {seconds(plan.timeout)}")
        if self.ci:
            self.console.print(f"cobalt run {exp.name} ({plan.run_id}): {line}")
        else:
            self.console.print(Panel(Text(line), title=Text.assemble(("cobalt", "bold"), f" {exp.name}"),
                                     subtitle=Text(plan.run_id), box=box.ROUNDED, expand=False))
        if self.live and self._total > LINE_LIMIT:
            self._task = self._start_progress().add_task("running", total=self._total)

    def _start_progress(self, *, bar: bool = True) -> Progress:
        """The live display: the progress bar of a long run, or (`bar=False`) a line of text alone."""
        if self._progress is None:
            columns = (BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(), TextColumn("ETA"),
                       TimeRemainingColumn()) if bar else (TimeElapsedColumn(),)
            self._progress = Progress(TextColumn("[progress.description]{task.description}"), *columns,
                                      console=self.console, transient=True)
            self._progress.start()
        return self._progress

    def on_item(self, item: ItemResult) -> None:
        with self._lock:
            self._done += 1
            if self._task is not None and self._progress is not None:
                self._progress.advance(self._task)
            if (item.index, item.run_index) in self._reported:
                return
            many = self._total > LINE_LIMIT
            if (many and (self.live or self.ci)) and item.status == "ok" and not (self.ci and self._low(item)):
                return
            self._print(self.item_line(item))

    def on_judge_calls(self, in_flight: int, answered: int) -> None:
        """On a terminal, a live line counts the judge calls: until they answer, an item has no line to show."""
        if not self.live:
            return
        with self._lock:
            said = (f"judge: {count(in_flight, 'call')} in flight, {answered:,d} answered" if in_flight else
                    f"judge: {count(answered, 'call')} answered")
            first = self._judging is None
            if first:  # a long run's bar says it beside "running"; a short run gets a line of its own
                self._judging = self._task if self._task is not None else \
                    self._start_progress(bar=False).add_task(said, total=None)
            assert self._progress is not None
            shown = f"running  {said}" if self._judging is self._task else said
            self._progress.update(self._judging, description=shown)
            if first:  # shown at once, not at the next refresh: a slow judge is when it matters
                self._progress.refresh()

    def _print(self, line: Text) -> None:
        if self._progress is None and self._plain:
            # Not a terminal (a pipe, a log file): no colour and no wrapping, so the plain text is what
            # rich would write, at a tenth of its cost (it was 0.1 ms an item, a fifth of a fast run's CPU).
            self.console.file.write(line.plain + "\n")
            return
        (self._progress.console if self._progress is not None else self.console).print(line)

    def on_finish(self, report: ExperimentReport) -> None:
        with self._lock:
            if self._progress is not None:
                self._progress.stop()
                self._progress = None
            self._task = self._judging = None
        self.print_summary(report)

    # -- rendering -------------------------------------------------------------------------------

    def _low(self, item: ItemResult) -> list[str]:
        return [name for name, ev in item.evaluations.items()
                if ev.status == "ok" and ev.score is not None
                and not passes(name, ev.score, self._thresholds.get(name, 0.5))]

    def item_line(self, item: ItemResult) -> Text:
        text = Text(f"{_label(item.index, item.run_index, self._repeats):>6} ")
        if item.status != "ok":
            mark = "✗ ERROR" if item.status == "error" else "⏱ TIMEOUT"
            text.append(f"{mark} ", style="bold red")
            # The first line whole, however long (the terminal wraps it): it often ends with the advice.
            text.append(item.error.splitlines()[0] if item.error else "", style="red")
            return text
        low = self._low(item)
        failed = any(ev.status != "ok" for ev in item.evaluations.values())  # an ERR is no pass
        text.append("⚠ " if low or failed else "✓ ", style="yellow" if low or failed else "green")
        for name, ev in item.evaluations.items():
            if ev.status != "ok":
                text.append(f"{name}=ERR ", style="red")
            else:
                style = "yellow" if name in low else ""
                text.append(f"{name}={_fmt(ev.score)}" + ("*" if ev.cached else "") + " ", style=style)
        text.append(f"({duration(item.latency_ms)})", style="dim")
        return text

    def print_summary(self, report: ExperimentReport) -> None:
        c = self.console
        s = report.summary
        table = Table(box=box.SIMPLE_HEAD if not self.ci else box.ASCII, show_edge=False, pad_edge=False)
        for column in ("evaluator", "avg", "min", "max", "p50", "p95", "n", "errors"):
            table.add_column(column, justify="left" if column == "evaluator" else "right")
        for name, st in s.scores.items():
            table.add_row(name, _fmt(st.avg), _fmt(st.min), _fmt(st.max), _fmt(st.p50), _fmt(st.p95),
                          str(st.count), str(st.errors))
        c.print(table)
        lat = s.metrics.get("latency")
        c.print(f"items {s.total_runs} ({s.ok} ok, {count(s.errors, 'error')}, {count(s.timeouts, 'timeout')})  |  "
                f"time {duration(s.total_duration_ms)}  |  avg latency {duration(s.avg_latency_ms)}"
                + (f"  |  p95 {duration(lat.p95)}" if lat and lat.p95 is not None else ""))
        # A rescore calls no agent, and the scores it carries over from its parent count as reused.
        rescore = "rescored" in report.config  # a run with a parent is not always a rescore
        agent = "not called (rescore)" if rescore else money(s.agent_cost)
        reused = "cached or carried over" if rescore else "cached"
        found = self._scan(report)
        if found.judged or s.judge_calls or s.cached_scores or s.judge_tokens:  # even if every judge call failed
            c.print(f"tokens {s.total_tokens} (agent {s.agent_tokens}, judge {s.judge_tokens})  |  "
                    f"cost: agent {agent}, judge {money(s.judge_cost)}  |  "
                    f"judge calls {s.judge_calls}, {reused} {s.cached_scores}")
        else:  # no model-backed evaluator ran: a "judge $0.0000" column would only be noise
            c.print(f"tokens {s.total_tokens}  |  cost: agent {agent}  |  no judge calls")
        self._print_warnings(report, found)
        for gate in report.assertions:
            mark = Text("PASS ", style="bold green") if gate.passed else Text("FAIL ", style="bold red")
            c.print(Text.assemble("gate ", mark, gate.name, Text(f"  {gate.message}", style="dim")))
        status = "" if report.status == "completed" else f" [{report.status}]"
        c.print(f"results: {report.results_path}")
        c.print(f"run id:  {report.id}{status}")

    def _scan(self, report: ExperimentReport) -> _Findings:
        """What the summary lists about the items, in one pass: a run's own report reads its items back
        from disk, so every pass parses each of them again."""
        found = _Findings()
        for item in report.items:
            for name in self._low(item) if self._thresholds else []:
                found.low.setdefault(name, []).append((item.index, item.run_index))
            if item.status != "ok":
                found.failed.append(item.index)
            for name, ev in item.evaluations.items():
                found.judged = found.judged or bool(ev.judge_model)
                if ev.status == "eval-error":
                    indices, _ = found.errors.setdefault(name, ([], ev.error or ev.reason or "no message"))
                    indices.append(item.index)
        return found

    def _print_warnings(self, report: ExperimentReport, found: _Findings) -> None:
        for name, keys in found.low.items():
            labels = [_label(i, r, self._repeats) for i, r in sorted(set(keys))]
            word, sign = mark_words(name)
            self.console.print(Text(f"⚠ {word} {name} ({sign} {threshold(self._thresholds[name])}): {_listed(labels)}",
                                    style="yellow"))
        # With runs > 1: the items that passed in some runs and not in others are the unreliable ones.
        flaky = [f"#{spread.index} {name} {round((st.pass_rate or 0) * spread.runs)} of {spread.runs} passed"
                 for spread in report.summary.per_item for name, st in spread.evaluators.items()
                 if st.pass_rate is not None and 0 < st.pass_rate < 1]
        if flaky:
            self.console.print(Text(f"⚠ flaky (passed in some runs, not all): {_listed(flaky)}", style="yellow"))
        if found.failed:
            shown = ", ".join(f"#{i}" for i in found.failed[:20])
            self.console.print(Text(f"✗ {count(len(found.failed), 'agent call')} failed: {shown}", style="red"))
        for name, (indices, message) in found.errors.items():  # an ERR cell alone would leave the user without the why
            shown = _listed([f"#{i}" for i in sorted(set(indices))])
            first = " ".join(message.split())
            first = first if len(first) <= 160 else first[:157] + "..."
            self.console.print(Text(f"✗ {name}: {count(len(indices), 'evaluation error')} ({shown}); first: {first}",
                                    style="red"))
