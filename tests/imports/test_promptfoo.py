"""`cobalt import promptfoo`: a promptfooconfig.yaml as an experiment file and dataset, run against the
loopback model with the pass/fail per test that promptfoo's own rules give."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fakellm import FakeLLM
from imports_world import capitals_model, cobalt, copy_fixture, files_under

from cobalt_lib import load_file

#: Per variant, which tests pass every assertion, by promptfoo's rules worked out by hand: the bare city
#: passes all but gpt-4o's "Rome." (equals Rome); a sentence fails Japan (mentions Kyoto), Italy (equals,
#: ^R) and Kenya (starts-with Nairobi).
EXPECTED = {
    "prompt=concise,model=mini": [True, True, True, True],
    "prompt=concise,model=openai:gpt-4o": [True, True, False, True],
    "prompt=sentence,model=mini": [True, False, False, False],
    "prompt=sentence,model=openai:gpt-4o": [True, False, False, False],
}


@pytest.fixture
def imported(judged_project: Path, llm: FakeLLM, capsys: pytest.CaptureFixture[str]) -> Path:
    source = copy_fixture("promptfoo", judged_project)
    code, out, err = cobalt(capsys, "import", "promptfoo", str(source / "promptfooconfig.yaml"))
    assert code == 0, err
    assert out.splitlines() == ["created  experiments/capital-cities.cobalt.py",
                                "created  data/capital-cities.jsonl (4 items)",
                                "next: cobalt run experiments/capital-cities.cobalt.py"]
    return judged_project / "experiments" / "capital-cities.cobalt.py"


def test_each_test_becomes_an_item_carrying_its_assertions_as_checks(imported: Path) -> None:
    items = [json.loads(line) for line in (imported.parent.parent / "data" / "capital-cities.jsonl").open()]
    assert [item["id"] for item in items] == ["France", "Japan", "Italy", "Kenya"]
    france, japan, italy, kenya = items
    assert france["checks"][:2] == [{"type": "max_latency", "ms": 60000},  # defaultTest's latency, on every test
                                    {"type": "contains", "value": "Paris", "ignore_case": True}]  # {{capital}} filled
    assert france["checks"][2]["type"] == "llm-judge"
    assert "<Output>\n{{output}}\n</Output>\n<Rubric>\nNames Paris as the capital of France\n</Rubric>" in (
        france["checks"][2]["prompt"])
    assert japan["checks"][1:] == [{"type": "contains", "values": ["Tokyo", "東京"]},
                                   {"type": "contains", "value": "Kyoto", "negate": True}]
    assert (italy["expected_output"], italy["checks"][1:]) == (
        "Rome", [{"type": "exact-match", "field": "expected_output"}, {"type": "regex", "pattern": "^R"}])
    assert kenya["checks"][1:] == [{"type": "starts_with", "value": "Nairobi", "strip": False},
                                   {"type": "factuality", "field": "expected_output", "threshold": 0.4}]


def test_the_generated_file_reads_as_the_config_did(imported: Path) -> None:
    text = imported.read_text()
    assert '    "concise": """You answer with the city name only.\nWhat is the capital of {{country}}?""",' in text
    assert '    "mini": Model("openai", "gpt-4o-mini", temperature=0, max_tokens=64),' in text
    assert "    return promptfoo_score(len(output) < 200)" in text
    assert "    variants={\"prompt\": [\"concise\", \"sentence\"], \"model\": [\"mini\", \"openai:gpt-4o\"]}," in text
    assert '    assertions=[threshold("checks", 1.0)],' in text


def test_the_prompts_times_the_providers_run_as_variants_with_promptfoos_verdicts(imported: Path,
                                                                                   llm: FakeLLM) -> None:
    llm.respond = capitals_model
    [experiment] = load_file(imported)
    reports = experiment.run_variants()
    verdicts = {r.variant: [item.evaluations["checks"].passed for item in r.items] for r in reports}
    assert verdicts == EXPECTED
    python = {r.variant: [item.evaluations["python_1"].score for item in r.items] for r in reports}
    assert set(map(tuple, python.values())) == {(1.0, 1.0, 1.0, 1.0)}
    sent = [r["body"] for r in llm.requests if r["body"].get("model") == "gpt-4o"]
    assert sent[0]["messages"][0]["role"] == "user"  # no system message the source did not send
    mini = next(r["body"] for r in llm.requests if "city name only" in json.dumps(r["body"])
                and r["body"]["model"] == "gpt-4o-mini")
    assert (mini["temperature"], mini["max_tokens"]) == (0, 64)


REFUSED = [
    "promptfooconfig.yaml, line 10 (scenarios): promptfoo's 'scenarios' has no cobalt equivalent; remove it, or "
    "import without it (--skip-unsupported)",
    "promptfooconfig.yaml, line 3 (prompts[0]): uses the template expression {{message | upper}}, but cobalt fills "
    "only {{field}} and {{field.key}}; compute the value into a var and name it",
    "promptfooconfig.yaml, line 6 (providers[0]): provider 'ollama:chat:llama3' has no cobalt client; use "
    "openai:MODEL, anthropic:messages:MODEL or openrouter:MODEL (any OpenAI-compatible server: openai:chat:MODEL "
    "with config.apiBaseUrl)",
    "promptfooconfig.yaml, line 9 (providers[1].config.response_format): provider config 'response_format' has no "
    "cobalt equivalent; remove it (cobalt sends temperature and max_tokens)",
    "promptfooconfig.yaml, line 16 (tests[0].assert[0]): assertion type 'javascript' is refused: cobalt does not run "
    "JavaScript; rewrite the check as a python assertion in defaultTest (a function evaluator) or as one of the "
    "deterministic types",
    "promptfooconfig.yaml, line 23 (tests[1].assert[0]): a python assertion on one test cannot travel in the dataset "
    "(cobalt's item checks are data, not code); move it to defaultTest, where it becomes a function evaluator of "
    "every item",
    "promptfooconfig.yaml, line 25 (tests[1].assert[1]): assertion type 'not-llm-rubric' negates a model-graded "
    "check, which cobalt cannot negate; write the opposite rubric instead",
]


def test_every_construct_without_an_equivalent_is_one_sentence_and_nothing_is_written(
        project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    source = copy_fixture("promptfoo_refused", project)
    code, _, err = cobalt(capsys, "import", "promptfoo", str(source))
    assert code == 2
    assert err.splitlines() == ["error: cannot import promptfooconfig.yaml: 7 problems, nothing written (pass "
                                "--skip-unsupported to import the rest):", *(f"  - {s}" for s in REFUSED)]
    assert files_under(project) == [f"source/{name}" for name in files_under(source)]


def test_skip_unsupported_imports_the_rest_and_says_what_it_left_out(
        project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    source = copy_fixture("promptfoo_refused", project)
    code, out, err = cobalt(capsys, "import", "promptfoo", str(source), "--skip-unsupported", "-o", "exp/support.py")
    assert code == 0, err
    assert [line.removeprefix("left out ") for line in out.splitlines() if line.startswith("left out ")] == REFUSED
    text = (project / "exp" / "support.py").read_text()
    assert ("Left out (--skip-unsupported):\n- promptfooconfig.yaml, line 10 (scenarios): promptfoo's 'scenarios' "
            "has no") in text
    assert 'PROMPTS = {"prompt1": "Reply politely to: {{message}}"}' in text
    assert 'Dataset.from_file(HERE / "../data/support.jsonl")' in text
    items = [json.loads(line) for line in (project / "data" / "support.jsonl").open()]
    assert [item["checks"] for item in items] == [[{"type": "contains", "value": "parcel"}], []]
    [experiment] = load_file(project / "exp" / "support.py")
    assert [e.name for e in experiment.evaluators] == ["checks"]


@pytest.mark.slow
def test_cobalt_run_runs_the_imported_file_as_a_user_would(judged_project: Path, llm: FakeLLM,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    import os
    import subprocess
    import sys

    source = copy_fixture("promptfoo", judged_project)
    code, _, err = cobalt(capsys, "import", "promptfoo", str(source))
    assert code == 0, err
    llm.respond = capitals_model
    cli = Path(sys.executable).parent / "cobalt"
    run = subprocess.run([str(cli), "run", "experiments/capital-cities.cobalt.py", "--json"], cwd=judged_project,
                         capture_output=True, text=True, timeout=300,
                         env={**os.environ, "COBALT_DAGSTER_RECORD": "off"})
    assert run.returncode == 1, run.stderr  # promptfoo would fail too: 7 of the 16 tests fail an assertion
    from cobalt_lib import Store

    store = Store(judged_project / ".cobalt" / "cobalt.duckdb")
    runs = {r["variant"]: r["run_id"] for r in store.runs()}
    assert len(runs) == 4, run.stdout[-2000:]
    passed = {variant: [row["passed"] for row in sorted(store.rows("scores", run_id), key=lambda r: r["item_index"])
                        if row["evaluator"] == "checks"] for variant, run_id in runs.items()}
    assert passed == EXPECTED


def test_a_tests_csv_reads_its_vars_and_expected_columns(tmp_path: Path) -> None:
    from cobalt_lib.imports import plan_import

    (tmp_path / "promptfooconfig.yaml").write_text(
        'prompts: ["Translate to French: {{text}}"]\n'
        "providers:\n  - id: openai:chat:local-model\n    config: {apiHost: llm.internal:8080}\n"
        "tests: file://tests.csv\n")
    (tmp_path / "tests.csv").write_text("text,__expected,__expected2,__description\n"
                                        "hello,contains: bonjour,not-icontains: hello,greeting\ncat,chat,,animal\n")
    plan = plan_import("promptfoo", tmp_path)
    assert plan.models["openai:chat:local-model"].base_url == "https://llm.internal:8080/v1"
    assert plan.items == [
        {"text": "hello", "id": "greeting", "checks": [
            {"type": "contains", "value": "bonjour"},
            {"type": "contains", "value": "hello", "ignore_case": True, "negate": True}]},
        {"text": "cat", "id": "animal", "expected_output": "chat",
         "checks": [{"type": "exact-match", "field": "expected_output"}]}]
