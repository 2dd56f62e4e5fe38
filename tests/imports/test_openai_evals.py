"""`cobalt import openai-evals`: an Evals API eval, its runs and its JSONL data as an experiment, each grader an
evaluator, run against the loopback model with the pass/fail per item the graders' rules give."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from fakellm import FakeLLM, Reply
from imports_world import capitals_model, cobalt, copy_fixture, files_under, messages_text

from cobalt_lib import load_file


def graded(kind: str, body: dict[str, Any]) -> Reply:
    """The agent as in the promptfoo tests; the score_model grader passes an answer naming the capital, the
    label_model grader calls every answer terse."""
    asked = messages_text(body)
    if "Expected capital:" in asked:
        expected = re.search(r"Expected capital: (\w+)", asked)
        answer_line = asked.split("Answer:", 1)[1].split("\n")[0]
        good = expected is not None and expected.group(1) in answer_line
        return Reply(text=json.dumps({"score": 1.0 if good else 0.25, "reason": "graded"}))
    if "Classify the tone" in asked:
        return Reply(text=json.dumps({"score": 1.0, "reason": "terse"}))
    return capitals_model(kind, body)


@pytest.fixture
def imported(judged_project: Path, capsys: pytest.CaptureFixture[str]) -> Path:
    source = copy_fixture("openai_evals", judged_project)
    code, out, err = cobalt(capsys, "import", "openai-evals", str(source), "-o", "experiments/capitals.cobalt.py")
    assert code == 0, err
    assert "created  data/capitals.jsonl (4 items)" in out
    return judged_project / "experiments" / "capitals.cobalt.py"


def test_the_items_are_the_data_files_items_and_the_templates_read_cobalts_fields(imported: Path) -> None:
    items = [json.loads(line) for line in (imported.parent.parent / "data" / "capitals.jsonl").open()]
    assert items[0] == {"country": "France", "capital": "Paris"}
    text = imported.read_text()
    assert '        {"role": "user", "content": "What is the capital of {{country}}?"},' in text
    assert '    "gpt-4o-mini": Model("openai", "gpt-4o-mini", temperature=0, max_tokens=64),' in text
    assert '        Evaluator(name="Exact capital", type="exact-match", field="capital"),' in text
    assert "Expected capital: {{capital}}\nAnswer: {{output}}" in text
    assert "            threshold=0.75,\n" in text  # pass_threshold 4 on the range 1..5


def test_each_grader_passes_and_fails_the_items_its_rules_say(imported: Path, llm: FakeLLM) -> None:
    llm.respond = graded
    [experiment] = load_file(imported)
    reports = {r.variant: r for r in experiment.run_variants()}
    passed = {variant: {name: [item.evaluations[name].passed for item in report.items]
                        for name in report.items[0].evaluations} for variant, report in reports.items()}
    everything = [True] * 4
    assert passed["model=gpt-4o-mini"] == {"Exact capital": everything, "Mentions capital": everything,
                                           "Close to capital": everything, "Correctness": everything,
                                           "Tone": everything, "Short answer": everything}
    # gpt-4o adds a full stop: not equal, still mentioned, and within fuzzy_match's 0.8 ("Rome." is 0.8 exactly)
    assert passed["model=gpt-4o"]["Exact capital"] == [False] * 4
    assert passed["model=gpt-4o"]["Mentions capital"] == everything
    assert [item.evaluations["Close to capital"].score for item in reports["model=gpt-4o"].items] == pytest.approx(
        [5 / 6, 5 / 6, 4 / 5, 7 / 8])
    developer = next(r["body"] for r in llm.requests if r["body"].get("model") == "gpt-4o")
    assert developer["messages"][0] == {"role": "system", "content": "Answer with the city name only."}


REFUSED = [
    "runs.json, line 10 (data_source.sampling_params.top_p): sampling parameter 'top_p' has no cobalt equivalent "
    "(cobalt sends temperature and max_tokens); remove it",
    "runs.json, line 10 (data_source.sampling_params.seed): sampling parameter 'seed' has no cobalt equivalent "
    "(cobalt sends temperature and max_tokens); remove it",
    "eval.json, line 5 (data_source_config.type): a 'stored_completions' data source reads stored completions or "
    "logs, which cobalt cannot fetch; export them as JSONL items",
    "eval.json, line 12 (testing_criteria[0].evaluation_metric): text_similarity metric 'meteor' has no cobalt kind "
    "(cobalt has fuzzy_match as levenshtein, bleu, cosine as similarity, rouge_1, rouge_2, rouge_l); choose one of "
    "them",
    "eval.json, line 18 (testing_criteria[1].input): grades '{{item.category}}', but cobalt grades the agent's "
    "output; use input {{sample.output_text}}",
    "eval.json, line 23 (testing_criteria[2].type): grader type 'multi' has no cobalt equivalent; declare its "
    "graders one by one (cobalt scores each as its own evaluator)",
]


def test_every_grader_without_an_equivalent_is_one_sentence_and_nothing_is_written(
        project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    source = copy_fixture("openai_evals_refused", project)
    code, _, err = cobalt(capsys, "import", "openai-evals", str(source / "eval.json"))
    assert code == 2
    assert err.splitlines()[1:] == [f"  - {s}" for s in REFUSED]
    assert files_under(project) == [f"source/{name}" for name in files_under(source)]


def test_an_eval_without_its_runs_names_what_to_save(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    source = copy_fixture("openai_evals", project)
    (source / "runs.json").unlink()
    code, _, err = cobalt(capsys, "import", "openai-evals", str(source), "--skip-unsupported")
    assert code == 2
    assert err.splitlines()[1] == ("  - eval.json, line 1: has no runs.json beside it, and only a run names the model "
                                   "and the input messages; save GET /v1/evals/{id}/runs as runs.json next to it")


def test_a_runs_saved_output_items_become_its_run_in_history(imported: Path, capsys: pytest.CaptureFixture[str],
                                                             llm: FakeLLM) -> None:
    from cobalt_lib import Store

    store = Store(imported.parent.parent / ".cobalt" / "cobalt.duckdb")
    [run] = store.runs()
    assert (run["run_id"], run["experiment"], run["variant"], run["status"]) == (
        "openai-67e57965b480819094274e3a32235e4c", "capital-cities", "model=gpt-4o-mini", "completed")
    assert str(run["started_at"]).startswith("2025-03-27")
    scores = {(s["item_index"], s["evaluator"]): (s["score"], s["passed"]) for s in store.rows("scores", run["run_id"])}
    assert scores[(3, "Exact capital")] == (0.0, False) and scores[(3, "Close to capital")] == (0.5, False)
    assert scores[(0, "Exact capital")] == (1.0, True)  # the API's "NAME-<uuid>" result is evaluator NAME
    outputs = sorted(store.rows("outputs", run["run_id"]), key=lambda r: r["item_index"])
    assert [o["output"] for o in outputs] == ["Paris", "Tokyo", "Rome", "Nairobi City"]
    # the next cobalt run of the imported file pairs its items with the recorded ones: same identities
    llm.respond = graded
    [experiment] = load_file(imported)
    report = experiment.run_variants(["model=gpt-4o-mini"])[0]
    assert [i.item_id for i in report.items] == [o["item_id"] for o in outputs]
