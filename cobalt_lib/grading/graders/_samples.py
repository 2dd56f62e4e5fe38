"""Grading samples: a JSONL of `{userMessage, assistantResponse, id?, score?, metadata?}`, and model routing."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from ..._errors import ConfigError, DatasetError, raise_bad_lines

#: Accepted spellings of each field: camelCase as in Bolt Foundry's samples, and snake_case.
_KEYS = {
    "user_message": ("userMessage", "user_message"),
    "assistant_response": ("assistantResponse", "assistant_response"),
    "expected_output": ("expectedOutput", "expected_output"),
    "id": ("id",),
    "score": ("score",),
    "metadata": ("metadata",),
}


class Sample(BaseModel):
    """One output to grade; `score` is the human (ground-truth) grade -3..3, when known."""

    id: str
    user_message: Any
    assistant_response: Any
    expected_output: Any = None
    score: int | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)
    line: int = 0


def load_samples(path: str | Path) -> list[Sample]:
    """Every sample of a JSONL file; a sample without an `id` gets its line number. A bad line is one
    DatasetError naming the file, the line and the field."""
    file = Path(path)
    if not file.is_file():
        raise DatasetError(f"Samples file {path} does not exist; pass a JSONL file of "
                           '{"userMessage": ..., "assistantResponse": ..., "score": -3..3} lines.')
    samples: list[Sample] = []
    seen: dict[str, int] = {}
    problems: list[str | DatasetError] = []
    for number, line in enumerate(file.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            sample = _sample(_row(line, file, number), file, number)
        except DatasetError as exc:  # every bad line is said at once, as `cobalt labels import` does
            problems.append(exc)
            continue
        if sample.id in seen:
            problems.append(f"{file}:{number}: id {sample.id!r} is already used on line {seen[sample.id]}; "
                            "ids must be unique.")
            continue
        seen[sample.id] = number
        samples.append(sample)
    raise_bad_lines(problems, file)
    if not samples:
        raise DatasetError(f"Samples file {file} holds no samples; add one JSON object per line.")
    return samples


def _row(line: str, file: Path, number: int) -> dict[str, Any]:
    try:
        row = json.loads(line)
    except json.JSONDecodeError as exc:
        raise DatasetError(f"{file}:{number}: not valid JSON ({exc.msg}, column {exc.colno}).") from None
    if not isinstance(row, dict):
        raise DatasetError(f"{file}:{number}: each line must be a JSON object, got {type(row).__name__}.")
    return row


def _field(row: dict[str, Any], name: str) -> Any:
    for key in _KEYS[name]:
        if key in row:
            return row[key]
    return None


def _sample(row: dict[str, Any], file: Path, number: int) -> Sample:
    where = f"{file}:{number}"
    for name in ("user_message", "assistant_response"):
        if _field(row, name) is None:
            raise DatasetError(f"{where}: missing {_KEYS[name][0]!r} (or {_KEYS[name][1]!r}).")
    score = _field(row, "score")
    if score is not None and (isinstance(score, bool) or not isinstance(score, int | float) or score != int(score)
                              or not -3 <= score <= 3):
        raise DatasetError(f"{where}: score {score!r} must be an integer from -3 to 3 (or left out).")
    metadata = _field(row, "metadata")
    if metadata is not None and not isinstance(metadata, dict):
        raise DatasetError(f"{where}: metadata must be a JSON object, got {type(metadata).__name__}.")
    sample_id = _field(row, "id")
    if isinstance(sample_id, dict | list | bool):
        raise DatasetError(f"{where}: id must be a string or a number, got {sample_id!r}.")
    return Sample(id=str(number if sample_id is None else sample_id), user_message=_field(row, "user_message"),
                  assistant_response=_field(row, "assistant_response"), expected_output=_field(row, "expected_output"),
                  score=None if score is None else int(score), metadata=metadata or {}, line=number)


def route_model(spec: str, judge_provider: str) -> tuple[str, str]:
    """(provider, model) for a `--model provider/name`: every model through OpenRouter when
    OPENROUTER_API_KEY is set or `[judge] provider` is openrouter, else each to its own provider."""
    vendor, slash, name = spec.partition("/")
    if not slash or not vendor or not name:
        raise ConfigError(f"Model {spec!r} must be provider/name, e.g. openai/gpt-4o or anthropic/claude-sonnet-4-5.")
    if os.environ.get("OPENROUTER_API_KEY") or judge_provider == "openrouter":
        return "openrouter", name if vendor == "openrouter" else spec
    if vendor not in ("openai", "anthropic", "openrouter"):
        raise ConfigError(f"Model {spec!r}: provider {vendor!r} is not one cobalt calls directly (openai, anthropic, "
                          "openrouter); set OPENROUTER_API_KEY to reach every vendor through OpenRouter.")
    return vendor, name


def canonical_model(label: str) -> str:
    """`vendor/name` whichever way the model was reached: `openrouter/openai/gpt-4o` is `openai/gpt-4o`."""
    vendor, _, rest = label.partition("/")
    return rest if vendor == "openrouter" and "/" in rest else label
