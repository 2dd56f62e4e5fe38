"""`cobalt_variants`: a run group's variants side by side, as `cobalt compare --group` shows them."""

from typing import Annotated

from mcp.server.mcpserver import MCPServer
from mcp.types import CallToolResult
from pydantic import Field

from ..variants import VariantGrid, grid_summary, variant_grid
from ._budget import DEFAULT_TOKENS
from ._common import BudgetArg, Project, budgeted, tool_errors
from ._read_tools import READ_ONLY

VARIANTS = """The variants of a run group side by side, as `cobalt compare --group` shows them. An experiment declaring
variants (parameter sets such as model x prompt) is run by one cobalt_run as one run per variant under a run group.
For each variant and evaluator: the variant's mean, and against the baseline variant the paired delta with its
bootstrap confidence interval and a verdict (improved = better, regressed = worse, no significant change), computed
exactly as cobalt_compare(run_a=<baseline run>, run_b=<variant run>) does; per variant its run_id, agent cost per
item, latency p50/p95, quality, whether it is on the quality/cost frontier (no other variant both better and
cheaper) and its gates. group: a group id, a unique prefix, "latest" (scope it with experiment) or the id of one of
its runs. quality: the evaluator the frontier ranks by (default the mean of the evaluators' means). Read one
variant's items with cobalt_results(run_id=<its run_id>)."""


def register(server: MCPServer, project: Project) -> None:
    @server.tool(name="cobalt_variants", description=VARIANTS, annotations=READ_ONLY)
    def cobalt_variants(
        group: Annotated[str, Field(description="A run group id, a unique prefix, 'latest', or one of its runs.")]
        = "latest",
        experiment: Annotated[str | None, Field(description="The experiment 'latest' refers to.")] = None,
        quality: Annotated[str | None, Field(description="The evaluator the frontier ranks quality by.")] = None,
        budget: BudgetArg = DEFAULT_TOKENS,
    ) -> Annotated[CallToolResult, VariantGrid]:
        with tool_errors():
            grid = variant_grid(project.config(), group, experiment=experiment, quality=quality)
        return budgeted(grid, grid_summary(grid), budget, "cobalt_variants(group=...) with fewer variants")
