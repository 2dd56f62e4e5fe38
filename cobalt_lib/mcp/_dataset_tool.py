"""`cobalt_datasets`: the stored datasets' versions, one version's items, or a diff of two (read-only)."""

from typing import Annotated

from mcp.server.mcpserver import MCPServer
from mcp.types import CallToolResult
from pydantic import BaseModel, Field

from .._errors import DatasetError
from ..datasets import DatasetDiff, ShownVersion, VersionInfo, diff_versions, list_versions, show_version, version_line
from ..store import Store
from ._budget import DEFAULT_TOKENS
from ._common import BudgetArg, Project, budgeted, tool_errors
from ._read_tools import READ_ONLY

DATASETS = """Read the stored datasets (immutable, numbered versions pushed with `cobalt dataset push` or grown
from runs and labels). Without arguments: every version of every dataset (dataset, version, content hash, items,
splits, source, note). dataset="qa": that dataset's versions. show="qa@3" (or "qa", the latest, or "qa@3:test", a
split): the version and its first `limit` items. diff_from="qa@1" with diff_to="qa@2": the items added, removed and
changed between the two versions, by item identity (id, else content). Experiments read a version with
Dataset.from_store("qa@3"); a run's identity names the version it read."""


class DatasetsAnswer(BaseModel):
    """Either `versions`, `shown` (one version and its first items) or `diff`."""

    versions: list[VersionInfo] | None = None
    shown: ShownVersion | None = None
    diff: DatasetDiff | None = None


def register(server: MCPServer, project: Project) -> None:
    @server.tool(name="cobalt_datasets", description=DATASETS, annotations=READ_ONLY)
    def cobalt_datasets(
        dataset: Annotated[str | None, Field(description="Only this dataset's versions.")] = None,
        show: Annotated[str | None, Field(description="A version to show: 'qa', 'qa@3' or 'qa@3:test'.")] = None,
        diff_from: Annotated[str | None, Field(description="The older version of a diff, e.g. 'qa@1'.")] = None,
        diff_to: Annotated[str | None, Field(description="The newer version of a diff, e.g. 'qa@2'.")] = None,
        limit: Annotated[int, Field(ge=0, le=1000, description="Items shown with `show`.")] = 20,
        budget: BudgetArg = DEFAULT_TOKENS,
    ) -> Annotated[CallToolResult, DatasetsAnswer]:
        with tool_errors():
            store = Store.for_config(project.config())
            if (diff_from is None) != (diff_to is None):
                raise DatasetError("A diff needs both diff_from and diff_to, e.g. diff_from='qa@1', diff_to='qa@2'.")
            if diff_from is not None and diff_to is not None:
                found = diff_versions(store, diff_from, diff_to)
                return budgeted(DatasetsAnswer(diff=found), f"{diff_from} -> {diff_to}: {found.counts_text()}",
                                budget, "a narrower diff is not available; raise budget")
            if show is not None:
                shown = show_version(store, show, limit=limit)
                return budgeted(DatasetsAnswer(shown=shown), version_line(shown.version), budget,
                                "a lower limit shows fewer items")
            versions = list_versions(store, dataset)
        summary = f"{len(versions)} stored version{'s' if len(versions) != 1 else ''}" + "".join(
            f"\n{version_line(v)}" for v in versions[-20:])
        return budgeted(DatasetsAnswer(versions=versions), summary, budget, "dataset=NAME lists one dataset")
