"""`cobalt serve` reloads its code locations when experiment files appear, change or go away.

The webserver builds the definitions once, when it starts. Without a reload, the assets of an
experiment file added later exist only as events in the instance (a `cobalt run` of it), and the UI
shows them as "External Asset" with no job, checks or partitions until someone clicks "Reload
definitions". The watcher compares the experiment files (and cobalt.toml) with what it last saw and
asks the webserver's GraphQL API to reload the workspace when they differ.
"""

from __future__ import annotations

from pathlib import Path

from cobalt_lib import Config
from cobalt_lib.experiments import discover_files

RELOAD_MUTATION = """mutation { reloadWorkspace { __typename
  ... on Workspace { locationEntries { name loadStatus } }
  ... on PythonError { message } } }"""

#: How often the watcher looks at the files (seconds): a new file is in the UI within this much.
POLL_SECONDS = 2.0


class DefinitionsWatcher:
    """Call `poll()` periodically while the webserver at `url` runs."""

    def __init__(self, config: Config, url: str) -> None:
        self.config = config
        self.url = url.rstrip("/")
        self.seen = self._snapshot()

    def _snapshot(self) -> dict[Path, int]:
        files = list(discover_files(self.config))
        for name in ("cobalt.toml", "cobalt.config.py", "definitions.py"):
            if (self.config.root / name).is_file():
                files.append(self.config.root / name)
        seen = {}
        for path in files:
            try:
                seen[path] = path.stat().st_mtime_ns
            except OSError:  # removed while we looked: the next poll sees it gone
                continue
        return seen

    def changed(self) -> bool:
        """Whether the files differ from the last look (and remember them)."""
        try:
            now = self._snapshot()
        except Exception:  # a broken config mid-edit: look again at the next poll
            return False
        if now == self.seen:
            return False
        self.seen = now
        return True

    def poll(self) -> bool:
        """Reload the webserver's workspace when the files changed; True when a reload was asked."""
        if not self.changed():
            return False
        import httpx

        try:
            httpx.post(f"{self.url}/graphql", json={"query": RELOAD_MUTATION}, timeout=60)
        except httpx.HTTPError:
            return False  # the webserver is going away or busy; it reloads at its next start anyway
        return True
