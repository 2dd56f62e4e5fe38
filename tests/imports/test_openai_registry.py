"""`cobalt import openai-registry`: an openai/evals eval spec and its samples as an experiment whose agent
sends each sample's own messages, scored as the eval class scores them."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from fakellm import FakeLLM
from imports_world import FIXTURES, capitals_model, cobalt

from cobalt_lib import load_file


def test_a_match_eval_checks_each_sample_starts_with_its_ideal_answer(
        judged_project: Path, llm: FakeLLM, capsys: pytest.CaptureFixture[str]) -> None:
    shutil.copytree(FIXTURES / "openai_registry", judged_project / "registry")
    code, _, err = cobalt(capsys, "import", "openai-registry", "registry/evals/capitals.yaml")
    assert code == 0, err
    items = [json.loads(line) for line in (judged_project / "data" / "capitals.jsonl").open()]
    assert [item["checks"] for item in items] == [[{"type": "starts_with", "value": "Paris"}],
                                                  [{"type": "regex", "pattern": r"^\s*(?:Tokyo|東京)"}],
                                                  [{"type": "starts_with", "value": "Rome"}]]
    llm.respond = capitals_model
    [experiment] = load_file(judged_project / "experiments" / "capitals.cobalt.py")
    report = experiment.run()
    assert [item.output for item in report.items] == ["Paris", "Tokyo", "The capital of Italy is Rome."]
    assert [item.evaluations["checks"].passed for item in report.items] == [True, True, False]
    first = llm.requests[0]["body"]["messages"]
    assert first[0] == {"role": "system", "content": "Answer with the city name only."}


def test_an_eval_class_beyond_the_basic_ones_is_refused(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    shutil.copytree(FIXTURES / "openai_registry", project / "registry")
    spec = project / "registry" / "evals" / "capitals.yaml"
    spec.write_text(spec.read_text().replace("evals.elsuite.basic.match:Match", "evals.elsuite.lambada:Lambada"))
    code, _, err = cobalt(capsys, "import", "openai-registry", str(spec))
    assert code == 2
    assert err.splitlines()[1] == (
        "  - capitals.yaml, line 7 (capitals.dev.v0.class): eval class 'evals.elsuite.lambada:Lambada' is not one of "
        "the basic evals (Match, Includes, FuzzyMatch, JsonMatch, ModelBasedClassify with the fact spec); import its "
        "samples with a basic class, or write the experiment by hand")
    assert not (project / "experiments").exists() and not (project / "data").exists()
