"""Calling an ops function in a fresh Python process, so it sees the project's code as it is on disk.

A long-lived process (the MCP server) that imported an experiment file, or the agent module that
file imports, would keep running the old code after the user edits it. A fresh process per call
reads it anew, and user code that prints, hangs or exits cannot disturb the caller.

    outcome = in_fresh_process(config, "cobalt_lib.ops._evaluate:evaluate_output", {...}, Evaluated)

The child gets the call as JSON on stdin and answers one JSON object on the stdout it was started
with; while the function runs, its stdout goes to stderr, so a `print` in user code cannot corrupt
the answer. A `CobaltError` in the child comes back as a `CobaltError` with the same message.
"""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
from typing import Any, TypeVar

from pydantic import BaseModel

from .._errors import CobaltError, ConfigError
from .._numbers import seconds
from ..config._config import Config

M = TypeVar("M", bound=BaseModel)

_CHILD = "from cobalt_lib.ops._fresh import child; child()"
#: How long a fresh call may take before it is stopped (a judge call that hangs, an import that loops).
FRESH_SECONDS = 300.0


def in_fresh_process(config: Config, target: str, kwargs: dict[str, Any], result: type[M], *,
                     timeout: float = FRESH_SECONDS, env: dict[str, str] | None = None) -> M:
    """`target(config, **kwargs)` (`module:function`, its config loaded from `config.root`) in a new process."""
    request = json.dumps({"target": target, "kwargs": kwargs})
    environment = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1", **(env or {})}
    try:
        done = subprocess.run([sys.executable, "-c", _CHILD], input=request, capture_output=True, text=True,
                              cwd=config.root, env=environment, timeout=timeout, check=False)
    except subprocess.TimeoutExpired:
        raise CobaltError(f"The call took more than {seconds(timeout)} and was stopped.") from None
    answer = _answer(done.stdout)
    if answer is None:
        tail = "\n".join(done.stderr.strip().splitlines()[-5:])
        raise CobaltError(f"The worker process failed (exit code {done.returncode}): {tail or 'no output'}")
    if "error" in answer:
        raise (ConfigError if answer.get("usage", True) else CobaltError)(str(answer["error"]))
    return result.model_validate(answer["result"])


def _answer(stdout: str) -> dict[str, Any] | None:
    for line in reversed(stdout.strip().splitlines()):
        try:
            value = json.loads(line)
        except ValueError:
            continue
        if isinstance(value, dict):
            return value
    return None


def child() -> None:
    """The worker: read the call, run it with stdout pointed at stderr, write the answer to the real stdout."""
    from ..config._config import load_config

    answer_fd = os.dup(1)
    os.dup2(2, 1)  # user code's prints (and anything else on fd 1) go to stderr
    sys.stdout = sys.stderr
    code = 0
    try:
        call = json.loads(sys.stdin.read())
        module, _, name = call["target"].partition(":")
        function = getattr(importlib.import_module(module), name)
        value = function(load_config(), **call["kwargs"])
        answer: dict[str, Any] = {"result": value.model_dump(mode="json") if isinstance(value, BaseModel) else value}
    except CobaltError as exc:
        answer, code = {"error": str(exc), "usage": isinstance(exc, ConfigError)}, 2
    with os.fdopen(answer_fd, "w", encoding="utf-8") as out:
        out.write(json.dumps(answer, default=str) + "\n")
    sys.stderr.flush()
    os._exit(code)  # user code may have left non-daemon threads behind
