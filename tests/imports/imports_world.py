"""What the import tests share: the CLI in-process, a fixture copied into a project, the loopback model."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest
from fakellm import Reply, answer, text

from cobalt_lib.cli import main

FIXTURES = Path(__file__).parent / "fixtures"

CAPITALS = {"France": "Paris", "Japan": "Tokyo", "Italy": "Rome", "Kenya": "Nairobi"}


def cobalt(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as exited:
        main(list(args))
    out, err = capsys.readouterr()
    return int(exited.value.code or 0), out, err


def copy_fixture(name: str, project: Path) -> Path:
    target = project / "source"
    shutil.copytree(FIXTURES / name, target)
    return target


def files_under(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file())


def messages_text(body: dict[str, Any]) -> str:
    messages = body.get("messages") or []
    return "\n".join(str(m.get("content", "")) if isinstance(m, dict) else str(m) for m in messages)


def capitals_model(kind: str, body: dict[str, Any]) -> Reply:
    """The agent's model and its judge, told apart by what they are asked.

    The agent names the city alone when told to (gpt-4o adds a full stop), else says a sentence that, for
    Japan, also mentions Kyoto; the judge passes a rubric when the output names the capital, and calls a
    bare city a subset of the expert's sentence (factuality A) and a sentence the same (C)."""
    asked = messages_text(body)
    rubric = re.search(r"<Output>\n(.*?)\n</Output>\n<Rubric>\n(.*?)\n</Rubric>", asked, re.S)
    if rubric:  # cobalt's llm-judge and promptfoo's llm-rubric lay the output and rubric out alike
        good = next((c for c in CAPITALS.values() if c in rubric.group(2)), "") in rubric.group(1)
        return Reply(text=json.dumps({"score": 1.0 if good else 0.0, "pass": good, "reason": "graded"}))
    submitted = re.search(r"\[Submission\]: (.*?)\n|<submitted_answer>\n(.*?)\n</submitted_answer>", asked, re.S)
    if submitted:  # cobalt's factuality reads "choice", promptfoo's "category"
        choice = "C" if "capital" in (submitted.group(1) or submitted.group(2)) else "A"
        return Reply(text=json.dumps({"choice": choice, "category": choice, "reason": "compared"}))
    country = next((c for c in CAPITALS if c in asked), None)
    if country is None:
        return answer(0.5, "unknown")
    city = CAPITALS[country]
    if re.search(r"city name only|Answer with the city", asked):
        return text(city + ("." if body.get("model") == "gpt-4o" else ""))
    extra = ", not Kyoto" if country == "Japan" else ""
    return text(f"The capital of {country} is {city}{extra}.")
