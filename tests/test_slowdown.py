"""The tests' deadline scaling (tests/slowdown.py): never shorter than written, and stretched by headroom."""

from __future__ import annotations

import time

from slowdown import deadline, scaled, slowdown


def test_a_scaled_wait_is_never_shorter_than_written() -> None:
    factor = slowdown()
    assert factor >= 1.5  # at least the headroom, on an idle machine too
    assert scaled(0) == 0 and scaled(10) >= 15
    before = time.monotonic()  # read first: the deadline is made from a clock read after it
    assert deadline(10) >= before + 15
