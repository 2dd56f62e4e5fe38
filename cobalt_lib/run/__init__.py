"""The engine both paths call: plan a run, call the agent, score, aggregate, judge the gates.

The stage API below is what `cobalt_dagster` builds its assets from; the library path chains the
same functions item by item in `execute`:

    plan = prepare(experiment, config, FreshRun())      # every check that can fail, before any call
    start_run(plan)                                     # the `runs` row, status running
    items = await stream(plan, item_keys(plan), agent_step, tables=("outputs",))    # stage 1
    items = await stream(plan, items, rescore_step, tables=("scores",))             # stage 2
    report = finish(plan, items, "completed")           # stages 3 and 4, results JSON, run row
    report = finish_from_store(plan, "completed")       # ... or over the rows stored, read in chunks
    report = finish_from_exchange(plan, exchange, "completed")  # ... or a sharded run's partials, merged

While a process works on a run it renews the run's lease in the store (`with lease(store, run_id):`,
which `execute`, `stream` and `finish_from_store` hold); a `running` run whose lease expired reads
`incomplete`.

How a run starts is a request object: `FreshRun`, `ResumeRun` (see `resume_request`), `RescoreRun`,
`PartitionRun` (a Dagster partition). A run's duration is the working time its stages stored.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._aio import run_anywhere as run_coroutine
from .._lazy import lazy_names
from .._testing import pause_point
from ._agent import AgentContext, Recorded, call_agent
from ._aggregate import summarise
from ._conversation import ConversationContext
from ._daemon_requests import REQUESTS_DIR, local_instance_exists, requests_dir, write_run_request
from ._execute import RunInterrupted, agent_step, execute, finish, full_step, rescore_step, start_run, stream
from ._lease import LeaseRenewer, lease
from ._plan import RunPlan, new_run_id, prepare
from ._requests import FailedItemsRun, FreshRun, PartitionRun, RescoreRun, ResumeRun, RunRequest
from ._resume import failed_request, resume_request
from ._session import Observer, Session
from ._stages import build_report, item_keys, judge_verdicts, produce, score
from ._stored import finish_from_store
from ._variant import Variant

if TYPE_CHECKING:
    from ._group import execute_group, new_group_id
    from ._partials import finish_from_exchange
    from ._shard import Shard, ShardDone, cut, run_shard

__all__ = [
    "REQUESTS_DIR",
    "AgentContext",
    "ConversationContext",
    "FailedItemsRun",
    "FreshRun",
    "LeaseRenewer",
    "Observer",
    "PartitionRun",
    "Recorded",
    "RescoreRun",
    "ResumeRun",
    "RunInterrupted",
    "RunPlan",
    "RunRequest",
    "Session",
    "Shard",
    "ShardDone",
    "Variant",
    "agent_step",
    "build_report",
    "call_agent",
    "cut",
    "execute",
    "execute_group",
    "failed_request",
    "finish",
    "finish_from_exchange",
    "finish_from_store",
    "full_step",
    "item_keys",
    "judge_verdicts",
    "lease",
    "local_instance_exists",
    "new_group_id",
    "new_run_id",
    "pause_point",
    "prepare",
    "produce",
    "requests_dir",
    "rescore_step",
    "resume_request",
    "run_coroutine",
    "run_shard",
    "score",
    "start_run",
    "stream",
    "summarise",
    "write_run_request",
]

#: A run group's names load on first use (a run of an experiment without variants runs no group), and so do a
#: Dagster shard's (a library run writes no exchange).
__getattr__, __dir__ = lazy_names(__name__, {
    "execute_group": "._group", "new_group_id": "._group", "finish_from_exchange": "._partials",
    **dict.fromkeys(("Shard", "ShardDone", "cut", "run_shard"), "._shard")}, __all__, globals())
