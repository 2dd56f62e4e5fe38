"""Running a plan: items streamed through the stages with bounded concurrency, rows written as they finish.

The library path (`execute`) takes each item from agent to evaluators as soon as it can; the Dagster
assets run one stage over every item (`stream` with `agent_step`, then with `rescore_step`).
"""

from __future__ import annotations

import asyncio
import contextlib
import secrets
import sys
import time
from collections.abc import Awaitable, Callable, Iterable, Iterator, Sequence
from typing import Any, Generic, Literal, Protocol, TypeVar, overload

from .._errors import StoreError
from .._files import disk_full
from .._testing import apause_point
from .._timeouts import FinishedWhileCancelled
from ..results._report import ExperimentReport, ItemResult
from ..results._results_file import write_results
from ..results._rows import aggregate_rows, output_row, run_row, score_rows, span_rows, verdict_rows
from ..store._journal import Journal, left_work, replay_left, stalled
from ..store._liveness import claimed
from ..store._writer import BatchWriter
from ._gc import collector_tuned_for_a_run
from ._lease import lease
from ._plan import RunPlan
from ._requests import FailedItemsRun, FreshRun, RescoreRun, ResumeRun
from ._session import Observer, Session, batch_delay
from ._stages import FinishedItems, build_report, item_keys, produce, score

T = TypeVar("T")


class _ObserverStopped(Exception):
    """An observer stopped the run (a `RunInterrupted` from `on_item`, as a judge budget does), carried out
    of the item's task as an Exception: a KeyboardInterrupt raised in a task leaves the event loop at once,
    with the stage's lease, writer and agent threads still running behind the caller's back."""

    def __init__(self, interrupted: RunInterrupted) -> None:
        super().__init__(interrupted.run_id)
        self.interrupted = interrupted


class RunInterrupted(KeyboardInterrupt):
    """Ctrl-C stopped the run `run_id`; what finished is kept and the run is stored as `status`."""

    def __init__(self, run_id: str, status: str = "incomplete") -> None:
        super().__init__(run_id, status)
        self.run_id = run_id
        self.status = status


async def bounded(args: Iterable[T], limit: int, fn: Callable[[T], Awaitable[None]]) -> None:
    """Run `fn` over `args` with at most `limit` in flight; memory stays flat in the number of args."""
    slots = asyncio.Semaphore(limit)
    tasks: set[asyncio.Task[None]] = set()
    failure: list[BaseException] = []

    def done(task: asyncio.Task[None]) -> None:
        tasks.discard(task)
        slots.release()
        if not task.cancelled() and task.exception() is not None:
            failure.append(task.exception())  # type: ignore[arg-type]

    try:
        for arg in args:
            await slots.acquire()
            if failure:
                break
            task: asyncio.Task[None] = asyncio.create_task(fn(arg))  # type: ignore[arg-type]
            tasks.add(task)
            task.add_done_callback(done)
        while tasks and not failure:
            await asyncio.wait(set(tasks), return_when=asyncio.FIRST_EXCEPTION)
        if failure:
            raise failure[0]
    finally:
        for task in list(tasks):
            task.cancel()
        if tasks:
            await asyncio.gather(*tasks, return_exceptions=True)


def save(plan: RunPlan, report: ExperimentReport) -> None:
    """Write the results JSON, then the run row, aggregates and verdicts in one transaction. When another
    process holds the store past its lock timeout, the rows wait on disk (`Journal`) and this says so."""
    report.results_path = str(write_results(report, plan.config.output_path / "results"))
    store = plan.store
    journal = Journal(store, f"finish-{plan.run_id}-{secrets.token_hex(4)}")
    try:
        store.finish_run(run_row(report, finished=True), aggregate_rows(report), verdict_rows(report), via=journal)
    finally:
        journal.close()
    if not len(journal):
        replay_left(store, wait=0.0, quiet=True)  # a stage's rows the store was too busy for, if any
    if (holder := stalled(store)) is not None:
        print(f"cobalt: the results store {store.where} {_held(holder)}: run "
              f"{plan.run_id} is complete in {report.results_path}, and its rows wait in "
              f"{journal.directory.parent} for the next cobalt command to put them into the store.", file=sys.stderr)


def _held(holder: str) -> str:
    """Why the store did not take the rows: another process holds its file, or its server cannot be reached."""
    if holder.startswith("unreachable"):
        return f"could not be reached ({holder.removeprefix('unreachable: ')})"
    return f"is still held by another process ({holder})"


def start_run(plan: RunPlan) -> None:
    """Record the run as `running` before any agent call. The library path claims the run for this
    process (a fenced lease: `Store.start_run`); a Dagster run's steps, in many processes, share its lease."""
    claim = plan.source != "dagster"
    pending = ExperimentReport(id=plan.run_id, name=plan.experiment.name, timestamp=plan.timestamp,
                               status="running", source=plan.source, parent_run_id=plan.parent_run_id,
                               tags=plan.tags, config=plan.describe(),
                               variant=plan.variant.name if plan.variant else None, group_id=plan.group_id)
    if isinstance(plan.request, FreshRun | FailedItemsRun | RescoreRun):
        # A new run id: its evaluation identity goes in with its row, one transaction.
        plan.store.start_run(run_row(pending, finished=False), identity=plan.measured_with().model_dump(mode="json"),
                             claim=claim)
        return
    plan.store.start_run(run_row(pending, finished=False), claim=claim)
    # A resumed run, or a run Dagster launched, keeps the identity stored when it first started.
    plan.identity = plan.store.keep_identity(plan.run_id, plan.measured_with)


Step = Callable[[Session, T], Awaitable[ItemResult]]


class Counted:
    """What a stage keeps of its items when their rows are all that is wanted: how many finished
    (a Dagster shard, whose rows go to its own files, holds none of its items in memory)."""

    def __init__(self) -> None:
        self.count = 0

    def __len__(self) -> int:
        return self.count

    def append(self, item: ItemResult) -> None:
        self.count += 1


class RowWriter(Protocol):
    """Where a stage's rows go: the store (`BatchWriter`, the default) or a shard's own files."""

    def add(self, table: str, row: dict[str, Any]) -> None: ...

    def close(self, *, work: tuple[str, float] | None = None) -> float | None: ...


Collected = TypeVar("Collected", list[ItemResult], FinishedItems, Counted)


@overload
async def stream(plan: RunPlan, keys: Iterable[T], step: Step[T], *, tables: Sequence[str],
                 observer: Observer | None = None, into: None = None,
                 worked: list[float] | None = None, writer: RowWriter | None = None,
                 ended: list[bool] | None = None) -> list[ItemResult]: ...


@overload
async def stream(plan: RunPlan, keys: Iterable[T], step: Step[T], *, tables: Sequence[str],
                 observer: Observer | None = None, into: Collected,
                 worked: list[float] | None = None, writer: RowWriter | None = None,
                 ended: list[bool] | None = None) -> Collected: ...


async def stream(plan: RunPlan, keys: Iterable[T], step: Step[T], *, tables: Sequence[str],
                 observer: Observer | None = None, into: list[ItemResult] | FinishedItems | Counted | None = None,
                 worked: list[float] | None = None, writer: RowWriter | None = None,
                 ended: list[bool] | None = None) -> list[ItemResult] | FinishedItems | Counted:
    """Run `step` over `keys` (bounded), writing each finished item's rows to `tables` as it finishes.

    Finished items land in `into` (a list, or the library path's `FinishedItems` on disk) and the
    store even when the stage is interrupted, and the time the stage worked is added to the run's
    stored working time either way; the new total is appended to `worked` when given. A `writer` of
    the caller's (a Dagster shard's files) takes the rows and the working time instead of the store.
    The run's lease is renewed while the stage works (`lease`). `ended` gets True once every key has
    finished and its rows are written, even when an interrupt lands after that (while the stage closes).
    """
    items: list[ItemResult] | FinishedItems | Counted = into if into is not None else []
    handed = _Handed(keys)
    to_store = writer is None
    rows: RowWriter = BatchWriter(plan.store, max_delay=batch_delay()) if writer is None else writer
    started = time.perf_counter()

    async def one(key: T) -> None:
        try:
            item = await step(session, key)
        except FinishedWhileCancelled as stopped:  # Ctrl-C after the agent answered: its output is kept
            if isinstance(stopped.item, ItemResult):
                items.append(stopped.item)
            raise
        if "scores" in tables:
            for row in score_rows(plan.run_id, item):
                rows.add("scores", row)
        items.append(item)
        handed.finished += 1
        if observer:
            try:
                observer.on_item(item)
            except RunInterrupted as stop:
                raise _ObserverStopped(stop) from None

    # A shard writing elsewhere renews the run's lease only where it can reach the store (a process on
    # this machine); a shard on another machine leaves the run to the steps that can (split, merge).
    renewing = lease(plan.store, plan.run_id) if to_store or plan.store.exists() else contextlib.nullcontext()
    try:
        with collector_tuned_for_a_run(), renewing:
            async with Session(plan) as session:
                if "outputs" in tables:
                    session.output_sink = lambda item: _add_output(rows, plan.run_id, item)
                counting = getattr(observer, "on_judge_calls", None)  # the live line counts judge calls
                unwatch = session.judge.watch(counting) if counting is not None else None
                try:
                    await bounded(handed, in_flight(plan, session), one)
                    await apause_point("stage-end")  # tests: an interrupt once every item finished
                except _ObserverStopped as stopped:  # now, in the stage's own task: every block below exits
                    raise stopped.interrupted from None
                finally:
                    if unwatch is not None:
                        unwatch()
    finally:
        work = (plan.run_id, (time.perf_counter() - started) * 1000)
        total = None
        try:
            total = rows.close(work=work)  # the last rows and the stage's working time in one transaction
            if ended is not None and handed.all_finished():
                ended.append(True)
        finally:
            if worked is not None and total is not None:
                worked.append(total)
            elif worked is not None and to_store:
                worked.clear()  # unknown now (the rows wait in a journal): finish works it out
    return items


class _Handed(Generic[T]):
    """The stage's keys, counting those handed out and those whose item finished: a stage whose every
    key finished is done, wherever an interrupt lands after its last item (in `bounded`'s wait, in the
    session's close)."""

    def __init__(self, keys: Iterable[T]) -> None:
        self._keys = iter(keys)
        self.handed = self.finished = 0
        self.exhausted = False

    def __iter__(self) -> Iterator[T]:
        for key in self._keys:
            self.handed += 1
            yield key
        self.exhausted = True

    def all_finished(self) -> bool:
        return self.exhausted and self.finished == self.handed


#: Items in flight at most while their judge calls wait on a batch: as many as one batch should hold.
BATCH_IN_FLIGHT = 10_000


def in_flight(plan: RunPlan, session: Session) -> int:
    """How many items a stage keeps in flight: enough to keep agents and judge busy, or, when the judge
    sends batches, enough to fill one (the agents' own limit still holds within)."""
    if session.judge.batch is not None:
        return BATCH_IN_FLIGHT
    return 2 * (plan.concurrency + plan.judge_concurrency)


def _add_output(rows: RowWriter, run_id: str, item: ItemResult) -> None:
    """The item's `outputs` row and its `spans` rows."""
    rows.add("outputs", output_row(run_id, item))
    for row in span_rows(run_id, item):
        rows.add("spans", row)


async def agent_step(session: Session, key: tuple[int, int]) -> ItemResult:
    try:
        item = await produce(session, *key)
    except FinishedWhileCancelled as stopped:  # the run was stopped as the agent answered: store it
        if isinstance(stopped.item, ItemResult):
            session.output_sink(stopped.item)
        raise
    session.output_sink(item)
    return item


async def full_step(session: Session, key: tuple[int, int]) -> ItemResult:
    # The output is stored before the judge runs: a crash while judging keeps the paid-for agent call.
    return await score(session, await agent_step(session, key))


async def rescore_step(session: Session, item: ItemResult) -> ItemResult:
    # Scores carried over from the stored run cost this run nothing: they count as reused (cached).
    kept = {name: ev.model_copy(update={"cached": True, "judge_calls": 0})
            for name, ev in item.evaluations.items() if name not in session.plan.scored}
    spans = item.spans or session.stored_spans(item)  # for the trace evaluators, and a rescore's own spans rows
    item = item.model_copy(update={"evaluations": kept, "spans": spans}, deep=True)
    session.output_sink(item)
    return await score(session, item)


async def execute(plan: RunPlan, observer: Observer | None = None) -> ExperimentReport:
    """The library path: each item goes agent -> evaluators as soon as it can; rows stream to the store.

    A RescoreRun calls no agent: only the evaluators run over the stored outputs, as a new run. A
    ResumeRun (after a crash or Ctrl-C) runs only what its stored items lack: items without an output
    go through agent and evaluators, outputs without every score are scored.
    """
    start_run(plan)
    with lease(plan.store, plan.run_id):  # until the run is saved: a killed process's run then expires
        try:
            return await _execute(plan, observer)
        except Exception as exc:
            if (full := disk_full(exc)) is None:
                raise
            raise StoreError(_kept_on_full_disk(plan, full)) from exc


def _kept_on_full_disk(plan: RunPlan, error: Exception) -> str:
    """One sentence for a run the disk filled up under: where, what was kept, how to finish it."""
    where = getattr(error, "filename", None) or plan.config.output_path
    with contextlib.suppress(StoreError):  # incomplete at once, if the disk has room for that much
        plan.store.renew_lease(plan.run_id, 0.0)
    try:
        kept = f"{plan.store.live_counts(plan.run_id)['done']} finished items kept in the store"
    except StoreError:
        kept = "its finished items kept in the store and under " + str(plan.config.output_path / "journal")
    return (f"The disk is full (no space left writing {where}): run {plan.run_id} stopped with {kept}; free some "
            f"space, then finish it with `cobalt run --resume {plan.run_id}`.")


async def _execute(plan: RunPlan, observer: Observer | None) -> ExperimentReport:
    if observer:
        observer.on_start(plan)
    request = plan.request
    done, unscored, missing = _resume_split(plan, request.items if isinstance(request, ResumeRun) else [])
    items = FinishedItems(plan.config.output_path / "results")
    for item in done:
        items.append(item)
    status: Literal["completed", "incomplete"] = "incomplete"
    worked: list[float] = []  # the run's stored working time after each stage
    ended: list[bool] = []  # True once the last stage's every item finished and was written
    try:
        if isinstance(request, RescoreRun):
            stored = sorted(request.outputs, key=lambda o: (o.index, o.run_index))
            await stream(plan, stored, rescore_step, tables=("outputs", "scores"), observer=observer, into=items,
                         worked=worked, ended=ended)
        else:
            if unscored:
                plan.store.delete_items(plan.run_id, "scores", [(i.index, i.run_index) for i in unscored])
                await stream(plan, unscored, rescore_step, tables=("scores",), observer=observer, into=items,
                             worked=worked)
            await stream(plan, missing, full_step, tables=("outputs", "scores"), observer=observer, into=items,
                         worked=worked, ended=ended)
        status = "completed"
    finally:
        if ended:  # Ctrl-C after the last item was written: the run is complete, and stored so
            status = "completed"
        report = finish(plan, items, status, worked_ms=worked[-1] if worked else None)
    await apause_point("after-finish")  # tests: an interrupt once the run is stored completed, before it is reported
    if observer:
        observer.on_finish(report)
    return report


def _resume_split(plan: RunPlan, stored: Sequence[ItemResult]) -> tuple[
        list[ItemResult], list[ItemResult], list[tuple[int, int]]]:
    """Stored items that are complete, stored ok outputs lacking a score, and keys never run."""
    wanted = {e.name for e in plan.evaluators}
    by_key = {(i.index, i.run_index): i for i in stored}
    done = [i for i in by_key.values() if i.status != "ok" or wanted <= set(i.evaluations)]
    unscored = [i for i in by_key.values() if i.status == "ok" and not wanted <= set(i.evaluations)]
    missing = [key for key in item_keys(plan) if key not in by_key]
    return done, unscored, missing


def finish(plan: RunPlan, items: Sequence[ItemResult] | FinishedItems,
           status: Literal["completed", "incomplete"], *, worked_ms: float | None = None) -> ExperimentReport:
    """Stages 3 and 4 and the final write: aggregates, verdicts, results JSON, run row.

    The run's duration is its stored working time: what every stage of every process that worked on
    it spent (`stream` adds each stage's), the same on the library and the Dagster path. A caller
    that has just read it (`worked_ms`) saves this a connection to the store.
    """
    try:
        duration_ms = plan.store.worked_ms(plan.run_id) if worked_ms is None else worked_ms
    except StoreError:
        if status == "completed" and stalled(plan.store) is None:
            raise
        duration_ms = 0.0  # the store's trouble is reported by the save below
    if worked_ms is None:
        duration_ms += left_work(plan.store, plan.run_id)  # what waits in journals, not in the store yet
    if plan.identity is None:  # a step that did not start the run (Dagster's aggregates): the stored one
        with contextlib.suppress(StoreError):  # else the store's row stays, and readers find it there
            plan.identity = plan.store.identities_of([plan.run_id]).get(plan.run_id)
    with collector_tuned_for_a_run():
        report = build_report(plan, items, duration_ms, status)
    if (claim := claimed(plan.store.key, plan.run_id)) is not None and claim.lost is not None:
        return report  # another process has the run now: it saves it, this one writes nothing more
    try:
        save(plan, report)
    except Exception as exc:
        if status == "completed" or disk_full(exc) is not None:  # a full disk is said once, by execute
            raise
        # Already failing: keep the original error, but say where the results could not go.
        print(f"cobalt: could not save the interrupted run {plan.run_id}: {exc}", file=sys.stderr)
    return report
