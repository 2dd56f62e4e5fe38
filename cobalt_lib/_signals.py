"""SIGTERM and SIGHUP (a closed terminal) during `cobalt run`: stop like Ctrl-C (finished items kept,
the run marked incomplete, the resume hint printed), then exit 143 (129) instead of 130."""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType

#: Set once SIGTERM or SIGHUP has stopped a guarded run: the CLI's exit code is then 128 + the signal's
#: number (`stopped_by`), not Ctrl-C's 130.
TERMINATED = threading.Event()
#: The signals handled as an interrupt.
_SIGNALS = (signal.SIGTERM, signal.SIGHUP)
_STOPPED_BY: list[int] = []
#: Set when a command has already said what an interrupt left behind (the resume hint), so the entry
#: point does not add its plain `interrupted` line.
EXPLAINED = threading.Event()
_guarding = threading.Event()


def _forward(signum: int, frame: FrameType | None) -> None:
    # Whatever handles Ctrl-C right now (asyncio's, which cancels every task at once; Dagster's inside a
    # step; Python's default) handles the termination too, so both end the same way.
    _STOPPED_BY[:] = [signum]
    TERMINATED.set()
    signal.raise_signal(signal.SIGINT)


def stopped_by() -> int | None:
    """The signal (SIGTERM or SIGHUP) that stopped a guarded run, if one did."""
    return _STOPPED_BY[0] if TERMINATED.is_set() and _STOPPED_BY else None


def _arm() -> dict[int, object]:
    """Point every handled signal at the forwarding; returns the handlers it replaced."""
    return {sig: signal.signal(sig, _forward) for sig in _SIGNALS}


def _restore(previous: dict[int, object]) -> None:
    for sig, handler in previous.items():
        signal.signal(sig, handler)  # type: ignore[arg-type]


def _in_main_thread() -> bool:
    return threading.current_thread() is threading.main_thread()


@contextmanager
def sigterm_as_interrupt() -> Iterator[None]:
    """Inside this block, SIGTERM and SIGHUP interrupt as Ctrl-C does and set `TERMINATED`."""
    if not _in_main_thread():
        yield
        return
    previous = _arm()
    _guarding.set()
    try:
        yield
    finally:
        _guarding.clear()
        _restore(previous)


@contextmanager
def forwarding_sigterm() -> Iterator[None]:
    """Re-arm the forwarding inside a guarded block for as long as this one lasts: Dagster maps SIGTERM
    to its own SIGINT handler while it executes a run, which would skip `TERMINATED`."""
    if not (_guarding.is_set() and _in_main_thread()):
        yield
        return
    previous = _arm()
    try:
        yield
    finally:
        _restore(previous)
