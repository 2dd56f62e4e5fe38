"""Inspect AI logs (`.eval` archives and `.json` logs) into history: each log one completed run, each sample
an item with its output, scores (one evaluator per scorer), model usage and time, so `cobalt history`,
`compare` and the trends carry a team's Inspect runs. Read as files: inspect_ai is not needed."""

from __future__ import annotations

import json
import re
import zipfile
from pathlib import Path
from typing import Any

from .._errors import CobaltError
from ..config._config import Config
from ..results._identity import content_hash
from ..results._report import Evaluation, ExperimentReport, ItemResult
from ._history import record, summary_of
from ._source import ImportRefused

#: Inspect's letter grades as scores (CORRECT, INCORRECT, PARTIAL, NOANSWER).
LETTERS = {"C": 1.0, "I": 0.0, "P": 0.5, "N": 0.0}


def read_log(path: Path) -> dict[str, Any]:
    """The log as one dict (`eval`, `results`, `stats`, `samples`), from either file format."""
    try:
        if path.suffix == ".eval":
            with zipfile.ZipFile(path) as archive:
                log = json.loads(archive.read("header.json"))
                names = sorted(n for n in archive.namelist() if n.startswith("samples/") and n.endswith(".json"))
                log["samples"] = [json.loads(archive.read(name)) for name in names]
                return dict(log)
        return dict(json.loads(path.read_text(encoding="utf-8")))
    except FileNotFoundError:
        raise ImportRefused(path.name, [f"{path}: no such file; give the path of an Inspect log"], []) from None
    except NotImplementedError:  # Python's zipfile reads stored and deflated members, not zstd (before 3.14)
        convert = f"inspect log convert {path.name} --to json --output-dir DIR"
        raise ImportRefused(path.name, [f"{path.name}: is compressed with zstd, which this Python cannot unpack; "
                                        f"convert it first: {convert}"], []) from None
    except (zipfile.BadZipFile, KeyError, json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ImportRefused(path.name, [f"{path.name}: is not an Inspect log ({type(exc).__name__}: {exc}); give "
                                        "a .eval or .json file that inspect wrote"], []) from None


def to_report(log: dict[str, Any], shown: str) -> ExperimentReport:
    spec = log.get("eval") or {}
    if "task" not in spec or "samples" not in log:
        raise ImportRefused(shown, [f"{shown}: has no eval spec or no samples; give a log inspect wrote with its "
                                    "samples (not a header-only summary)"], [])
    samples = sorted(log.get("samples") or [], key=lambda s: (s.get("epoch", 1), _order(spec, s)))
    items = [_item(i, sample, spec) for i, sample in enumerate(samples)]
    run_id = "inspect-" + re.sub(r"[^A-Za-z0-9]", "", str(spec.get("run_id") or spec.get("eval_id")))[:22]
    report = ExperimentReport(id=run_id, name=str(spec["task"]), timestamp=str(spec.get("created")),
                              status="completed" if log.get("status") == "success" else "failed",
                              tags=["inspect", "imported", *map(str, spec.get("tags") or [])],
                              config={"source": "inspect", "model": spec.get("model"), "log": shown,
                                      "completed_at": (log.get("stats") or {}).get("completed_at")},
                              items=items)
    report.summary = summary_of(items)
    return report


def _order(spec: dict[str, Any], sample: dict[str, Any]) -> int:
    ids = (spec.get("dataset") or {}).get("sample_ids") or []
    return ids.index(sample.get("id")) if sample.get("id") in ids else len(ids)


def _item(index: int, sample: dict[str, Any], spec: dict[str, Any]) -> ItemResult:
    item = {"id": sample.get("id"), "input": sample.get("input"), "expected_output": sample.get("target")}
    usage = sample.get("model_usage") or {}
    tokens_in = sum(int(u.get("input_tokens") or 0) for u in usage.values())
    tokens_out = sum(int(u.get("output_tokens") or 0) for u in usage.values())
    error = (sample.get("error") or {}).get("message") if sample.get("error") else None
    total = sample.get("total_time")
    return ItemResult(
        index=index, run_index=int(sample.get("epoch", 1)) - 1, input=sample.get("input"), item=item,
        input_hash=content_hash(item), item_id=str(sample.get("id", index + 1)), output=_completion(sample),
        metadata={"model": spec.get("model"), "input_tokens": tokens_in, "output_tokens": tokens_out},
        latency_ms=None if total is None else float(total) * 1000, status="error" if error else "ok", error=error,
        tokens=tokens_in + tokens_out,
        evaluations={name: _evaluation(score) for name, score in (sample.get("scores") or {}).items()})


def _completion(sample: dict[str, Any]) -> str:
    choices = (sample.get("output") or {}).get("choices") or [{}]
    content = (choices[0].get("message") or {}).get("content", "")
    if isinstance(content, list):
        return "".join(str(part.get("text", "")) for part in content if isinstance(part, dict))
    return str(content)


def _evaluation(score: dict[str, Any]) -> Evaluation:
    """An Inspect score: a number, a bool or a letter grade; any other value is kept as an eval-error."""
    value = score.get("value")
    number = LETTERS.get(value) if isinstance(value, str) else (
        float(value) if isinstance(value, int | float) else None)
    if number is None:
        return Evaluation(status="eval-error", error=f"Inspect score {json.dumps(value)[:80]} is not a number, "
                                                     "a bool or a letter grade", reason=score.get("explanation"))
    return Evaluation(score=number, raw_score=number, reason=score.get("explanation") or str(value),
                      passed=number >= 0.5)


def record_logs(config: Config, path: Path) -> list[ExperimentReport]:
    """Each log (`path`, or the logs in the folder `path`) as a completed run in the project's store and
    results files; all are read before any is written, and a log imported before is refused."""
    paths = sorted(p for p in path.iterdir() if p.suffix in (".eval", ".json")) if path.is_dir() else [path]
    if not paths:
        raise CobaltError(f"{path} holds no Inspect logs (.eval or .json); give a log file or its folder.")
    reports = [to_report(read_log(p), p.name) for p in paths]
    record(config, reports)
    return reports
