"""docs/evaluators.md shows the exact prompts of the model-judged kinds: each `<!-- prompt: module.NAME -->`
block holds that constant, so the documented prompts cannot drift from the ones sent."""

from __future__ import annotations

import importlib
import re
from pathlib import Path

import pytest

DOC = Path(__file__).parents[2] / "docs" / "evaluators.md"
BLOCK = re.compile(r"<!-- prompt: (?P<name>[\w.]+) -->\n```text\n(?P<text>.*?)\n```", re.DOTALL)
JUDGED = ("_faithfulness", "_answer_relevancy", "_context_precision", "_context_recall", "_factuality", "_g_eval",
          "_task_completion", "_goal_completion", "_role_adherence", "_knowledge_retention", "_turn_relevancy")


def _constant(name: str) -> str:
    if name == "SYSTEM":
        return importlib.import_module("cobalt_lib.evaluators._judged").SYSTEM
    module, _, attr = name.partition(".")
    return str(getattr(importlib.import_module(f"cobalt_lib.evaluators.kinds.{module}"), attr))


def documented() -> dict[str, str]:
    return {m.group("name"): m.group("text") for m in BLOCK.finditer(DOC.read_text(encoding="utf-8"))}


def test_every_prompt_of_the_judged_kinds_is_documented() -> None:
    names = set(documented())
    for module in JUDGED:
        loaded = importlib.import_module(f"cobalt_lib.evaluators.kinds.{module}")
        prompts = {f"{module}.{attr}" for attr in vars(loaded) if attr.endswith("PROMPT")}
        assert prompts and prompts <= names, f"undocumented prompts: {sorted(prompts - names)}"


@pytest.mark.parametrize("name", sorted(documented()))
def test_a_documented_prompt_is_the_one_sent(name: str) -> None:
    sent = _constant(name).replace("{{", "{").replace("}}", "}")  # the template's escaped braces, as the judge reads
    assert documented()[name] == sent, f"docs/evaluators.md shows another {name}; copy the constant into the page"
