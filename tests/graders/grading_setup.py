"""Grading fixtures (a module of its own: a second conftest.py would shadow the root one's `from conftest import`).
`agree` gives the truth, `off` the truth + 1 (capped at 3), `garbage` prose, `slow` the truth late."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from fakellm import FakeLLM, Reply, text

#: id -> (assistant response, truth); every level of -3..3, three of -3 (the most common label).
TRUTH = {f"s{i}": (f"answer number {i}", score) for i, score in enumerate([-3, -3, -3, -2, -1, 0, 1, 2, 3, 3])}
_RESPONSE = re.compile(r"BEGIN assistant response #(\w+)\n(.*?)\nEND assistant response #\1", re.DOTALL)

GRADER_FILE = """from cobalt_lib import grader

grader = (grader("numbers")
          .spec("Grade the answer.")
          .card("Criteria", lambda c: c.spec("It answers the question."))
          .context("policy", {policy!r}))
"""


def truth_of(body: dict[str, Any]) -> int:
    prompt = next(m["content"] for m in body["messages"] if m["role"] == "user")
    response = _RESPONSE.search(prompt)
    assert response is not None, prompt
    return next(t for answer, t in TRUTH.values() if answer == response.group(2))


def per_model(kind: str, body: dict[str, Any]) -> Reply:
    truth = truth_of(body)
    model = body["model"]
    if model == "garbage":
        return text("It looks fine to me." if len(body["messages"]) < 4 else '{"score": 9, "notes": "great"}')
    score = min(3, truth + 1) if model == "off" else truth
    return text(json.dumps({"score": score, "notes": f"{model} says {score}"}), delay=0.02 if model == "slow" else 0)


def write_grader(root: Path, policy: str = "Be strict.") -> Path:
    path = root / "graders" / "numbers.py"
    path.parent.mkdir(exist_ok=True)
    path.write_text(GRADER_FILE.format(policy=policy), encoding="utf-8")
    return path


@pytest.fixture(name="grading")
def grading_project(judged_project: Path, llm: FakeLLM) -> Path:
    """The project root, holding samples.jsonl (camelCase and snake_case, one without an id) and graders/numbers.py."""
    lines = []
    for n, (sample_id, (answer, truth)) in enumerate(TRUTH.items()):
        row: dict[str, Any] = {"userMessage" if n % 2 else "user_message": f"question {sample_id}",
                               "assistantResponse" if n % 2 else "assistant_response": answer, "score": truth,
                               "metadata": {"n": n}}
        if n != 0:
            row["id"] = sample_id
        lines.append(json.dumps(row))
    (judged_project / "samples.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    write_grader(judged_project)
    llm.respond = per_model
    return judged_project
