"""Run liveness: a `running` run holds a lease in the store, and reads `incomplete` once it expires.

The process doing a run's work renews the run's `lease_until` every third of the lease
(`cobalt_lib.run.lease`); a process that is killed, or lives in a container or on another host that
went away, stops renewing, and every reader then sees the run as `incomplete`. No pid or host name
is consulted. The lease lasts `COBALT_LEASE_SECONDS` (default 60 s).

A `running` row without a lease (written by a cobalt from before leases) counts as leased until
its `started_at` plus one lease: an old run still going after that reads `incomplete`.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

from .._errors import ConfigError
from .._numbers import seconds as as_seconds

#: How long a lease lasts when `COBALT_LEASE_SECONDS` does not say.
DEFAULT_LEASE_SECONDS = 60.0
#: The environment variable that sets the lease length in seconds (tests shorten it).
LEASE_VARIABLE = "COBALT_LEASE_SECONDS"

Clock = Callable[[], datetime]


def utc_now() -> datetime:
    """The wall clock, timezone-aware in UTC: the default clock of stores and renewers."""
    return datetime.now(UTC)


def lease_seconds() -> float:
    """The lease length: `COBALT_LEASE_SECONDS` when set, else 60 s."""
    raw = os.environ.get(LEASE_VARIABLE, "").strip()
    if not raw:
        return DEFAULT_LEASE_SECONDS
    try:
        seconds = float(raw)
    except ValueError:
        seconds = math.nan
    if not math.isfinite(seconds) or seconds <= 0:
        raise ConfigError(f"{LEASE_VARIABLE}={raw!r} is not a positive number of seconds; unset it for the "
                          f"default ({as_seconds(DEFAULT_LEASE_SECONDS)}).")
    return seconds


def lease_end(now: datetime, seconds: float) -> datetime:
    return now + timedelta(seconds=seconds)


def expired(row: dict[str, Any], now: datetime, seconds: float) -> bool:
    """Whether a `running` row's lease has run out at `now` (a row without one: `started_at` + `seconds`)."""
    until = row.get("lease_until")
    if until is None:
        started = row.get("started_at")
        if started is None:
            return True
        if isinstance(started, str):
            started = datetime.fromisoformat(started)
        until = lease_end(_aware(started), seconds)
    return bool(_aware(until) < now)


def _aware(moment: datetime) -> datetime:
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)
