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
from ..store._history import load_report
from ._budget import DEFAULT_TOKENS, budget_tokens, estimate_tokens, fit_run, size
from ._common import BudgetArg, Project, answer, for_tools, tool_errors
from ._read_tools import details_summary

_CLI = "from cobalt_lib._entry import main; main()"


class RunResult(BaseModel):
    """Every experiment run by the call, each in the results-file shape (failures first, within the budget)."""

    passed: bool = Field(description="Every gate of every run passed.")
    exit_code: int = Field(description="`cobalt run`'s exit code: 0 all gates passed, 1 a gate failed.")
    runs: list[RunDetails]
    warnings: list[str] = Field(default_factory=list)


DESCRIPTION = """Run cobalt experiments exactly as `cobalt run` does, in a fresh process, so the agent and experiment
code are read from disk as they are now (edit the agent, then call this again). Returns one entry per experiment:
run_id, summary (per-evaluator avg/min/max/p50/p95, latency, tokens, cost), the quality gates' verdicts
(assertions), failing_items (the index of every failing item), and the items with input, output, status, and each
evaluator's score, pass/fail and reason. Items come failures first (failed agent calls, eval-errors, then scores by
how far below their pass mark), then the rest by index; the answer stays within `budget` tokens (default 20,000):
long fields are clipped and the items that do not fit are counted, with cobalt_results(run_id, item=N) to read one
whole. An experiment file that fails to import is reported as a warning and the others still run. resume finishes
an interrupted run (its id or "latest") instead of starting one. Progress notifications arrive as items finish; if
the call is cancelled or the client goes away, the run stops as on Ctrl-C (finished items kept, resumable). Next:
read failures with cobalt_results(only_failures=true), compare with the previous run with
cobalt_compare(run_a="previous", run_b="latest")."""


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
        resume: Annotated[str | None, Field(description="Finish this interrupted run (an id, a unique prefix or "
                                            "'latest'; with filter, the latest of that experiment) instead of "
                                            "starting a new one.")] = None,
        budget: BudgetArg = DEFAULT_TOKENS,
    ) -> Annotated[CallToolResult, RunResult]:
        with tool_errors():
            config = project.config()
            args = ["run", "--json"]
            if file:
                args.append(str(project_path(config, file, "experiment file")))
            args += [*(["--filter", filter] if filter else []), *(["--tag", tag] if tag else []),
                     *(["--concurrency", str(concurrency)] if concurrency else []),
                     *(["--no-dagster"] if no_dagster else []), *(["--resume", resume] if resume else [])]
            code, run_ids, stderr = await _run_cli(args, project, ctx)
            result = _result(project, code, run_ids, stderr)
        text = _summary(result)
        data = result.model_dump(mode="json", exclude_defaults=True, exclude={"runs"})
        # The budget covers the text, the answer's own fields and every run: what is left is shared.
        share = (budget_tokens(budget) - estimate_tokens(text) - size(data)) // max(1, len(result.runs))
        data["runs"] = [fit_run(run, share) for run in result.runs]
        return answer(data, text)


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
    """One progress notification per finished item: done/total over every run started so far (the runs of a
    run group's variants run at once, their items interleaved: each run's count is kept apart)."""
    total = 0
    done: dict[str, int] = {}
    async with anyio.wrap_file(os.fdopen(read_fd, "rb")) as pipe:
        async for line in pipe:
            try:
                event = json.loads(line)
            except ValueError:
                continue
            if event.get("event") == "start":
                run_ids.append(str(event["run_id"]))
                total += int(event.get("total") or 0)
            elif event.get("event") == "item":
                done[str(event.get("run_id"))] = int(event.get("done") or 0)
                variant = f" [{event['variant']}]" if event.get("variant") else ""
                await ctx.report_progress(sum(done.values()), total or None,
                                          f"{event.get('experiment')}{variant}: {event.get('message')}")


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
            raise ToolError(for_tools(errors[-1]))
        tail = "\n".join(stderr.strip().splitlines()[-8:])
        resume = f"cobalt_run(resume={run_ids[-1]!r})" if run_ids else "cobalt_run(resume='latest')"
        raise ToolError(f"`cobalt run` stopped with exit code {code}: {tail or 'no message'}. Finished items are "
                        f"kept; cobalt_results shows the run, and {resume} finishes it.")
    config = project.config()
    store = store_with_runs(config)
    runs = [report_details(config, load_report(store, run_id), limit=ITEM_LIMIT)
            for run_id in dict.fromkeys(run_ids)]
    return RunResult(passed=code == 0 and all(r.passed for r in runs), exit_code=code, runs=runs,
                     warnings=warnings)


def _summary(result: RunResult) -> str:
    """A few lines per run: verdict, scores, every failing item's index and failed gates; then where to look next."""
    lines = [details_summary(run) for run in result.runs]
    lines += [f"warning: {w}" for w in result.warnings]
    if any(r.failures_total for r in result.runs):
        lines.append("Read the failures with cobalt_results(run_id=..., only_failures=true), or one item whole with "
                     "cobalt_results(run_id=..., item=N).")
    return "\n".join(lines)
