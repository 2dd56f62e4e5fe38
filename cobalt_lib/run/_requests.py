"""The ways a run starts, each an explicit request that `prepare(experiment, config, request)` plans.

    FreshRun()                                  a new run of the dataset (`.run()`, `cobalt run`)
    FreshRun(update_baselines=True)             ... about to become its no_regression baselines
    FreshRun(indices=(0, 3))                    a new run of some of its items (pytest -k on item tests)
    ResumeRun(run_id, timestamp, items)         finish a stored run: only what is missing runs
    RescoreRun(parent_run_id, outputs)          a stored run's outputs scored again, as a new run
    FailedItemsRun(parent_run_id, indices)      a stored run's failed items run again, as a new run
    PartitionRun(run_id)                        a Dagster partition (= cobalt run id) materialised

An option left `None` falls back to the experiment's declaration, then to the config.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal, TypeAlias

if TYPE_CHECKING:
    from ..results._report import ItemResult


@dataclass(frozen=True, kw_only=True)
class _Tagged:
    #: Tags added to the experiment's own.
    tags: Sequence[str] = ()
    #: Judge through the provider's batch API (True), online (False), or as `[judge] batch` says (None).
    judge_batch: bool | None = None

    def __post_init__(self) -> None:
        # Frozen and hashable whatever sequence the caller passed (a list from the CLI, say).
        object.__setattr__(self, "tags", tuple(self.tags))


@dataclass(frozen=True, kw_only=True)
class _Options(_Tagged):
    """What a caller may change about a run of the experiment as declared."""

    concurrency: int | None = None
    timeout: float | None = None
    runs: int | None = None


@dataclass(frozen=True, kw_only=True)
class FreshRun(_Options):
    """A new run of every item of the dataset (or of the items at `indices`: a run of some items)."""

    run_id: str | None = None
    #: Leave the no_regression gates out: this run is about to become their baseline.
    update_baselines: bool = False
    #: The dataset indices to run (the items a `pytest -k` selected), keeping their indices; None: all.
    indices: tuple[int, ...] | None = None
    #: Who made the run: `monitor` for a monitor's window of production traces (cobalt_lib/monitor).
    source: Literal["library", "monitor"] = "library"

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.indices is not None:
            object.__setattr__(self, "indices", tuple(self.indices))
    #: The variant this run is (its name; None: the baseline of an experiment with variants), and the
    #: run group it belongs to (the runs of one `cobalt run` of every variant).
    variant: str | None = None
    group_id: str | None = None


@dataclass(frozen=True, kw_only=True)
class ResumeRun(_Options):
    """Finish the stored run `run_id`: `items` are its stored items; only what they lack runs."""

    run_id: str
    timestamp: str
    items: Sequence[ItemResult] = field(default=(), repr=False)
    #: The dataset indices the run covers, when it covers only some (a run of failed items); None: all.
    indices: tuple[int, ...] | None = None
    #: The stored run's variant and run group.
    variant: str | None = None
    group_id: str | None = None


@dataclass(frozen=True, kw_only=True)
class RescoreRun:
    """The evaluators over a stored run's `outputs`, without calling the agent, as a new run.

    `evaluators` names the ones to run (empty: all); the others keep the scores the outputs carry.
    """

    parent_run_id: str
    outputs: Sequence[ItemResult] = field(repr=False)
    evaluators: Sequence[str] = ()
    judge_batch: bool | None = None
    #: The parent run's variant: the new run is of the same one.
    variant: str | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "evaluators", tuple(self.evaluators))


@dataclass(frozen=True, kw_only=True)
class FailedItemsRun(_Options):
    """The dataset items at `indices` (those that failed in run `parent_run_id`) run again, as a new run.

    The items keep their dataset indices, so `cobalt compare` pairs them with the parent's.
    """

    parent_run_id: str
    indices: tuple[int, ...]
    #: The parent run's variant: the items run again with the same parameters.
    variant: str | None = None

    def __post_init__(self) -> None:
        super().__post_init__()
        object.__setattr__(self, "indices", tuple(self.indices))


@dataclass(frozen=True, kw_only=True)
class PartitionRun(_Tagged):
    """A Dagster partition of the experiment: the run `run_id`, started at `timestamp` when its row exists."""

    run_id: str
    timestamp: str | None = None
    concurrency: int | None = None
    #: The variant the partition runs (its `cobalt/variant` tag, else the stored run's), and its group.
    variant: str | None = None
    group_id: str | None = None


RunRequest: TypeAlias = FreshRun | ResumeRun | RescoreRun | FailedItemsRun | PartitionRun
