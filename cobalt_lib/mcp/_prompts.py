"""The prompts: short, concrete workflows over the tools."""

from typing import Annotated

from mcp.server.mcpserver import MCPServer
from pydantic import Field


def register(server: MCPServer) -> None:
    @server.prompt(name="improve-agent", description="Run an experiment, read its failures, fix the agent, run "
                   "again and compare, until its evaluators reach a threshold.")
    def improve_agent(
        experiment: Annotated[str, Field(description="The experiment to improve.")],
        threshold: Annotated[str, Field(description="The mean score every evaluator should reach, e.g. 0.8.")],
    ) -> str:
        return f"""Improve the agent tested by the cobalt experiment {experiment!r} until every
evaluator's mean score is at least {threshold} and every gate passes.

1. Call cobalt_run(filter={experiment!r}) and note the run_id, the evaluator means and the failed gates.
2. Call cobalt_results(run_id=<that run>, only_failures=true). For each failed item read the input, the output
   and every evaluator's reason; group the failures by cause.
3. Read the agent's code (the experiment's file is listed in cobalt://experiments) and fix the most common cause
   in the agent. Do not change the dataset, the evaluators or the gates to make the numbers pass.
4. Optionally check the fix on one failing case with cobalt_evaluate before a whole run.
5. Call cobalt_run(filter={experiment!r}) again, then cobalt_compare(run_a="previous", run_b="latest",
   experiment={experiment!r}). Keep the change only if nothing regressed; otherwise revert it and try another.
6. Repeat from step 2 until every evaluator's mean is at least {threshold} and the gates pass, or the remaining
   failures are mistakes in the dataset, which you report instead of fixing.

Finish with a short report: what you changed, the means before and after, and the compare verdicts."""

    @server.prompt(name="generate-tests", description="Write an experiment file for an agent, run it and review "
                   "the dataset it produced.")
    def generate_tests(
        agent_file: Annotated[str, Field(description="The agent's source file, relative to the project root.")],
    ) -> str:
        return f"""Create a cobalt experiment for the agent in {agent_file}.

1. Read {agent_file} and note what the agent is for, its inputs and its outputs.
2. Call cobalt_generate(agent_file={agent_file!r}, context=<one paragraph: what the agent does and what a good answer
   looks like>). If it fails, read the error, then call it again with more context.
3. Read the file it wrote. Check the items: realistic normal cases, edge cases and adversarial cases, with correct
   expected outputs. Fix wrong expectations by editing the file.
4. Call cobalt_run(file=<the written path>, no_dagster=true) and read the results. A failure is either a real
   defect of the agent (report it) or a wrong item or evaluator (fix the file and run again).

Finish with the file's path, the number of items per group, the evaluators and gates, and the first run's scores."""

    @server.prompt(name="regression-check", description="Compare the latest run with the previous one and "
                   "explain every regression.")
    def regression_check(
        experiment: Annotated[str | None, Field(description="The experiment to check (default: the newest "
                                                "run's).")] = None,
    ) -> str:
        scope = f", experiment={experiment!r}" if experiment else ""
        which = f"experiment {experiment!r}" if experiment else "the most recently run experiment"
        return f"""Check {which} for regressions.

1. Call cobalt_results({'experiment=' + repr(experiment) if experiment else ''}) to see its recent runs; if fewer
   than two are stored, call cobalt_run first{f' (filter={experiment!r})' if experiment else ''}.
2. Call cobalt_compare(run_a="previous", run_b="latest"{scope}). For each evaluator note the paired delta, its
   confidence interval and the verdict.
3. For every evaluator whose verdict is "regressed", and every item among the most regressed, read both outputs
   and both reasons, and say what changed in the agent's behaviour.
4. If a regression is real, point at the code change that most likely caused it (check the version control
   history of the agent's files).

Finish with a verdict: no regression, or each regression with its evidence and likely cause."""
