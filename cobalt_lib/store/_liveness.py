"""Run liveness: a `running` run holds a lease in the store, and reads `incomplete` once it expires.

The process doing a run's work renews the run's `lease_until` every third of the lease
(`cobalt_lib.run.lease`); a process that is killed, or lives in a container or on another host that
went away, stops renewing, and every reader then sees the run as `incomplete`. The lease lasts
`COBALT_LEASE_SECONDS` (default 60 s).

A run that a process claimed (`Store.start_run(..., claim=True)`: the library and CLI path) also
names its holder: `host`, `pid` and `holder` (the process's start time, boot and pid namespace, from
/proc). On that host, in that pid namespace, the process itself decides: a run whose process is gone
(or has ended its work on it) is free at once, and one whose process lives reads `running` even when
its lease lapsed (a reader held the store past the renewals). Elsewhere, the lease alone.

The claim is fenced: `lease_token` and `lease_epoch` (one more at each claim) are set by one
compare-and-set, and every write of the holder's rows checks them (`_segment.apply`): a process whose
run another took over writes nothing more (`LeaseLost`).

A `running` row without a lease (written by a cobalt from before leases) counts as leased until
its `started_at` plus one lease: an old run still going after that reads `incomplete`.
"""

from __future__ import annotations

import math
import os
import socket
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
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


def process_identity(pid: int) -> str | None:
    """`<pid namespace>:<boot id>:<start time in ticks>` of a process of this machine, None when there is
    no such process (or no /proc): a pid reused by a later process has another start time."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text(encoding="ascii", errors="replace")
    except OSError:
        return None
    fields = stat[stat.rfind(")") + 2:].split()  # after the command name, which may hold spaces
    return f"{_here()}:{fields[19]}" if len(fields) > 19 else None


def _here() -> str:
    """This process's pid namespace and the machine's boot: where a pid means one process."""
    global _HERE
    if _HERE is None:
        try:
            namespace = os.readlink("/proc/self/ns/pid")
        except OSError:
            namespace = "?"
        try:
            boot = Path("/proc/sys/kernel/random/boot_id").read_text(encoding="ascii").strip()
        except OSError:
            boot = "?"
        _HERE = f"{namespace}:{boot}"
    return _HERE


_HERE: str | None = None


def holder_fields() -> dict[str, Any]:
    """The run row's fields naming this process as its holder."""
    return {"pid": os.getpid(), "host": socket.gethostname(), "holder": process_identity(os.getpid())}


@dataclass
class Claim:
    """This process's claim on a run: the token and epoch its writes carry; `lost` says why it ended."""

    token: str
    epoch: int
    lost: str | None = None


#: Claims this process holds, by (store file, run_id); and those whose work is going on (a renewer runs).
_CLAIMS: dict[tuple[str, str], Claim] = {}
_WORKING: dict[tuple[str, str], int] = {}
_CLAIMS_LOCK = threading.Lock()


def claim_key(path: Path | str, run_id: str) -> tuple[str, str]:
    """A claim's key: the store's (`Store.key`: a DuckDB file's absolute path, or a Postgres URL) and the run's."""
    return (str(path.absolute()) if isinstance(path, Path) else path), run_id


def claimed(path: Path | str, run_id: str) -> Claim | None:
    """This process's claim on the run, if it holds one."""
    return _CLAIMS.get(claim_key(path, run_id))


def hold(path: Path | str, run_id: str, claim: Claim) -> None:
    with _CLAIMS_LOCK:
        _CLAIMS[claim_key(path, run_id)] = claim


def working(path: Path | str, run_id: str, on: bool) -> None:
    """Mark the start (`on`) or end of this process's work on a run (what a `lease` block spans)."""
    key = claim_key(path, run_id)
    with _CLAIMS_LOCK:
        count = _WORKING.get(key, 0) + (1 if on else -1)
        if count > 0:
            _WORKING[key] = count
        else:
            _WORKING.pop(key, None)


def fences(path: Path | str, run_ids: Iterable[str]) -> dict[str, tuple[int, str]]:
    """The (epoch, token) each write of these runs' rows carries: the runs this process claimed."""
    found = {}
    for run_id in run_ids:
        if (claim := claimed(path, run_id)) is not None:
            found[run_id] = (claim.epoch, claim.token)
    return found


def holder_alive(path: Path | str, row: dict[str, Any]) -> bool | None:
    """Whether the process holding a claimed run still works on it, when this process can tell (the row's
    holder is in this pid namespace on this boot of this machine); None when only its lease can say."""
    holder = row.get("holder")
    if not holder or not row.get("lease_token") or row.get("host") != socket.gethostname():
        return None
    if not str(holder).startswith(_here() + ":") or row.get("pid") is None:
        return None
    pid = int(row["pid"])
    if pid == os.getpid() and holder == process_identity(pid):  # this very process: it knows
        return claim_key(path, str(row["run_id"])) in _WORKING
    return process_identity(pid) == holder


def live(path: Path | str, row: dict[str, Any], now: datetime, seconds: float) -> bool:
    """Whether a `running` row's run is still worked on: its holder's process where this host can tell,
    else its lease."""
    alive = holder_alive(path, row)
    return (not expired(row, now, seconds)) if alive is None else alive


def gone(path: Path | str, rows: Iterable[dict[str, Any]], now: datetime, seconds: float) -> list[str]:
    """The run ids of the `running` rows no process works on any more (read `incomplete`)."""
    return [str(r["run_id"]) for r in rows if r.get("status") == "running" and not live(path, r, now, seconds)]
