"""The console logger of cobalt's jobs: Dagster's INFO and above, and a failed gate as one line.

Dagster's own console logger prints every event of a run at DEBUG (a line per step start, input,
output and handled event) unless the instance sets `python_log_level`, and prints a failed step with
its error and stack trace below it. A failed gate is a verdict, not a crash: its stack trace (Dagster's
frames and cobalt's `raise`) tells a person nothing the one-sentence verdict does not. A step that
crashed keeps its stack trace.

`build_definitions` sets it as the Definitions' `console` logger, and each experiment's job names it in
its default run config (a logger runs only when a run's config names it; `LOGGER_RUN_CONFIG`).
"""

from __future__ import annotations

import logging
import os
import sys
from typing import TextIO

import dagster as dg

from ._private import log_record_event
from ._stages import GATE_FAILURE_KEY

#: The run config that names the console logger at its defaults (INFO): each experiment job's default.
LOGGER_RUN_CONFIG: dict[str, object] = {"loggers": {"console": {"config": {}}}}
#: Dagster's console format, so cobalt's lines read like the daemon's and the webserver's around them.
LOG_FORMAT = "%(asctime)s - %(name)s - %(levelname)s - %(message)s"


@dg.logger(
    {"log_level": dg.Field(str, is_required=False, default_value="INFO", description="The logger's threshold."),
     "name": dg.Field(str, is_required=False, default_value="dagster", description="The logger's name.")},
    description="Dagster's console lines at INFO and above; a failed cobalt gate as one line, no stack trace.",
)
def cobalt_console_logger(init_context: dg.InitLoggerContext) -> logging.Logger:
    config = init_context.logger_config
    # A logger of its own (not `logging.getLogger`): each run builds one, and a shared one would gather
    # a handler per run.
    made = logging.Logger(config["name"], level=config["log_level"].upper())
    handler = logging.StreamHandler(_terminal())
    handler.setFormatter(GateLineFormatter(LOG_FORMAT))
    made.addHandler(handler)
    return made


def _terminal() -> TextIO:
    """The process's stderr as it is now, before the run's steps start: a copy of its descriptor.

    While steps run, Dagster's compute log capture points descriptor 2 at a file and a `tail -F` copies the
    file back to the terminal; at the end it kills the `tail`, which loses what it had not copied yet
    (dagster-io/dagster#23336): a failed step's line, written last, often. A line written to the copy taken
    here reaches the terminal at once, whatever the capture does.
    """
    try:
        return os.fdopen(os.dup(sys.stderr.fileno()), "w", buffering=1, encoding="utf-8", errors="replace")
    except (AttributeError, OSError, ValueError):  # no descriptor (a test's stand-in stream): the stream itself
        return sys.stderr


class GateLineFormatter(logging.Formatter):
    """Dagster's console format, with a failed gate's step (and the run it failed) on one line."""

    def format(self, record: logging.LogRecord) -> str:
        verdict = gate_verdict(record)
        if verdict is None:
            return super().format(record)
        head = record.getMessage().split("\n", 1)[0].rstrip()
        one = logging.makeLogRecord({**record.__dict__, "msg": f"{head} {verdict}".rstrip(), "args": ()})
        return super().format(one)


def gate_verdict(record: logging.LogRecord) -> str | None:
    """For the record of a step that failed on a cobalt gate, the gate's verdict ("" for the run that
    failed on it, whose line names the step); None for every other record."""
    event = log_record_event(record)
    if event is None:
        return None
    data = event.event_specific_data
    if event.is_step_failure:
        return _gate_description(data)
    if event.is_run_failure:
        first = getattr(data, "first_step_failure_event", None)
        return "" if first is not None and _gate_description(first.event_specific_data) is not None else None
    return None


#: The Definitions' loggers: cobalt's console logger in place of Dagster's.
LOGGERS = {"console": cobalt_console_logger}


def _gate_description(data: object) -> str | None:
    failure = getattr(data, "user_failure_data", None)
    if failure is None or GATE_FAILURE_KEY not in (failure.metadata or {}):
        return None
    return str(failure.description or "")
