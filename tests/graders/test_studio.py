"""The grader studio's session (ops, no terminal) against the loopback judge: draft, grade with two models,
disagreements, an edit that only costs its own calls, versions compared, going back for free, export
that `cobalt grade` and `calibrated()` take as they are."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fakellm import FakeLLM
from studio_setup import MARK, OFF_BY_TWO, TRUTH, scripted_grade, studio_project  # noqa: F401  (fixture)

from cobalt_lib import Evaluator, calibrated, experiment, load_config, load_grader
from cobalt_lib._errors import ConfigError
from cobalt_lib.grading import Studio, comparison, export_version, grader_versions
from cobalt_lib.grading._grade import GradeOptions, grade

MODELS = ["openai/a", "openai/b"]


def _studio(root: Path) -> Studio:
    return Studio(load_config(root), root / "labelled.jsonl", models=MODELS)


def test_draft_grade_edit_regrade_compare_export(studio_root: Path, llm: FakeLLM) -> None:
    studio = _studio(studio_root)
    drafted = studio.draft()
    assert llm.count() == 1 and drafted.judge_model == "openai/gpt-4o-mini" and drafted.samples_shown == 10
    request = llm.requests[0]["body"]["messages"][1]["content"]
    assert all(f"The date for {key} is" in request for key in TRUTH) and "human score -3" in request
    v1 = studio.require()
    assert (v1.name, [c.title for c in v1.cards]) == ("dates", ["Format", "Tone"])
    assert v1.source == str(studio_root / ".cobalt" / "studio" / "dates" / f"{v1.short_hash}.py")
    assert load_grader(v1.source).hash == v1.hash  # the version file holds the draft exactly

    first = studio.grade()
    assert llm.count() == 1 + 20  # 10 samples x 2 models
    assert [first.calibration.models[m].exact_match_rate for m in MODELS] == [0.6, 0.6]
    rows = studio.sample_grades()
    assert [r.id for r in rows[:3]] == list(OFF_BY_TWO) and rows[3].id == "d5" and len(rows) == 4
    d7 = rows[0]
    assert (d7.truth, d7.largest) == (-3, 2)
    assert [(g.model, g.grade, g.notes) for g in d7.grades] == [("openai/a", -1, "a gives d7 -1"),
                                                                 ("openai/b", -1, "b gives d7 -1")]
    assert studio.sample("8").id == "d7" and studio.sample("d7").assistant_response.startswith("The date for d7")

    line = next(ln for ln in studio.lines() if ln.text == "The date is written out.")
    change = studio.edit("set", line.number, f"The date is written as {MARK} (YYYY-MM-DD).")
    assert change.changed and not change.graded_before and change.before == v1.hash
    llm.requests.clear()
    second = studio.grade()
    assert llm.count() == 20 and all(MARK in r["body"]["messages"][1]["content"] for r in llm.requests)
    assert [second.calibration.models[m].exact_match_rate for m in MODELS] == [0.9, 0.9]
    assert [r.score for r in second.results if r.model == "openai/a"] == [scripted_grade(k, True) for k in TRUTH]

    versions = studio.versions()
    assert [(v.number, v.grader_hash) for v in versions] == [(1, v1.hash), (2, second.grader_hash)]
    for model in [*MODELS, "panel"]:
        assert comparison(versions, model) == "v2: 90% exact, within one 100%, MAE 0.10; v1: 60%, 70%, 0.70"

    llm.requests.clear()
    assert studio.use(1).hash == v1.hash
    again = studio.grade()  # back to v1: every call from the cache
    assert llm.count() == 0 and all(r.cached for r in again.results)
    assert studio.replace(load_grader(versions[1].source)).graded_before  # type: ignore[arg-type]

    exported = studio.export()
    assert exported.grader_path == str(studio_root / "graders" / "dates.py")
    assert exported.calibrated_models == MODELS and exported.samples == 10
    rows_written = [json.loads(x) for x in Path(exported.samples_path).read_text().splitlines()]  # type: ignore[arg-type]
    assert rows_written[0] == {"id": "d0", "userMessage": "What is the date for d0?",
                               "assistantResponse": "The date for d0 is the 3rd of May.", "score": -3}
    llm.requests.clear()
    config = load_config(studio_root)
    graded = grade(config, GradeOptions(input=Path(exported.samples_path), grader=Path(exported.grader_path),  # type: ignore[arg-type]
                                        models=MODELS))
    assert llm.count() == 0 and graded.grader_hash == second.grader_hash
    assert [(r.model, r.id, r.score) for r in graded.results] == [(r.model, r.id, r.score) for r in second.results]

    gate = calibrated(exported.grader_path, min_kappa=0.7, min_labels=10)
    exp = experiment("dated", [{"input": "What is the date?"}], lambda ctx: "The 3rd of May.",
                     evaluators=[Evaluator("dates", type="grader", grader=exported.grader_path, model="a")],
                     assertions=[gate])
    report = exp.run(config=config)
    assert [a.passed for a in report.assertions if a.name.startswith("calibrated")] == [True]


def test_versions_and_export_as_plain_functions(studio_root: Path, llm: FakeLLM) -> None:
    studio = _studio(studio_root)
    studio.draft()
    studio.grade()
    config = load_config(studio_root)
    [only] = grader_versions(config, "dates", studio_root / "labelled.jsonl")
    assert only.models["openai/b"].exact_match_rate == 0.6 and only.gradings == 1
    assert grader_versions(config, "dates", studio_root / "other.jsonl") == []
    out = studio_root / "elsewhere" / "g.py"
    written = export_version(config, "dates", 1, output=out)
    assert load_grader(out).hash == only.grader_hash
    assert written.samples_path == str(out.with_name("dates.samples.jsonl"))
    out.write_text("# mine\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="already exists and holds something else; pass --overwrite"):
        export_version(config, "dates", 1, output=out)
    with pytest.raises(ConfigError, match="has versions v1 to v1; there is no v3"):
        export_version(config, "dates", 3)


def test_edits_that_change_nothing_cost_nothing(studio_root: Path, llm: FakeLLM) -> None:
    studio = _studio(studio_root)
    studio.draft()
    studio.grade()
    before = studio.require()
    change = studio.edit("set", 3, "The date is written out.")
    assert not change.changed and studio.require().hash == before.hash
    with pytest.raises(ConfigError, match="there is no line 9"):
        studio.edit("set", 9, "x")
    with pytest.raises(ConfigError, match="named 'other', not 'dates'"):
        studio.replace(before.__class__("other", specs=("x",)))
    with pytest.raises(ConfigError, match="no grader yet"):
        Studio(load_config(studio_root), studio_root / "labelled.jsonl").require()


def test_a_draft_that_is_not_a_grader_is_retried_once_then_an_error(studio_root: Path, llm: FakeLLM) -> None:
    llm.script("I would grade dates carefully.", '{"spec": ["x"], "cards": []}')
    with pytest.raises(ConfigError, match=r"gave no usable grader, even after a stricter retry: .*'cards' must be a "
                                          r"non-empty list"):
        _studio(studio_root).draft()
    assert llm.count() == 2 and "could not be used" in llm.requests[1]["body"]["messages"][-1]["content"]


def test_a_grader_name_never_leaves_the_studio_folder(studio_root: Path, llm: FakeLLM) -> None:
    hostile = studio_root / "hostile.py"
    hostile.write_text("from cobalt_lib import grader\ngrader = grader('../../Escape Me').spec('x')\n")
    studio = Studio(load_config(studio_root), studio_root / "labelled.jsonl", grader=hostile, models=MODELS)
    kept = Path(studio.require().source)  # type: ignore[arg-type]
    assert kept.parent == studio_root / ".cobalt" / "studio" / "escape-me"
    assert Path(studio.export().grader_path) == studio_root / "graders" / "escape-me.py"
