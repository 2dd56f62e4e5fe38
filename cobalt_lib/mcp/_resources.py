"""The resources: the store's schema, the effective configuration, the experiments, the latest results, one run."""

import os
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ResourceError

from .._errors import CobaltError
from ..config._config import Config
from ..llm._providers import BASE_URL_VARIABLES, KEY_VARIABLES
from ..ops._details import report_details, run_details
from ..ops._experiments import ExperimentCatalog
from ..ops._fresh import in_fresh_process
from ..ops._history import run_history
from ..ops._query import EXAMPLES, store_dialect, store_schema
from ..store._history import load_report
from ..store._store import Store
from ._budget import budget_tokens, dumps, fit_any, fit_run
from ._common import Project, for_tools

JSON = "application/json"


def register(server: MCPServer, project: Project) -> None:
    @server.resource("cobalt://schema", name="schema", mime_type=JSON,
                     description="The store's tables and columns, one line each: what cobalt_query can read; "
                     "and example queries (the failed items of a run, each item's input and expected output).")
    def schema() -> str:
        return _fitted({"dialect": store_dialect(_load(project)),
                        "tables": [t.model_dump(exclude_defaults=True) for t in store_schema()],
                        "examples": EXAMPLES})

    @server.resource("cobalt://config", name="config", mime_type=JSON,
                     description="The effective configuration (files found, every key with its value); API keys "
                     "are never shown, only which variables are set.")
    def config() -> str:
        return _fitted(_readable(_load(project)))

    @server.resource("cobalt://experiments", name="experiments", mime_type=JSON,
                     description="Every discovered experiment: name, file, dataset size, evaluators (type, pass "
                     "mark) and gates; files that fail to load (or link outside the project), with the error.")
    def experiments() -> str:
        with _errors():
            catalog = in_fresh_process(_load(project), "cobalt_lib.ops._experiments:describe_experiments", {},
                                       ExperimentCatalog, timeout=120)
        return _fitted(catalog.model_dump(mode="json", exclude_defaults=True))

    @server.resource("cobalt://latest-results", name="latest-results", mime_type=JSON,
                     description="The newest run of every experiment: status, passed (never for an unfinished "
                     "run), summary, gate verdicts and the index of every failing item (items through "
                     "cobalt://runs/{run_id} or cobalt_results).")
    def latest_results() -> str:
        with _errors():
            cfg = _load(project)
            newest: dict[str, str] = {}
            for entry in run_history(cfg, limit=100_000):
                newest.setdefault(entry.experiment, entry.run_id)
            store = Store.for_config(cfg)
            latest = [report_details(cfg, load_report(store, run_id), limit=0) for run_id in newest.values()]
        return _fitted([d.model_dump(mode="json", exclude_defaults=True, exclude={"items"}) for d in latest])

    @server.resource("cobalt://runs/{run_id}", name="run", mime_type=JSON,
                     description="One stored run in the results-file shape (id, prefix, latest or previous): "
                     "summary, gate verdicts, the index of every failing item, and items failures first (errors, "
                     "eval-errors, then by margin below the pass mark) within 20,000 tokens; cobalt_results reads "
                     "more (item=N for one item whole, budget=... for a larger answer).")
    def run(run_id: str) -> str:
        with _errors():
            details = run_details(_load(project), run_id)
        return dumps(fit_run(details, budget_tokens(None)))


def _fitted(data: Any) -> str:
    """`data` as compact JSON within the default budget."""
    fitted, _ = fit_any(data, budget_tokens(None), "cobalt_results or cobalt_query read the rest")
    return dumps(fitted)


@contextmanager
def _errors() -> Iterator[None]:
    """cobalt's errors as resource errors carrying their message."""
    try:
        yield
    except CobaltError as exc:
        raise ResourceError(for_tools(str(exc))) from None


def _load(project: Project) -> Config:
    try:
        return project.config()
    except CobaltError as exc:
        raise ResourceError(for_tools(str(exc))) from None


def _readable(config: Config) -> dict[str, Any]:
    """The configuration without secrets: keys left out, credentials stripped from URLs."""
    data = config.public_dict()
    data["judge"]["base_url"] = _bare_url(data["judge"].get("base_url"))
    data["embeddings"]["base_url"] = _bare_url(data["embeddings"].get("base_url"))
    data["webhooks"] = [_bare_url(url, keep_path=False) for url in data.get("webhooks", [])]
    return {"root": str(config.root), "source": str(config.source) if config.source else None,
            "shadowed": [str(p) for p in config.shadowed], "config": data,
            "environment": {name: "set" if os.environ.get(name) else "not set"
                            for name in [*KEY_VARIABLES.values(), *BASE_URL_VARIABLES.values()]}}


def _bare_url(url: str | None, *, keep_path: bool = True) -> str | None:
    """A URL without user info, query or fragment (and without its path: a webhook's path is often its token)."""
    if not url:
        return url
    parts = urlsplit(url)
    host = parts.hostname or ""
    netloc = host + (f":{parts.port}" if parts.port else "")
    return urlunsplit((parts.scheme, netloc, parts.path if keep_path else ("/…" if parts.path.strip("/") else ""),
                       "", ""))
