"""Monitors: which production traces, what share of them, judged by which evaluators, per window.

    monitor("support-bot", traces={"service.name": "support-bot", "span": "invoke_agent support"},
            sample=0.05, evaluators=[...], window="1d", budget_usd=5)

A window (a UTC day `2026-12-01`, or an hour `2026-12-01T14`) is scored as one run of the store
(`source = "monitor"`, id `monitor-<name>-<window>`) that history, show, compare, trends and MCP read as
any run: the window's sampled traces are its items (the trace's input, its recorded output replayed as
the agent's, no agent call), the monitor's evaluators score them. A multi-turn trace is a conversation
item whose recorded answers are replayed turn by turn (`window_item`): conversations score as
conversations, per turn and whole, as in an experiment. With a trace evaluator among the monitor's (a kind
whose `reads_spans`), each item carries its trace's stored spans as an experiment item carries its agent
call's (`run.Recorded`), read for the whole window in one query. The sample is deterministic: a trace is
in it when the hash of (monitor, trace id) falls under `sample`, so every scoring of a window judges the
same traces, and scoring a window again replaces its run (no double rows).

The judge spend of a window stops at `budget_usd`: once the scores so far cost that much, the run stops
and is stored `incomplete`, its summary saying the budget ran out, never silently partial.
"""

from __future__ import annotations

import functools
import hashlib
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from .._errors import ConfigError
from .._numbers import money
from ._trace import ProductionTrace, from_summary, ordered_spans, read_trace

if TYPE_CHECKING:
    from ..config._config import Config
    from ..evaluators import Evaluator
    from ..results._report import ItemResult
    from ..results._spans import SpanRecord
    from ..store import Store

#: Every monitor declared in this process, by name (as experiments are).
MONITORS: dict[str, Monitor] = {}
_WINDOWS = {"1d": timedelta(days=1), "1h": timedelta(hours=1)}
_NAME = re.compile(r"^[A-Za-z0-9_.-]+$")
#: The summary columns a window's scoring reads (`window_traces(scored_only=True)`).
_SCORED = ("service", "start_ns", "failed", "input", "output", "conversation")


@dataclass(frozen=True)
class Monitor:
    name: str
    #: `service.name` and `span` (a span name the trace must hold); either may be left out.
    traces: Mapping[str, str]
    sample: float
    evaluators: Sequence[Evaluator]
    window: str = "1d"
    budget_usd: float | None = None
    #: How many earlier windows the drift test compares a window with (`_drift`).
    baseline: int = 14
    tags: Sequence[str] = field(default_factory=tuple)
    #: The first window (a UTC date): where the Dagster partitions start.
    start: str = "2026-01-01"

    @property
    def service(self) -> str | None:
        return self.traces.get("service.name")

    @property
    def span(self) -> str | None:
        return self.traces.get("span")


def monitor(name: str, *, traces: Mapping[str, str], sample: float = 1.0, evaluators: Sequence[Evaluator],
            window: str = "1d", budget_usd: float | None = None, baseline: int = 14,
            tags: Sequence[str] = (), start: str = "2026-01-01") -> Monitor:
    """Declare a monitor (beside experiments, in a `*.cobalt.py` file); returns it."""
    where = f"monitor({name!r})"
    if not _NAME.match(name):
        raise ConfigError(f"{where}: a monitor's name is letters, digits, '.', '_' and '-'.")
    unknown = sorted(set(traces) - {"service.name", "span"})
    if unknown:
        raise ConfigError(f"{where}: traces={{...}} takes 'service.name' and 'span', not {unknown[0]!r}.")
    if not 0 < sample <= 1:
        raise ConfigError(f"{where}: sample={sample} must be a share of the traces, above 0 and at most 1.")
    if window not in _WINDOWS:
        raise ConfigError(f"{where}: window={window!r} must be '1d' (daily) or '1h' (hourly).")
    if budget_usd is not None and budget_usd <= 0:
        raise ConfigError(f"{where}: budget_usd={budget_usd} must be above 0 (leave it out for no budget).")
    if not evaluators:
        raise ConfigError(f"{where}: give it at least one evaluator.")
    if baseline < 3:
        raise ConfigError(f"{where}: baseline={baseline} must be at least 3 windows (their spread sets the limits).")
    try:
        datetime.strptime(start, "%Y-%m-%d")
    except ValueError:
        raise ConfigError(f"{where}: start={start!r} must be a date, YYYY-MM-DD (UTC).") from None
    declared = Monitor(name, dict(traces), sample, tuple(evaluators), window, budget_usd, baseline, tuple(tags),
                       start)
    MONITORS[name] = declared
    return declared


def sampled(name: str, trace_id: str, share: float) -> bool:
    """Whether the trace is in the monitor's sample: by a hash of both, so it is the same every time."""
    digest = hashlib.sha256(f"{name}\0{trace_id}".encode()).digest()
    return int.from_bytes(digest[:8], "big") < share * 2**64


def window_bounds(key: str, window: str = "1d") -> tuple[int, int]:
    """A window's [start, end) in Unix nanoseconds: `2026-12-01` (a UTC day) or `2026-12-01T14` (an hour)."""
    try:
        start = datetime.strptime(key, "%Y-%m-%d" if window == "1d" else "%Y-%m-%dT%H").replace(tzinfo=UTC)
    except ValueError:
        shape = "YYYY-MM-DD" if window == "1d" else "YYYY-MM-DDTHH"
        raise ConfigError(f"Window {key!r} is not a {window} window; name it {shape} (UTC).") from None
    end = start + _WINDOWS[window]
    return int(start.timestamp()) * 10**9, int(end.timestamp()) * 10**9


def window_key(when: datetime, window: str = "1d") -> str:
    return when.astimezone(UTC).strftime("%Y-%m-%d" if window == "1d" else "%Y-%m-%dT%H")


def window_run_id(name: str, key: str) -> str:
    return f"monitor-{name}-{key.replace(':', '')}"


def window_traces(mon: Monitor, key: str, config: Config, *, scored_only: bool = False,
                  with_spans: bool = False, store: Store | None = None) -> list[ProductionTrace]:
    """The window's sampled traces, in trace id order. `scored_only`: those read from their summaries carry
    what scoring them reads alone (their input, output, conversation, start and failure; no tool calls
    or usage). `with_spans`: every trace carries its stored spans (a trace read from its summary has none
    otherwise), all read in one query. `store`: the config's, when the caller has it open already (it
    remembers which tables it has)."""
    from ..store import Store

    store = store or Store.for_config(config)
    start, end = window_bounds(key, mon.window)
    with store.reading():  # the window's reads over one connection
        listed = store.trace_list(service=mon.service, span=mon.span, since_ns=start, until_ns=end)
        chosen = sorted(t["trace_id"] for t in listed if sampled(mon.name, t["trace_id"], mon.sample))
        counts = {t["trace_id"]: t["spans"] for t in listed}
        # a summary read from as many spans as the trace has stands for it; the others are read span by span
        summaries = store.trace_summaries_of(chosen, columns=_SCORED if scored_only else ())
        whole = {t: row for t, rows in summaries.items() for row in rows if row["spans"] == counts[t]}
        spans = store.trace_spans_of(chosen if with_spans else [t for t in chosen if t not in whole])
    services = {t["trace_id"]: t["service"] for t in listed}
    prices = {name: (p.input, p.output) for name, p in config.prices.items()}
    traces = [from_summary(whole[t], service=services.get(t), prices=prices) if t in whole else
              read_trace(t, spans.get(t, []), service=services.get(t), prices=prices) for t in chosen]
    if with_spans:
        traces = [replace(trace, spans=ordered_spans(spans.get(trace.trace_id, []))) if trace.trace_id in whole
                  else trace for trace in traces]
    return traces


@dataclass(frozen=True)
class WindowResult:
    run_id: str
    window: str
    traces: int
    status: str
    spent_usd: float
    #: Why the window is incomplete, when it is (its judge budget ran out).
    note: str | None = None


class _Budget:
    """An observer adding up the judge's spend; past the budget it stops the run (kept `incomplete`)."""

    def __init__(self, run_id: str, budget: float | None, started: Callable[[], None] | None = None) -> None:
        self.run_id, self.budget, self.spent, self.started = run_id, budget, 0.0, started

    def on_start(self, plan: Any) -> None:
        if self.started is not None:
            self.started()

    def on_item(self, item: ItemResult) -> None:
        from ..run import RunInterrupted

        self.spent += sum(e.cost_usd or 0.0 for e in item.evaluations.values())
        if self.budget is not None and self.spent >= self.budget:
            raise RunInterrupted(self.run_id)

    def on_finish(self, report: Any) -> None:
        pass


def score_window(mon: Monitor, key: str, config: Config) -> WindowResult:
    """Score the window's sampled traces with the monitor's evaluators, as the run `window_run_id`
    (replacing an earlier scoring of the window)."""
    from ..store import Store

    run_id = window_run_id(mon.name, key)
    store = Store.for_config(config)
    # a trace evaluator (has_span, max_model_calls, source="trace"...) scores the production trace's spans
    with_spans = any(e.kind.reads_spans for e in mon.evaluators)
    # The window's reads and its run's first write (its `running` row) share one open of a DuckDB file, held
    # until the run starts: a fraction of a second in which other processes wait; an open and the checkpoint
    # at its close cost 30-60 ms, a twentieth of a 1,000-trace window's work.
    release = store.hold_open() if store.exists() else None
    try:
        return _score(mon, key, config, store, run_id, with_spans, release)
    finally:
        if release is not None:
            release()


def _score(mon: Monitor, key: str, config: Config, store: Store, run_id: str, with_spans: bool,
           started: Callable[[], None] | None) -> WindowResult:
    """`score_window` over `store`; `started` is called once the run has written its first row."""
    from ..experiments import Experiment
    from ..run import RunInterrupted

    with store.reading():  # one connection for the traces and the earlier scoring, if any
        traces = window_traces(mon, key, config, scored_only=True, with_spans=with_spans, store=store)
        scored_before = store.exists() and store.get_run(run_id) is not None
    if scored_before:  # a window scored once (the usual case) has nothing to replace: no write for it
        store.delete_runs([run_id])
    conversational = any(_scores_conversations(e) for e in mon.evaluators)
    items = [window_item(t, conversational=conversational) for t in traces]
    kept = config.traces.max_spans  # as many of a trace's spans as an experiment item keeps of its call's
    runner = _replaying({t.trace_id: t.spans[:kept] for t in traces}) if with_spans else _replay
    experiment = Experiment(mon.name, items, runner, evaluators=list(mon.evaluators),
                            tags=["monitor", f"window:{key}", f"baseline:{mon.baseline}", *mon.tags])
    budget = _Budget(run_id, mon.budget_usd, started)
    if not items:
        return WindowResult(run_id, key, 0, "empty", 0.0, f"No sampled traces in window {key}.")
    try:
        experiment.run(config=config, observer=budget, run_id=run_id, source="monitor")
    except RunInterrupted:
        note = (f"Window {key} is incomplete: its judge budget of {money(mon.budget_usd)} was spent "
                f"({money(budget.spent)}) before all {len(items)} sampled traces were scored.")
        store.note_run(run_id, "budget", note)
        return WindowResult(run_id, key, len(items), "incomplete", budget.spent, note)
    return WindowResult(run_id, key, len(items), "completed", budget.spent)


def window_item(trace: ProductionTrace, *, conversational: bool = False) -> dict[str, Any]:
    """The item a window scores a trace as. A trace whose conversation has more than one user turn (or any,
    when the monitor has a conversational evaluator, so a one-turn chat is not refused) is a conversation
    item: its user turns scripted, each answered with the answer it recorded, so the run's transcript is
    the trace's and conversation evaluators score it as they score an experiment's conversation."""
    production = {"trace_id": trace.trace_id, "output": trace.output, "service": trace.service}
    turns = _turns(trace)
    if len(turns) > 1 or (conversational and turns):
        return {"id": trace.trace_id, "input": turns[0][0], "conversation": {"turns": [u for u, _ in turns]},
                "production": {**production, "answers": [a for _, a in turns]}}
    return {"id": trace.trace_id, "input": trace.input, "production": production}


def _turns(trace: ProductionTrace) -> list[tuple[str, str]]:
    """The conversation's (user message, the answer that turn ended with) pairs; the last answer the
    trace's output when its messages stop at the user's."""
    pairs: list[list[str]] = []
    for message in trace.conversation:
        if message["role"] == "user":
            pairs.append([message["content"], ""])
        elif message["role"] == "assistant" and pairs and message["content"]:
            pairs[-1][1] = message["content"]  # after tool calls, the turn's last words are its answer
    if pairs and not pairs[-1][1] and isinstance(trace.output, str):
        pairs[-1][1] = trace.output
    return [(user, answer) for user, answer in pairs]


def _scores_conversations(evaluator: Evaluator) -> bool:
    from ..evaluators._conversational import Conversational

    return isinstance(getattr(evaluator, "kind", None), Conversational)


def _replay(ctx: Any, spans: Mapping[str, Sequence[SpanRecord]] | None = None) -> Any:
    """The agent of a window's run: the output the trace recorded (no agent call); on a conversation's
    turn, the answer the trace recorded for that turn. With `spans` (by trace id), the answer carries its
    trace's spans (on a conversation's last turn), the item's spans as a traced agent call's are."""
    production = ctx.item["production"]
    turn = getattr(ctx, "turn", None)
    answers = production.get("answers")
    answer, last = production["output"], True
    if turn is not None and answers:
        answer, last = answers[turn - 1], turn == len(answers)
    if spans is None or not last:
        return answer
    from ..run import Recorded

    return Recorded(answer, spans.get(production["trace_id"], ()))


def _replaying(spans: Mapping[str, Sequence[SpanRecord]]) -> Any:
    """`_replay` with the window's spans; wrapped, so the run's agent identity stays `_replay`'s."""

    @functools.wraps(_replay)
    def replay(ctx: Any) -> Any:
        return _replay(ctx, spans)

    return replay
