"""A team around one store (issue 32 part 3): each person's label kept beside the others' (the newest wins per
person), who labels (COBALT_USER, the user's `[user] name`, git's user.email), the human ceiling in
`cobalt calibrate` equal to sklearn's and the krippendorff package's figures, the second-opinion queue, and
calibrations kept per experiment, a judge model change named as such."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import krippendorff
import numpy as np
import pytest
from fakellm import FakeLLM, answer
from sklearn.metrics import cohen_kappa_score
from stores import project_store
from typer.testing import CliRunner

from cobalt_lib import Evaluator, calibrated, experiment, load_config
from cobalt_lib.cli import app
from cobalt_lib.grading._calibrate import calibrate_evaluator
from cobalt_lib.grading._labels import label_queue, set_label, who_default
from cobalt_lib.grading.calibration._scales import category

#: Every test on both backends: the project's DuckDB file, and a team store (COBALT_STORE_URL).
pytestmark = pytest.mark.usefixtures("store_url")

JUDGE = [0.05, 0.15, 0.3, 0.35, 0.5, 0.55, 0.7, 0.85, 0.9, 0.95]
ANA = [0.1, 0.0, 0.25, 0.5, 0.45, 0.75, 0.6, 1.0, 0.8, 0.9]
#: Ben labels the first eight items only, not always as Ana does.
BEN = [0.0, 0.25, 0.25, 0.75, 0.5, 0.5, 0.75, 1.0]


def _judge(kind: str, body: dict[str, Any]) -> Any:
    prompt = " ".join(str(m.get("content", "")) for m in body.get("messages") or [])
    return answer(JUDGE[int(prompt.split("question ")[1].split()[0])], "judged")


def _run(root: Path, name: str = "support", *gates: Any) -> Any:
    items = [{"id": f"q{i}", "input": f"question {i} ?"} for i in range(10)]
    return experiment(name, items, lambda ctx: "yes",
                      evaluators=[Evaluator("helpful", prompt="Rate {{output}} for {{input}}")],
                      assertions=list(gates)).run(config=load_config(root))


def _cats(values: list[float]) -> list[int]:
    return [category("0..1", v) for v in values]


def test_two_peoples_labels_are_both_kept_and_the_ceiling_matches_sklearn_and_krippendorff(
        judged_project: Path, llm: FakeLLM) -> None:
    llm.respond = _judge
    report = _run(judged_project)
    config = load_config(judged_project)
    set_label(config, report.id, 0, "helpful", 0.75, who="ana")  # replaced by Ana's own newer label below
    for i, value in enumerate(ANA):
        set_label(config, report.id, i, "helpful", value, who="ana")
    for i, value in enumerate(BEN):
        set_label(config, report.id, i, "helpful", value, note=f"ben {i}", who="ben")
    current = project_store(judged_project).labels("support", "helpful")
    assert sorted((r["who"], r["item_id"], r["value"]) for r in current) == sorted(
        [("ana", f"q{i}", v) for i, v in enumerate(ANA)] + [("ben", f"q{i}", v) for i, v in enumerate(BEN)])

    cal = calibrate_evaluator(config, "support", "helpful", resamples=200).calibration
    human = cal.human
    assert human is not None and human.people == ["ana", "ben"] and human.shared_items == 8
    ana, ben, judged = _cats(ANA), _cats(BEN), _cats(JUDGE)
    reliability = np.array([ana, [*ben, np.nan, np.nan]], dtype=float)
    assert human.alpha == pytest.approx(krippendorff.alpha(reliability_data=reliability,
                                                           level_of_measurement="ordinal"), abs=1e-9)
    assert human.alpha_low is not None and human.alpha_low <= human.alpha <= human.alpha_high  # type: ignore[operator]
    [pair] = human.between_people
    assert (pair.a, pair.b, pair.items) == ("ana", "ben", 8)
    assert pair.kappa == pytest.approx(cohen_kappa_score(ana[:8], ben, weights="quadratic", labels=range(5)))
    by_person = {p.b: p for p in human.judge_vs_people}
    assert by_person["ana"].kappa == pytest.approx(cohen_kappa_score(ana, judged, weights="quadratic",
                                                                     labels=range(5)))
    assert by_person["ben"].kappa == pytest.approx(cohen_kappa_score(ben, judged[:8], weights="quadratic",
                                                                     labels=range(5)))
    agreed = _cats([float(np.median([a, b])) for a, b in zip(ANA, BEN, strict=False)] + ANA[8:])
    consensus = human.judge_vs_consensus
    assert consensus is not None and consensus.items == 10
    assert consensus.kappa == pytest.approx(cohen_kappa_score(agreed, judged, weights="quadratic", labels=range(5)))
    assert cal.kappa == pytest.approx(consensus.kappa)  # the calibration's truth is the people's consensus
    at = consensus.kappa >= pair.kappa  # type: ignore[operator]
    assert human.judge_at_ceiling is at
    assert ("as well as they agree with each other" if at else "less") in human.text

    shown = CliRunner().invoke(app, ["calibrate", "support", "--evaluator", "helpful"])
    assert shown.exit_code == 0, shown.output
    assert "Human ceiling" in shown.output and "ana vs ben: weighted kappa" in shown.output
    assert "Krippendorff's alpha between people" in shown.output


def test_the_queue_asks_a_second_person_for_items_one_person_labelled(judged_project: Path, llm: FakeLLM) -> None:
    llm.respond = _judge
    report = _run(judged_project)
    config = load_config(judged_project)
    for i in (2, 5, 7):
        set_label(config, report.id, i, "helpful", 0.5, who="ana")
    set_label(config, report.id, 7, "helpful", 0.5, who="ben")
    set_label(config, report.id, 9, "helpful", 0.5, who="ben")
    queue = label_queue(config, report.id, "helpful", second_for="ben")
    assert queue.order[:2] == [2, 5]  # Ana's alone; 7 has both already
    assert queue.order[-2:] == [7, 9] and queue.labelled == 2


@pytest.mark.slow  # git, as a process
def test_who_labels(judged_project: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    monkeypatch.delenv("COBALT_USER", raising=False)
    subprocess.run(["git", "init", "-q", str(judged_project)], check=True)
    subprocess.run(["git", "-C", str(judged_project), "config", "user.email", "ana@example.com"], check=True)
    assert who_default(judged_project) == "ana@example.com"
    (tmp_path / "xdg" / "cobalt").mkdir(parents=True)
    (tmp_path / "xdg" / "cobalt" / "config.toml").write_text('[user]\nname = "Ana Lima"\n', encoding="utf-8")
    assert who_default(judged_project) == "Ana Lima"
    monkeypatch.setenv("COBALT_USER", "ben")
    assert who_default(judged_project) == "ben"


def test_calibrations_are_kept_per_experiment_and_a_model_change_is_named(judged_project: Path,
                                                                        llm: FakeLLM) -> None:
    llm.respond = _judge
    report = _run(judged_project)
    config = load_config(judged_project)
    for i, value in enumerate(ANA):
        set_label(config, report.id, i, "helpful", value, who="ana")
    calibrate_evaluator(config, "support", "helpful", resamples=50)
    gate = calibrated("helpful", min_kappa=0.1, min_labels=10)
    same = next(a for a in _run(judged_project, "support", gate).assertions if a.name.startswith("calibrated"))
    assert same.passed, same.message
    other = next(a for a in _run(judged_project, "support-v2", gate).assertions if a.name.startswith("calibrated"))
    assert not other.passed
    assert "has no calibration in experiment 'support-v2' (only in 'support', on other items)" in other.message
    (judged_project / "cobalt.toml").write_text((judged_project / "cobalt.toml").read_text().replace(
        "gpt-4o-mini", "gpt-4o"), encoding="utf-8")
    moved = next(a for a in _run(judged_project, "support", gate).assertions if a.name.startswith("calibrated"))
    assert not moved.passed and "the judge model changed since its last calibration" in moved.message
    assert "measured it on openai/gpt-4o-mini, this run judged with openai/gpt-4o" in moved.message
