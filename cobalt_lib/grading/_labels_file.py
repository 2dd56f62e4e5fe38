"""`cobalt labels export|import`: labels as JSONL, one label a line.

A line is `{"experiment", "evaluator", "item_id", "value", "note", "who", "set_at"}`. A grader's labels
are written in the seed's sample shape as well (`id`, `userMessage`, `assistantResponse`, `score`), so
the file is also a samples file for `cobalt grade --input` and the grader studio. An import checks every
line first and writes nothing when one is bad, saying what is wrong with each (file and line).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from .._errors import ConfigError, DatasetError, raise_bad_lines
from ..config._config import Config
from ..store._store import Store
from ._labels import MAX_NOTE, Label, current_labels, evaluator_scales, who_default
from .calibration._scales import SCALE_TEXT, label_value


class Imported(BaseModel):
    """What an import wrote: labels per (experiment, evaluator)."""

    path: str
    written: int = 0
    per_evaluator: dict[str, int] = Field(default_factory=dict)
    #: Warnings: labels on item ids that no stored run of their experiment holds (they calibrate nothing yet).
    warnings: list[str] = Field(default_factory=list)


def export_lines(config: Config, experiment: str, evaluator: str | None = None) -> list[dict[str, Any]]:
    """The experiment's current labels (of one evaluator) as JSONL records; graders' in the sample shape."""
    store = Store.for_config(config)
    runs = store.runs(experiment, missing_ok=True)
    if not runs:
        raise ConfigError(f"No stored run of experiment {experiment!r}; `cobalt history` lists the experiments.")
    scales = {}
    for run in reversed(runs):  # the newest run's description of an evaluator wins
        scales.update(evaluator_scales(run))
    if evaluator is not None and evaluator not in scales:
        raise ConfigError(f"Experiment {experiment!r} has no evaluator {evaluator!r} (its evaluators: "
                          f"{', '.join(scales) or 'none'}).")
    labels = current_labels(config, experiment, evaluator)
    seen = _outputs(store, runs, {label.item_id for label in labels if _is_grader(scales, label)})
    lines = []
    for label in labels:
        line: dict[str, Any] = {"experiment": label.experiment, "evaluator": label.evaluator,
                                "item_id": label.item_id, "value": _plain(label.value), "note": label.note,
                                "who": label.who, "set_at": label.set_at}
        if _is_grader(scales, label):
            item, output = seen.get(label.item_id, (None, None))
            line = {"id": label.item_id, "userMessage": _user_message(item), "assistantResponse": output,
                    "score": int(label.value), **({"notes": label.note} if label.note else {}), **line}
        lines.append(line)
    return lines


def _is_grader(scales: dict[str, Any], label: Label) -> bool:
    found = scales.get(label.evaluator)
    return found is not None and found.scale == "-3..3"


def _plain(value: float) -> float | int:
    return int(value) if value == int(value) else value


def _user_message(item: Any) -> Any:
    return item.get("input", item) if isinstance(item, dict) else item


def _outputs(store: Store, runs: list[dict[str, Any]], wanted: set[str]) -> dict[str, tuple[Any, Any]]:
    """`{identity: (item, output)}` from the newest run holding each wanted item (its first ok repeat)."""
    found: dict[str, tuple[Any, Any]] = {}
    for run in runs:  # newest first
        if not wanted - found.keys():
            break
        for row in store.rows("outputs", run["run_id"]):
            ident = str(row.get("item_id") or "")
            if ident in wanted and ident not in found and row.get("status") == "ok":
                found[ident] = (row.get("input"), row.get("output"))
    return found


def samples_from_labels(config: Config, experiment: str, evaluator: str) -> Path:
    """The labels people set on a grader evaluator of `experiment`, written as a samples file for the grader
    studio (`<output_dir>/studio/labels/EXPERIMENT_EVALUATOR.jsonl`); its path."""
    lines = export_lines(config, experiment, evaluator)
    samples = [line for line in lines if "userMessage" in line]
    if lines and not samples:
        raise ConfigError(f"The labels of {evaluator!r} in {experiment!r} are not on a grader's -3..3 scale; the "
                          "studio drafts graders from -3..3 labels: label a grader evaluator, or write a samples file.")
    if not samples:
        raise ConfigError(f"No labels set on {evaluator!r} in {experiment!r} yet; label some items on the run page "
                          "(`cobalt serve`, the item's label box) or import them with `cobalt labels import`.")
    safe = "".join(c if c.isalnum() or c in "-_" else "_" for c in f"{experiment}_{evaluator}")
    path = config.output_path / "studio" / "labels" / f"{safe}.jsonl"
    write_export(samples, path)
    return path


def write_export(lines: list[dict[str, Any]], path: Path | None) -> str:
    """The JSONL text, also written to `path` when given."""
    text = "".join(json.dumps(line, ensure_ascii=False, default=str) + "\n" for line in lines)
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return text


def import_labels(config: Config, path: Path, *, experiment: str | None = None, evaluator: str | None = None,
                  who: str | None = None) -> Imported:
    """Check every line of `path`, then write its labels in one transaction (none when a line is bad).
    `experiment`/`evaluator` fill lines that leave them out."""
    if not path.is_file():
        raise DatasetError(f"Labels file {path} does not exist; `cobalt labels export EXPERIMENT -o {path}` "
                           "writes one.")
    store = Store.for_config(config)
    scales_of: dict[str, dict[str, Any]] = {}
    rows, problems = [], []
    who = who or who_default(config.root)  # a line's own "who" wins; asked once, not per line
    for number, text in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not text.strip():
            continue
        try:
            rows.append(_row(text, store, scales_of, experiment, evaluator, who))
        except ValueError as exc:
            problems.append(f"{path}:{number}: {exc}")
    raise_bad_lines(problems, path, nothing=", nothing imported")
    if not rows:
        raise DatasetError(f"Labels file {path} holds no labels; write one JSON object per line.")
    store.add_labels(rows)
    result = Imported(path=str(path), written=len(rows))
    for row in rows:
        key = f"{row['experiment']} / {row['evaluator']}"
        result.per_evaluator[key] = result.per_evaluator.get(key, 0) + 1
    result.warnings = unmatched_labels(store, rows)
    return result


#: Item ids named in a warning about labels that match no item.
SHOWN_IDS = 5


def unmatched_labels(store: Store, rows: list[dict[str, Any]]) -> list[str]:
    """Per experiment, a warning when some labels are on item ids no stored run of it holds: a typo in an id,
    or a dataset whose items were renamed; such a label pairs with no score, so no calibration counts it."""
    warnings = []
    for experiment in dict.fromkeys(row["experiment"] for row in rows):
        ids = [row["item_id"] for row in rows if row["experiment"] == experiment]
        held = store.held_identities(experiment, ids)
        missing = [i for i in dict.fromkeys(ids) if i not in held]
        if not missing:
            continue
        labels = sum(1 for i in ids if i not in held)
        shown = ", ".join(missing[:SHOWN_IDS]) + (f" and {len(missing) - SHOWN_IDS} more" if len(missing) > SHOWN_IDS
                                                  else "")
        is_are, on = ("is", "an item id") if labels == 1 else ("are", "item ids")
        warnings.append(f"{labels} of the {len(ids)} label{'s' if len(ids) != 1 else ''} for {experiment!r} {is_are} "
                        f"on {on} no stored run of it holds ({shown}), matching no item, so no calibration counts "
                        f"{'it' if labels == 1 else 'them'}; check the ids against `cobalt labels export {experiment}` "
                        "or the dataset's `id` fields.")
    return warnings


def _row(text: str, store: Store, scales_of: dict[str, dict[str, Any]], experiment: str | None,
         evaluator: str | None, who: str | None) -> dict[str, Any]:
    """One line as a label row; a ValueError says what is wrong with it."""
    try:
        line = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"not valid JSON ({exc.msg}, column {exc.colno}).") from None
    if not isinstance(line, dict):
        raise ValueError(f"each line must be a JSON object, got {type(line).__name__}.")
    exp = line.get("experiment", experiment)
    name = line.get("evaluator", evaluator)
    if not isinstance(exp, str) or not exp:
        raise ValueError('missing "experiment" (or pass --experiment).')
    if not isinstance(name, str) or not name:
        raise ValueError('missing "evaluator" (or pass --evaluator).')
    if exp not in scales_of:
        scales_of[exp] = {}
        for run in reversed(store.runs(exp, missing_ok=True)):
            scales_of[exp].update(evaluator_scales(run))
    if not scales_of[exp]:
        raise ValueError(f"experiment {exp!r} has no stored run; run it first, so that its evaluators' scales "
                         "are known.")
    if name not in scales_of[exp]:
        raise ValueError(f"experiment {exp!r} has no evaluator {name!r} (its evaluators: "
                         f"{', '.join(scales_of[exp])}).")
    item_id = line.get("item_id", line.get("id"))
    if isinstance(item_id, bool) or not isinstance(item_id, str | int) or item_id == "":
        raise ValueError('missing "item_id" (or "id"): the item\'s id, or its content hash as exported.')
    scale = scales_of[exp][name].scale
    raw = next((line[k] for k in ("value", "score", "label") if k in line), None)
    value = None if raw is None else label_value(scale, raw)
    if value is None:
        raise ValueError(f'"value" {raw!r} is not a label of {name!r}, which takes {SCALE_TEXT[scale]}.')
    note = line.get("note", line.get("notes", ""))
    if not isinstance(note, str) or len(note) > MAX_NOTE:
        raise ValueError(f'"note" must be text of at most {MAX_NOTE} characters.')
    return {"experiment": exp, "evaluator": name, "item_id": str(item_id), "value": value, "note": note,
            "who": str(line.get("who") or who), "set_at": _when(line.get("set_at")),
            "run_id": None, "item_index": None}


def _when(value: Any) -> str:
    from datetime import UTC, datetime

    if value is None:
        return datetime.now(UTC).isoformat()
    try:
        parsed = datetime.fromisoformat(str(value))
    except ValueError:
        raise ValueError(f'"set_at" {value!r} is not an ISO 8601 time (2026-11-26T18:00:00+00:00).') from None
    return (parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)).isoformat()
