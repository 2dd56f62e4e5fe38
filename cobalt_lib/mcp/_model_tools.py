"""`cobalt_evaluate` (one output, one evaluator) and `cobalt_generate` (a new experiment file), both in fresh
processes or through the configured judge model."""

from typing import Annotated, Any

from mcp.server.mcpserver import MCPServer
from mcp.types import CallToolResult, ToolAnnotations
from pydantic import Field

from .._numbers import score, threshold
from ..ops._evaluate import Evaluated
from ..ops._fresh import in_fresh_process
from ..ops._generate import DEFAULT_SIZE, MAX_SIZE, Generated, generate_experiment
from ._common import Project, budgeted, tool_errors

EVALUATE = """Score one output with one evaluator of an experiment, without a run: the evaluator's own kind, options,
prompt template, judge model and the project's judge cache. Nothing is stored. Use it to check a fix on a single
failing case, or a changed judge prompt (the experiment file is read from disk now). item is the dataset index
whose fields fill the template (input, expected_output...), or an item object; omit it for an item without fields.
Returns the score (0..1), passed (against the evaluator's pass mark), the reason, and the judge's cost."""

GENERATE = """Write a new cobalt experiment file for an agent: the configured judge model reads the agent's source
(agent_file, relative to the project root) and writes a complete file with a dataset of normal, edge and
adversarial items, evaluators suited to the agent, and threshold gates. The file goes to
experiments/<agent>.cobalt.py by default (output_file to choose), is loaded in a fresh process through discovery to
prove it imports and declares an experiment, and gets one repair attempt if it does not; if that fails too,
nothing is left on disk. Paths must stay inside the project; an existing file is replaced only with
overwrite=true. Next: run it with cobalt_run(file=<path>)."""


def register(server: MCPServer, project: Project) -> None:
    @server.tool(name="cobalt_evaluate", description=EVALUATE,
                 annotations=ToolAnnotations(read_only_hint=True, open_world_hint=True))
    def cobalt_evaluate(
        experiment: Annotated[str, Field(description="The experiment's name.")],
        evaluator: Annotated[str, Field(description="The name of one of its evaluators.")],
        output: Annotated[Any, Field(description="The output to score: text, or any JSON value the agent "
                                     "would return.")],
        item: Annotated[int | dict[str, Any] | None, Field(
            description="A dataset index of the experiment, or an item object such as {\"input\": ..., "
            "\"expected_output\": ...}.")] = None,
    ) -> Annotated[CallToolResult, Evaluated]:
        with tool_errors():
            config = project.config()
            result = in_fresh_process(config, "cobalt_lib.ops._evaluate:evaluate_output",
                                      {"experiment": experiment, "evaluator": evaluator, "output": output,
                                       "item": item}, Evaluated)
        ev = result.evaluation
        if ev.status != "ok":
            text = f"{evaluator}: eval-error: {ev.error}"
        else:
            verdict = {True: "pass", False: "FAIL", None: ""}[ev.passed]
            text = (f"{evaluator}: {score(ev.score)} {verdict} (pass mark {threshold(result.threshold)})"
                    + (f": {ev.reason}" if ev.reason else ""))
        return budgeted(result, text, None, "the whole text is in the judge's answer")

    @server.tool(name="cobalt_generate", description=GENERATE,
                 annotations=ToolAnnotations(read_only_hint=False, destructive_hint=False, open_world_hint=True))
    def cobalt_generate(
        agent_file: Annotated[str, Field(description="The agent's source file, relative to the project root.")],
        output_file: Annotated[str | None, Field(description="Where to write the experiment file (default "
                                                 "experiments/<agent>.cobalt.py).")] = None,
        dataset_size: Annotated[int | None, Field(ge=1, le=MAX_SIZE, description=f"Dataset items to write "
                                                  f"(default {DEFAULT_SIZE}).")] = None,
        context: Annotated[str | None, Field(description="What the agent is for and what matters in its "
                                             "answers: it shapes the items and evaluators.")] = None,
        overwrite: Annotated[bool, Field(description="Replace output_file if it exists.")] = False,
    ) -> Annotated[CallToolResult, Generated]:
        with tool_errors():
            result = generate_experiment(project.config(), agent_file, output_file, dataset_size, context, overwrite)
        names = ", ".join(f"{e.name} ({e.dataset_size} items; evaluators {', '.join(v.name for v in e.evaluators)})"
                          for e in result.experiments)
        text = (f"wrote {result.path}: {names}" + (" after one repair" if result.repaired else "")
                + f". Next: cobalt_run(file={result.path!r}).")
        return budgeted(result, "\n".join([text, *(f"warning: {w}" for w in result.warnings)]), None,
                        f"read {result.path}")
