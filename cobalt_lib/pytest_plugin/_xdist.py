"""Items mode under pytest-xdist: an experiment's item tests go to one worker together, since its run is one
unit (the experiment runs once, when its first item test starts, on every item selected)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import pytest
from xdist.scheduler import LoadScopeScheduling


class ExperimentScheduling(LoadScopeScheduling):
    """`--dist load` (xdist's default with `-n`) for every test, except that the item tests of one experiment
    (`<file>::<experiment>::<item>`) form one unit of work."""

    def __init__(self, config: pytest.Config, log: Any, experiment_files: Iterable[str]) -> None:
        super().__init__(config, log)
        self.experiment_files = frozenset(experiment_files)

    def _split_scope(self, nodeid: str) -> str:
        parts = nodeid.split("::")
        if len(parts) > 2 and parts[0] in self.experiment_files:
            return "::".join(parts[:2])
        return nodeid
