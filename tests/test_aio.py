"""`_aio.run`: Ctrl-C under someone else's SIGINT handler (Dagster's, inside a step)."""

from __future__ import annotations

import asyncio
import signal
from types import FrameType

import pytest

from cobalt_lib._aio import run


class Interrupted(BaseException):
    """What the foreign handler raises, like Dagster's DagsterExecutionInterruptedError."""


def test_ctrl_c_cancels_every_task_before_a_foreign_handler_raises() -> None:
    started: list[int] = []

    async def main() -> None:
        limit = asyncio.Semaphore(1)

        async def item(index: int) -> None:
            async with limit:
                started.append(index)
                if index == 0:
                    signal.raise_signal(signal.SIGINT)  # lands inside this task's frame, as a real Ctrl-C can
                    await asyncio.sleep(30)

        await asyncio.gather(item(0), item(1))

    def foreign(signum: int, frame: FrameType | None) -> None:
        raise Interrupted()

    previous = signal.signal(signal.SIGINT, foreign)
    try:
        with pytest.raises(Interrupted):
            run(main())
        assert signal.getsignal(signal.SIGINT) is foreign  # handed back
    finally:
        signal.signal(signal.SIGINT, previous)
    assert started == [0]  # the queued item never started after the interrupt


def test_a_value_comes_back_under_a_foreign_handler() -> None:
    previous = signal.signal(signal.SIGINT, lambda signum, frame: None)
    try:
        assert run(asyncio.sleep(0, result=42)) == 42
    finally:
        signal.signal(signal.SIGINT, previous)


def test_the_stage_runner_works_from_inside_a_running_loop() -> None:
    """Dagster's stage assets run their coroutines through it; a caller already inside an event loop
    (an MCP server's handler, a notebook) must not meet `asyncio.run`'s refusal."""
    import asyncio
    import threading

    from cobalt_lib.run import run_coroutine

    async def stage() -> str:
        await asyncio.sleep(0)
        return threading.current_thread().name

    async def caller() -> str:
        return run_coroutine(stage())

    assert asyncio.run(caller()).startswith("cobalt-run")  # on a helper thread's fresh loop
    assert run_coroutine(stage()) == threading.current_thread().name  # no loop running: right here


def test_cobalt_event_loop_chooses_uvloop_and_refuses_what_it_does_not_know(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from cobalt_lib import ConfigError

    async def loop_name() -> str:
        return type(asyncio.get_running_loop()).__module__

    monkeypatch.setenv("COBALT_EVENT_LOOP", "uvloop")
    assert run(loop_name()).startswith("uvloop")
    monkeypatch.setenv("COBALT_EVENT_LOOP", "asyncio")
    assert run(loop_name()).startswith("asyncio")
    monkeypatch.setenv("COBALT_EVENT_LOOP", "trio")
    with pytest.raises(ConfigError, match="COBALT_EVENT_LOOP='trio' is not an event loop"):
        run(loop_name())
