"""`cobalt serve` reloads its code locations when experiment files appear, change or go away.

The webserver builds the definitions once, when it starts. Without a reload, the assets of an
experiment file added later exist only as events in the instance (a `cobalt run` of it), and the UI
shows them as "External Asset" with no job, checks or partitions until someone clicks "Reload
definitions". The watcher compares the experiment files (and cobalt.toml) with what it last saw and
asks the webserver's GraphQL API to reload the workspace when they differ, or when the store holds its
first grading run (whose assets then join the Definitions, `_grading`).
"""

from __future__ import annotations

from pathlib import Path

from cobalt_lib import Config
from cobalt_lib.experiments import discover_files

from ._grading import has_gradings

RELOAD_MUTATION = """mutation { reloadWorkspace { __typename
  ... on Workspace { locationEntries { name loadStatus } }
  ... on PythonError { message } } }"""

#: How often the watcher looks at the files (seconds): a new file is in the UI within this much.
POLL_SECONDS = 2.0
#: Every how many polls it asks the store whether the first grading run has appeared (10 s).
GRADING_POLLS = 5


class DefinitionsWatcher:
    """Call `poll()` periodically while the webserver at `url` runs."""

    def __init__(self, config: Config, url: str) -> None:
        self.config = config
        self.url = url.rstrip("/")
        self.seen = self._snapshot()
        self.polls = 0
        self.graded = self._graded()

    def _graded(self) -> bool:
        try:
            return has_gradings(self.config)
        except Exception:  # the store is busy or being created: look again later
            return False

    def first_grading(self) -> bool:
        """Whether the first grading run appeared since the last look: the grading assets join the
        Definitions (`_grading`). Looked for every `GRADING_POLLS` polls, and no more once there is one."""
        self.polls += 1
        if self.graded or self.polls % GRADING_POLLS:
            return False
        self.graded = self._graded()
        return self.graded

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
            return self.first_grading()
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
