"""A sharded test project, and the job a spawned step process (or a celery worker) rebuilds from it.

`make_project` writes a project of 8 items whose agent kills its own process (SIGKILL) on an item
named by a file in the project: `kill-once-<index>` (the file is removed first, so a retry goes on)
or `kill-always-<index>`. `sharded_job` is the reconstructor `dg.build_reconstructable_job` names.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import dagster as dg

EXPERIMENT = "shardy"
ITEMS = 8

EXPERIMENT_FILE = '''
import os
import re
import signal
import time
from pathlib import Path

from cobalt_lib import Dataset, Evaluator, experiment, threshold

ROOT = Path(__file__).resolve().parents[1]


def _committed(shard):
    """Whether a part of `shard` is committed (so a retry has something to resume from): its marker,
    `part-000001-<attempt>.json`, is written last; `part-*.json` alone also matches the part's
    `.tally.json` and `.items.json`, written before it (a kill then lost the part, and the retry ran it)."""
    folder = ROOT / ".cobalt" / "exchange"
    return any(re.fullmatch(r"part-[0-9]{6}-[0-9a-f]+[.]json", p.name)
               for p in folder.glob(f"*/shard-{shard:05d}/part-*.json"))


def _fault(index):
    once = ROOT / f"kill-once-{index}"
    if once.exists():
        while not _committed(index // 3):  # the test's timeout bounds it: no deadline a loaded machine misses
            time.sleep(0.01)  # items run concurrently: die only once an earlier item's part is written
        once.unlink()
        os.kill(os.getpid(), signal.SIGKILL)
    if (ROOT / f"kill-always-{index}").exists():
        os.kill(os.getpid(), signal.SIGKILL)


@experiment("shardy", Dataset([{"input": f"q{i}", "expected_output": f"Q{i}"} for i in range(ITEMS)]),
            evaluators=[Evaluator(name="exact", type="exact-match", field="expected_output"),
                        Evaluator(name="judge", type="llm-judge", prompt="Rate {{output}} for {{input}}.")],
            assertions=[threshold("exact", 0.75)], concurrency=1)
def shardy(ctx):
    _fault(ctx.index)
    return ctx.input.upper()
'''


def make_project(root: Path, judge_toml: str, *, shard_items: int = 3, exchange: str | None = None) -> Path:
    """A project under `root` whose judge is configured by `judge_toml` (the loopback server)."""
    (root / "experiments").mkdir(parents=True)
    (root / "experiments" / "shardy.cobalt.py").write_text(EXPERIMENT_FILE.replace("ITEMS", str(ITEMS)))
    dagster = f"\n[dagster]\nshard_items = {shard_items}\n" + (f'exchange = "{exchange}"\n' if exchange else "")
    (root / "cobalt.toml").write_text(judge_toml + dagster)
    return root


def sharded_job(project_dir: str, executor: str = "multiprocess", broker: str | None = None) -> Any:
    """The experiment's job, on the multiprocess executor or on celery with `broker` (and it as backend)."""
    import cobalt_dagster

    chosen: dg.ExecutorDefinition | None = None
    if executor == "celery":
        from dagster_celery import celery_executor

        chosen = celery_executor.configured({"broker": broker, "backend": broker})
    defs = cobalt_dagster.build_definitions(project_dir, executor=chosen)
    return defs.resolve_job_def(f"{EXPERIMENT}_eval")


def reconstructable(project_dir: Path, **kwargs: str) -> Any:
    """`sharded_job` as a job other processes rebuild (the module is importable from this directory)."""
    return dg.build_reconstructable_job(__name__, "sharded_job", reconstructable_kwargs={
        "project_dir": str(project_dir), **kwargs}, reconstructor_working_directory=str(Path(__file__).parent))
