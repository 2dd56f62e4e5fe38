"""The studio's scripted world: ten labelled samples and a loopback judge that drafts a grader and grades
60% exact (one sample one step off, three two steps off) until the rubric asks for ISO 8601 dates,
then 90% exact (one sample one step off)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from fakellm import FakeLLM, Reply, text

#: id -> truth; the studio's samples file lists them in this order.
TRUTH = {f"d{i}": score for i, score in enumerate([-3, -2, -1, 0, 1, 2, 3, -3, 2, 1])}
#: The edit that sharpens the grader: a rubric holding it grades 9 of 10 exactly.
MARK = "ISO 8601"
OFF_BY_TWO = ("d7", "d8", "d9")
OFF_BY_ONE_V1 = "d5"
OFF_BY_ONE_V2 = "d9"
DRAFT = {"name": "dates", "spec": ["Grade whether the answer gives the date the user asked for."],
         "cards": [{"title": "Format", "specs": ["The date is written out."]},
                   {"title": "Tone", "specs": ["The answer is polite."]}]}
_RESPONSE = re.compile(r"BEGIN assistant response #(\w+)\n(.*?)\nEND assistant response #\1", re.DOTALL)


def answer_of(sample_id: str) -> str:
    return f"The date for {sample_id} is the 3rd of May."


def scripted_grade(sample_id: str, sharpened: bool) -> int:
    """The grade the loopback judge gives: the truth, except the scripted misses."""
    truth = TRUTH[sample_id]
    if sharpened:
        return truth - 1 if sample_id == OFF_BY_ONE_V2 else truth
    if sample_id in OFF_BY_TWO:
        return truth + 2 if truth <= 1 else truth - 2
    return truth + 1 if sample_id == OFF_BY_ONE_V1 else truth


def respond(kind: str, body: dict[str, Any]) -> Reply:
    system = next((m["content"] for m in body["messages"] if m["role"] == "system"), "")
    prompt = next(m["content"] for m in body["messages"] if m["role"] == "user")
    if system.startswith("You write graders"):
        return text("Here is the grader:\n" + json.dumps(DRAFT))
    response = _RESPONSE.search(prompt)
    assert response is not None, prompt
    sample_id = next(key for key in TRUTH if answer_of(key) == response.group(2))
    score = scripted_grade(sample_id, MARK in prompt)
    return text(json.dumps({"score": score, "notes": f"{body['model']} gives {sample_id} {score:+d}"}))


def write_samples(root: Path) -> Path:
    path = root / "labelled.jsonl"
    rows = [{"id": key, "userMessage": f"What is the date for {key}?", "assistantResponse": answer_of(key),
             "score": truth} for key, truth in TRUTH.items()]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


@pytest.fixture(name="studio_root")
def studio_project(judged_project: Path, llm: FakeLLM) -> Path:
    """A project whose judge drafts and grades as scripted, holding labelled.jsonl."""
    write_samples(judged_project)
    llm.respond = respond
    return judged_project
