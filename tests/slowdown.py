"""How much longer than written a test may wait on this machine, now (issue 35).

A test waits on events wherever it can (a line on a pipe, a process's exit, a row in the store). Where
it must also give up (a server that never answers, a block that hangs), the seconds it writes are for a
quiet machine, and `scaled(seconds)` stretches them by the machine's measured slowdown: the wall time a
fixed piece of CPU work takes over the CPU time it takes, which is how long this process waits for a
core. That ratio is measured once per session (the baseline) and again when a deadline is made, and the
larger counts, so a suite that starts quiet and is then loaded by another one still scales. It is never
below 1, and the global hang guard (pytest-timeout, pyproject.toml) stays as the last resort.
"""

from __future__ import annotations

import statistics
import time

#: CPU seconds of one probe; five probes, their median.
_PROBE_CPU_S = 0.01
_PROBES = 5
#: Headroom on top of the measured ratio: a loaded machine's caches and disk are slower too.
_HEADROOM = 1.5
_BASELINE: list[float] = []


def _probe() -> float:
    """Wall over CPU time of a short busy loop: 1 on an idle core, about the run queue's length on a busy one."""
    wall, cpu = time.perf_counter(), time.process_time()
    while time.process_time() - cpu < _PROBE_CPU_S:
        pass
    return (time.perf_counter() - wall) / max(time.process_time() - cpu, 1e-9)


def measured() -> float:
    """The machine's slowdown right now (the median of a few probes)."""
    return statistics.median(_probe() for _ in range(_PROBES))


def slowdown() -> float:
    """The factor waits are stretched by: the larger of the session's baseline and the present reading."""
    if not _BASELINE:
        _BASELINE.append(measured())
    return max(1.0, _BASELINE[0], measured()) * _HEADROOM


def scaled(seconds: float) -> float:
    """`seconds` written for a quiet machine, as this machine needs them now."""
    return seconds * slowdown()


def deadline(seconds: float) -> float:
    """A `time.monotonic()` deadline `scaled(seconds)` from now."""
    return time.monotonic() + scaled(seconds)
