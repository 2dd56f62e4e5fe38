"""What `cobalt serve` prints of its Dagster processes: their lines as they come, a failed gate on one line.

A run of an experiment's job logs through cobalt's console logger (`_logger`), which already prints a
failed gate on one line. A run of Dagster's own `__ASSET_JOB` (the asset graph's "Materialize", an asset
backfill: docs/dagster.md) cannot name a logger: Dagster gives a run whose config names none its
default console logger, which prints a failed step's error and stack trace below its line, and cobalt
has no say in that run's config. So `cobalt serve` reads the stderr of the processes it starts (the
code server's run workers print there) and trims the block of a step that failed on a cobalt gate to
its first line and the gate's verdict, as the experiment's job prints it (and the run's failure, which
repeats the step's error, likewise). Every other line, and the
stack trace of a step that crashed, passes unchanged.
"""

from __future__ import annotations

import os
import re
import select
import threading
from typing import IO, TextIO

#: A Dagster console line starts with its time (`%Y-%m-%d %H:%M:%S`); the lines of a block below it do not.
_HEADER = re.compile(r"^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}")
#: The failed gate's `Failure` in the block's error (`_stages.check` raises it with this description).
_GATE = re.compile(r"Failure: (Quality gate .+ failed for run .+?)\s*$")
#: How long a failed step's block waits for its next line before it is printed as it stands: a block is
#: one write of one record, so its lines are in the pipe together.
BLOCK_SECONDS = 0.5


def gate_line(block: list[str]) -> list[str]:
    """`block` (a record's line and the error lines below it: a STEP_FAILURE's, or the RUN_FAILURE's that
    repeats it) as it is printed: its first line and the gate's verdict when it failed on a cobalt gate,
    else unchanged."""
    for line in block[1:]:
        found = _GATE.search(line)
        if found is not None:
            return [f"{block[0].rstrip()} {found.group(1)}\n"]
    return block


class GateLines:
    """Feed it lines (`line`); it writes them to `out`, a failed gate's block as one line (`flush` ends one)."""

    def __init__(self, out: TextIO) -> None:
        self.out = out
        self.block: list[str] = []

    def line(self, text: str) -> None:
        if self.block and not _HEADER.match(text):
            self.block.append(text)
            return
        self.flush()
        if _HEADER.match(text):  # a record: the lines below it, if any, are its error (STEP_ or RUN_FAILURE)
            self.block = [text]
        else:
            self._write([text])

    def flush(self) -> None:
        if self.block:
            block, self.block = self.block, []
            self._write(gate_line(block))

    def _write(self, lines: list[str]) -> None:
        try:
            self.out.write("".join(lines))
            self.out.flush()
        except (OSError, ValueError):  # our terminal went away: keep draining, or the child blocks writing
            pass


def pump(source: IO[bytes], out: TextIO) -> threading.Thread:
    """A daemon thread copying `source` (a child's stderr pipe) to `out` through `GateLines`, until its end."""
    thread = threading.Thread(target=_copy, args=(source, GateLines(out)), daemon=True, name="cobalt-console")
    thread.start()
    return thread


def _copy(source: IO[bytes], lines: GateLines) -> None:
    fd, rest = source.fileno(), b""
    while True:
        if lines.block and not select.select([fd], [], [], BLOCK_SECONDS)[0]:
            lines.flush()  # the block's record ended: nothing more came with it
            continue
        chunk = os.read(fd, 65536)
        if not chunk:
            break
        *complete, rest = (rest + chunk).split(b"\n")
        for raw in complete:
            lines.line(raw.decode("utf-8", errors="replace") + "\n")
    if rest:
        lines.line(rest.decode("utf-8", errors="replace"))
    lines.flush()
    source.close()
