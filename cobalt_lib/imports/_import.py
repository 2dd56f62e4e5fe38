"""`import_source`: read a source of another eval tool, check all of it, then write the experiment."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from .._errors import CobaltError
from ..config._config import Config
from ._history import check_new, record
from ._plan import Plan
from ._source import Findings
from ._writer import Written, write

#: `cobalt import FORMAT`: each format's reader module (loaded when used). `inspect` logs go into history
#: instead (`_inspect.record_logs`).
FORMATS = {"promptfoo": "_promptfoo", "openai-evals": "_openai_evals", "openai-registry": "_openai_registry",
           "deepeval": "_deepeval"}


def _reader(fmt: str) -> Callable[[Path, Findings], Plan]:
    import importlib

    if fmt not in FORMATS:
        raise CobaltError(f"unknown import format {fmt!r}; use one of {', '.join(FORMATS)} or inspect.")
    module = importlib.import_module(f"{__package__}.{FORMATS[fmt]}")
    read: Callable[[Path, Findings], Plan] = module.read
    return read


def plan_import(fmt: str, path: Path, *, skip_unsupported: bool = False) -> Plan:
    """What importing `path` would write; raises `ImportRefused` with every problem found, all at once."""
    reader = _reader(fmt)
    findings = Findings(path.name, skip_unsupported)
    plan = reader(path, findings)
    plan.skipped = findings.check()
    return plan


def import_source(fmt: str, path: Path, *, output: Path | None = None, dataset_dir: Path = Path("data"),
                  skip_unsupported: bool = False, config: Config | None = None) -> Written:
    """Import `path` (a source in `fmt`): the experiment file (default `experiments/NAME.cobalt.py`) and its
    dataset (`DATASET_DIR/NAME.jsonl`), and the runs the source already ran into `config`'s store (an Evals
    API run's saved output items). Nothing is written when any construct is refused."""
    plan = plan_import(fmt, path, skip_unsupported=skip_unsupported)
    experiment = output or Path("experiments") / f"{plan.name}.cobalt.py"
    name = experiment.name.removesuffix(".py").removesuffix(".cobalt")
    if plan.history and config is not None:
        check_new(config, plan.history)
    written = write(plan, experiment, dataset_dir / f"{name}.jsonl")
    if plan.history and config is not None:
        record(config, plan.history)
        written.runs.extend(report.id for report in plan.history)
    return written
