"""`cobalt_run`: `cobalt run --json` in a fresh process, its items reported as progress as they finish.

A fresh process per call is the point: the assistant edits the agent between calls, and a module
imported once by the server would keep running the old code. The child writes one JSON line per
finished item to a pipe (`--progress-jsonl /dev/fd/N`); each becomes a progress notification. When
it exits, every run it made is read back from the store, sized for a model by `report_details`.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Annotated, Any

import anyio
from anyio.abc import Process
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import CallToolResult
from pydantic import BaseModel, Field

from ..ops._details import ITEM_LIMIT, RunDetails, report_details
from ..ops._generate import project_path
from ..ops._refs import store_with_runs
from ..results._history import load_report
from ._common import Project, answer, tool_errors

_CLI = "from cobalt_lib._entry import main; main()"


class RunResult(BaseModel):
    """Every experiment run by the call, each in the results-file shape (at most 200 items each)."""

    passed: bool = Field(description="Every gate of every run passed.")
    exit_code: int = Field(description="`cobalt run`'s exit code: 0 all gates passed, 1 a gate failed.")
    runs: list[RunDetails]
    warnings: list[str] = Field(default_factory=list)


DESCRIPTION = """Run cobalt experiments exactly as `cobalt run` does, in a fresh process, so the agent and experiment
code are read from disk as they are now (edit the agent, then call this again). Returns one entry per experiment:
run_id, summary (per-evaluator avg/min/max/p50/p95, latency, tokens, cost), the quality gates' verdicts
(assertions), and the items with input, output, status, and each evaluator's score, pass/fail and reason.
Failures come first when a run has more than 200 items; the rest is counted with a pointer to cobalt_results.
Progress notifications arrive as items finish. Next: read failures with cobalt_results(only_failures=true),
compare with the previous run with cobalt_compare(run_a="previous", run_b="latest")."""


def register(server: MCPServer, project: Project) -> None:
    @server.tool(name="cobalt_run", description=DESCRIPTION)
    async def cobalt_run(
        ctx: Context,
        file: Annotated[str | None, Field(description="An experiment file, relative to the project root "
                                          "(default: every discovered experiment).")] = None,
        filter: Annotated[str | None, Field(description="Only experiments whose name contains this.")] = None,
        tag: Annotated[str | None, Field(description="Only experiments with this tag.")] = None,
        concurrency: Annotated[int | None, Field(ge=1, description="Agent calls in flight.")] = None,
        no_dagster: Annotated[bool, Field(description="Run the plain library path instead of a Dagster run "
                                          "(faster; the Dagster UI then does not list the run).")] = False,
    ) -> Annotated[CallToolResult, RunResult]:
        with tool_errors():
            config = project.config()
            args = ["run", "--json"]
            if file:
                args.append(str(project_path(config, file, "experiment file")))
            args += [*(["--filter", filter] if filter else []), *(["--tag", tag] if tag else []),
                     *(["--concurrency", str(concurrency)] if concurrency else []),
                     *(["--no-dagster"] if no_dagster else [])]
            code, run_ids, stderr = await _run_cli(args, project, ctx)
            result = _result(project, code, run_ids, stderr)
        return answer(result, _summary(result))


async def _run_cli(args: list[str], project: Project, ctx: Context) -> tuple[int, list[str], str]:
    """Run `cobalt ARGS --progress-jsonl <pipe>`; report each finished item; return the exit code, the ids of
    the runs started (from the progress stream: stdout may hold the agent's own prints) and stderr."""
    read_fd, write_fd = os.pipe()
    try:
        process = await anyio.open_process(
            [sys.executable, "-c", _CLI, *args, "--progress-jsonl", f"/dev/fd/{write_fd}"],
            stdin=subprocess.DEVNULL, cwd=project.root, pass_fds=(write_fd,),
            env={**os.environ, "PYTHONUNBUFFERED": "1"})
    except BaseException:
        os.close(read_fd)
        raise
    finally:
        os.close(write_fd)
    out: list[bytes] = []
    err: list[bytes] = []
    run_ids: list[str] = []
    try:
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(_drain, process.stdout, out)
            tasks.start_soon(_drain, process.stderr, err)
            tasks.start_soon(_progress, read_fd, ctx, run_ids)
            try:
                await process.wait()
            except BaseException:  # cancelled: stop the child first, so the pipe closes and the readers return
                await _stop(process)
                raise
    except BaseException:
        await _stop(process)
        raise
    return process.returncode or 0, run_ids, b"".join(err).decode("utf-8", "replace")


async def _drain(stream: Any, into: list[bytes]) -> None:
    if stream is None:
        return
    async for chunk in stream:
        into.append(chunk)


async def _progress(read_fd: int, ctx: Context, run_ids: list[str]) -> None:
    """One progress notification per finished item: done/total over every experiment started so far."""
    before = 0  # items of the experiments already finished
    total = 0
    done = 0
    async with anyio.wrap_file(os.fdopen(read_fd, "rb")) as pipe:
        async for line in pipe:
            try:
                event = json.loads(line)
            except ValueError:
                continue
            if event.get("event") == "start":
                run_ids.append(str(event["run_id"]))
                before += done
                done = 0
                total += int(event.get("total") or 0)
            elif event.get("event") == "item":
                done = int(event.get("done") or 0)
                await ctx.report_progress(before + done, total or None,
                                          f"{event.get('experiment')}: {event.get('message')}")


async def _stop(process: Process) -> None:
    """The call was cancelled: stop the run as Ctrl-C does (finished items kept, the run resumable)."""
    with anyio.CancelScope(shield=True):
        if process.returncode is None:
            process.terminate()  # cobalt run treats SIGTERM as an interrupt and marks the run incomplete
            with anyio.move_on_after(15):
                await process.wait()
        if process.returncode is None:
            process.kill()
            await process.wait()


def _result(project: Project, code: int, run_ids: list[str], stderr: str) -> RunResult:
    """The runs the child made, read back from the store; a usage error (exit 2) as a tool error."""
    warnings = [line.removeprefix("warning: ") for line in stderr.splitlines() if line.startswith("warning: ")]
    if code not in (0, 1):
        errors = [line.removeprefix("error: ") for line in stderr.splitlines() if line.startswith("error: ")]
        if code == 2 and errors:
            raise ToolError(errors[-1])
        tail = "\n".join(stderr.strip().splitlines()[-8:])
        raise ToolError(f"`cobalt run` stopped with exit code {code}: {tail or 'no message'}. Finished items are "
                        "kept; cobalt_results shows the run, and `cobalt run --resume latest` finishes it.")
    config = project.config()
    store = store_with_runs(config)
    runs = [report_details(config, load_report(store, run_id), limit=ITEM_LIMIT)
            for run_id in dict.fromkeys(run_ids)]
    return RunResult(passed=code == 0, exit_code=code, runs=runs, warnings=warnings)


def _summary(result: RunResult) -> str:
    """One line per run: verdict, scores, failures and failed gates; then where to look next."""
    lines = []
    for run in result.runs:
        scores = " ".join(f"{name}={s.avg:.2f}" for name, s in run.summary.scores.items() if s.avg is not None)
        failed = [a.name for a in run.assertions if not a.passed]
        verdict = "PASSED" if run.passed else "FAILED"
        lines.append(f"{run.experiment} run {run.run_id} {run.status}, gates {verdict}: {scores or 'no scores'}; "
                     f"{run.failures_total} of {run.items_total} items failed"
                     + (f"; failed gates: {', '.join(failed)}" if failed else ""))
    lines += [f"warning: {w}" for w in result.warnings]
    if any(r.failures_total for r in result.runs):
        lines.append("Read the failures with cobalt_results(run_id=..., only_failures=true).")
    return "\n".join(lines)
