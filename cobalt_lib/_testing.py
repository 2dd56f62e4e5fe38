"""Hooks tests use to interrupt a run at an exact moment, inert unless `COBALT_TESTING` is set."""

from __future__ import annotations

import os
import sys
import time


def pause_point(moment: str) -> None:
    """With `COBALT_TESTING` and `COBALT_TEST_PAUSE=moment`: say so on stderr, then wait (up to 60 s)
    so that a test's signal lands exactly here rather than wherever a sleep happened to end."""
    if not os.environ.get("COBALT_TESTING") or os.environ.get("COBALT_TEST_PAUSE") != moment:
        return
    print(f"cobalt-testing: paused at {moment}", file=sys.stderr, flush=True)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        time.sleep(0.01)


async def apause_point(moment: str) -> None:
    """`pause_point` inside an event loop: it waits without blocking the loop, so the signal's
    cancellation (asyncio's Ctrl-C handler cancels every task) lands at once."""
    if not os.environ.get("COBALT_TESTING") or os.environ.get("COBALT_TEST_PAUSE") != moment:
        return
    import asyncio

    print(f"cobalt-testing: paused at {moment}", file=sys.stderr, flush=True)
    await asyncio.sleep(60)
