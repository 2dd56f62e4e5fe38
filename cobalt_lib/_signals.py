"""SIGTERM during `cobalt run`: stop like Ctrl-C (finished items kept, the run marked incomplete,
the resume hint printed), then exit 143 instead of 130."""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType

#: Set once SIGTERM has stopped a guarded run: the CLI's exit code is then 143, not Ctrl-C's 130.
TERMINATED = threading.Event()
#: Set when a command has already said what an interrupt left behind (the resume hint), so the entry
#: point does not add its plain `interrupted` line.
EXPLAINED = threading.Event()
_guarding = threading.Event()


def _forward(signum: int, frame: FrameType | None) -> None:
    # Whatever handles Ctrl-C right now (asyncio's, which cancels every task at once; Dagster's inside a
    # step; Python's default) handles the termination too, so both end the same way.
    TERMINATED.set()
    signal.raise_signal(signal.SIGINT)


def _in_main_thread() -> bool:
    return threading.current_thread() is threading.main_thread()


@contextmanager
def sigterm_as_interrupt() -> Iterator[None]:
    """Inside this block, SIGTERM interrupts as Ctrl-C does and sets `TERMINATED`."""
    if not _in_main_thread():
        yield
        return
    previous = signal.signal(signal.SIGTERM, _forward)
    _guarding.set()
    try:
        yield
    finally:
        _guarding.clear()
        signal.signal(signal.SIGTERM, previous)


@contextmanager
def forwarding_sigterm() -> Iterator[None]:
    """Re-arm the forwarding inside a guarded block for as long as this one lasts: Dagster maps SIGTERM
    to its own SIGINT handler while it executes a run, which would skip `TERMINATED`."""
    if not (_guarding.is_set() and _in_main_thread()):
        yield
        return
    previous = signal.signal(signal.SIGTERM, _forward)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
