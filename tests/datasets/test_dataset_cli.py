"""`cobalt dataset push|list|show|diff|export|add` as a user types them (in process), on a real project and
DuckDB store in tmp_path; experiments that pin a version or follow the latest, compared and gated."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from stores import project_store

from cobalt_lib import Dataset, Store, load_config
from cobalt_lib.cli import main
from cobalt_lib.ops import RunOptions, Selection, run_experiments
from cobalt_lib.pages._compare import compare_view

#: Every test on both backends: the project's DuckDB file, and a team store (COBALT_STORE_URL).
pytestmark = pytest.mark.usefixtures("store_url")


def cobalt(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as exited:
        main(list(args))
    out, err = capsys.readouterr()
    return int(exited.value.code or 0), out, err


def write_jsonl(path: Path, items: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(item) + "\n" for item in items), encoding="utf-8")
    return path


def qa_items(n: int = 5) -> list[dict[str, Any]]:
    return [{"id": f"q{i}", "input": f"question {i}", "expected_output": f"answer {i}"} for i in range(n)]


def store(project: Path) -> Store:
    return project_store(project)


def test_push_unchanged_changed_diff_and_export(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    first = write_jsonl(project / "qa.jsonl", qa_items())
    code, out, err = cobalt(capsys, "dataset", "push", "qa", "qa.jsonl")
    assert code == 0, err
    assert out.startswith("Stored qa@1: 5 items (#")

    code, out, _ = cobalt(capsys, "dataset", "push", "qa", "qa.jsonl")
    assert code == 0 and "qa@1 already holds this content" in out and "no new version" in out

    # By hand: q0 removed, q2 edited, q9 added; q1, q3, q4 as they were (q3 moved to the end).
    edited = qa_items()
    edited[2]["expected_output"] = "answer two"
    changed = [edited[1], edited[2], edited[4], edited[3], {"id": "q9", "input": "new", "expected_output": "n"}]
    write_jsonl(project / "qa2.jsonl", changed)
    code, out, _ = cobalt(capsys, "dataset", "push", "qa", "qa2.jsonl", "--note", "q9 from review")
    assert code == 0 and out.startswith("Stored qa@2: 5 items")

    code, out, _ = cobalt(capsys, "dataset", "diff", "qa@1", "qa@2", "--json")
    diff = json.loads(out)
    assert diff["counts"] == {"added": 1, "removed": 1, "changed": 1}
    assert [e["item_id"] for e in diff["added"]] == ["q9"]
    assert [e["item_id"] for e in diff["removed"]] == ["q0"]
    assert [(e["item_id"], e["position_a"], e["position_b"]) for e in diff["changed"]] == [("q2", 2, 1)]
    code, out, _ = cobalt(capsys, "dataset", "diff", "qa@1", "qa@2")
    assert out.splitlines() == ["qa@1 -> qa@2: 1 added, 1 removed, 1 changed", "+ q9", "- q0", "~ q2"]

    code, out, _ = cobalt(capsys, "dataset", "export", "qa@1")
    assert out == first.read_text(encoding="utf-8")
    code, out, _ = cobalt(capsys, "dataset", "export", "qa")  # the latest
    assert out == (project / "qa2.jsonl").read_text(encoding="utf-8")

    code, out, _ = cobalt(capsys, "dataset", "list", "--json")
    listed = json.loads(out)
    assert [(v["dataset"], v["version"], v["items"], v["note"]) for v in listed] == [
        ("qa", 1, 5, None), ("qa", 2, 5, "q9 from review")]
    code, out, _ = cobalt(capsys, "dataset", "show", "qa@2", "--limit", "2")
    lines = out.splitlines()
    assert lines[0].startswith("qa@2  5 items  #") and json.loads(lines[1])["id"] == "q1"
    assert lines[-1].startswith("... and 3 more")


def test_splits_from_a_field_and_from_a_name(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    items = [{**item, "part": "test" if i < 2 else "train"} for i, item in enumerate(qa_items())]
    write_jsonl(project / "qa.jsonl", items)
    assert cobalt(capsys, "dataset", "push", "qa", "qa.jsonl", "--split", "part")[0] == 0
    write_jsonl(project / "hard.jsonl", [{"id": "h1", "input": "hard one"}])
    assert cobalt(capsys, "dataset", "push", "qa", "hard.jsonl", "--split", "hard")[0] == 0

    [one, two] = json.loads(cobalt(capsys, "dataset", "list", "qa", "--json")[1])
    assert (one["splits"], two["splits"]) == ({"test": 2, "train": 3}, {"test": 2, "train": 3, "hard": 1})
    test = Dataset.from_store("qa@1:test")
    assert [item["id"] for item in test] == ["q0", "q1"]
    assert test.stored is not None and (test.stored.ref, test.stored.pinned) == ("qa@1:test", True)
    assert [item["id"] for item in Dataset.from_store("qa", split="hard")] == ["h1"]
    latest = Dataset.from_store("qa")
    assert len(latest) == 6 and latest.stored is not None
    assert (latest.stored.version, latest.stored.pinned) == (2, False)


def test_bad_input_names_the_problem_exits_2_and_writes_nothing(project: Path,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    (project / "bad.jsonl").write_text('{"input": "ok"}\nnot json\n', encoding="utf-8")
    code, _, err = cobalt(capsys, "dataset", "push", "qa", "bad.jsonl")
    assert code == 2 and "bad.jsonl, line 2: invalid JSON" in err
    write_jsonl(project / "dup.jsonl", [{"id": "a", "input": "x"}, {"id": "b", "input": "y"}, {"id": "a"}])
    code, _, err = cobalt(capsys, "dataset", "push", "qa", "dup.jsonl")
    assert code == 2
    assert err == ("error: dup.jsonl: items 0 and 2 have the same id 'a'; a version holds each id once (give one item "
                   "another id, or drop it).\n")
    deep = "[" * 6000 + "]" * 6000  # the checks as JSON text nested past Python's reader (issue 33 item 15)
    write_jsonl(project / "deep.jsonl", [{"input": "x", "checks": deep}])
    code, _, err = cobalt(capsys, "dataset", "push", "qa", "deep.jsonl")
    assert (code, err) == (2, f"error: {project / 'deep.jsonl'}, line 1, field checks: a value is nested deeper than "
                              "Python can read (about 1000 levels of arrays or objects); flatten it, or keep the deep "
                              "part as a JSON string.\n")
    assert store(project).dataset_versions() == []  # nothing written

    write_jsonl(project / "qa.jsonl", qa_items(2))
    assert cobalt(capsys, "dataset", "push", "qa", "qa.jsonl")[0] == 0
    code, _, err = cobalt(capsys, "dataset", "show", "qa@4")
    assert (code, err) == (2, "error: Dataset 'qa' has no version 4; its versions are 1 to 1.\n")
    code, _, err = cobalt(capsys, "dataset", "export", "qa:test")
    assert (code, err) == (2, "error: Dataset qa@1 has no split 'test'; its splits: none.\n")
    code, _, err = cobalt(capsys, "dataset", "show", "nope")
    assert code == 2 and err.startswith("error: No dataset named 'nope' in the store") and "stored datasets: qa." in err
    assert len(store(project).dataset_versions()) == 1


PINNED = '''
import os
from cobalt_lib import Dataset, Evaluator, experiment, no_regression

experiment(os.environ["EXP"], Dataset.from_store(os.environ["REF"]),
           lambda ctx: ctx.item["expected_output"] if ctx.item["id"] != "q9" else "wrong",
           evaluators=[Evaluator(name="exact", type="exact-match")],
           assertions=[no_regression("baseline.json", accept_identity_change=os.environ.get("ACCEPT") == "1")])
'''


def run(monkeypatch: pytest.MonkeyPatch, **env: str) -> Any:
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    [report] = run_experiments(load_config(), Selection(), RunOptions(dagster=False, update_baselines="BASE" in env)
                               ).reports
    return report


def test_experiments_pin_or_follow_and_compare_and_no_regression_see_the_version(
        project: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    write_jsonl(project / "qa.jsonl", qa_items(4))
    cobalt(capsys, "dataset", "push", "qa", "qa.jsonl")
    write_jsonl(project / "qa2.jsonl", [*qa_items(3), {"id": "q9", "input": "new", "expected_output": "n"}])
    cobalt(capsys, "dataset", "push", "qa", "qa2.jsonl")
    (project / "experiments").mkdir()
    (project / "experiments" / "qa.cobalt.py").write_text(PINNED, encoding="utf-8")

    pinned = run(monkeypatch, EXP="qa", REF="qa@1", BASE="1")
    assert (pinned.identity.dataset.name, pinned.identity.dataset.version) == ("qa", 1)
    assert pinned.identity.dataset.hash == store(project).dataset_versions("qa")[0]["hash"]
    following = run(monkeypatch, EXP="qa", REF="qa")
    assert following.identity.dataset.ref == "qa@2"
    gate = next(a for a in following.assertions if a.name == "no_regression:identity")
    assert not gate.passed
    assert gate.message.startswith("the baseline was measured differently: the dataset changed version "
                                   "(qa@1 -> qa@2, 4 -> 4 items)")
    accepted = run(monkeypatch, EXP="qa", REF="qa", ACCEPT="1")
    gate = next(a for a in accepted.assertions if a.name == "no_regression:identity")
    assert gate.passed and gate.message.startswith("accepted (accept_identity_change=True)")

    code, out, err = cobalt(capsys, "compare", pinned.id, following.id, "--json")
    assert code == 0, err
    [change] = [c for c in json.loads(out)["identity_changes"] if c["part"] == "dataset"]
    assert change["measurement"] is True
    assert change["text"] == ("the dataset changed version (qa@1 -> qa@2: 1 added, 1 removed, 0 changed, 4 -> 4 "
                              "items): its means are over different items")
    # The compare page says the same.
    shown = compare_view(load_config(), pinned.id, following.id)["c"]
    assert [c.text for c in shown.identity_changes if c.part == "dataset"] == [change["text"]]


GROWN = '''
from cobalt_lib import Dataset, Evaluator, experiment
items = [{"id": f"q{i}", "input": f"question {i}", "expected_output": "yes"} for i in range(6)]
experiment("qa", Dataset(items), lambda ctx: "yes" if ctx.index % 3 else "no",
           evaluators=[Evaluator(name="exact", type="exact-match")])
'''


def test_items_added_from_a_run_and_from_labels_keep_their_origin(
        project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (project / "experiments").mkdir()
    (project / "experiments" / "qa.cobalt.py").write_text(GROWN, encoding="utf-8")
    [report] = run_experiments(load_config(), Selection(), RunOptions(dagster=False)).reports

    code, out, err = cobalt(capsys, "dataset", "add", "regressions", "--from-run", report.id, "--items", "0,3")
    assert code == 0, err
    assert out.splitlines()[:2] == ["Stored regressions@1: 2 items (" + out.split("(", 1)[1].split("\n")[0],
                                    "added 2: q0, q3"]
    rows = store(project).dataset_items("regressions", 1)
    assert [(r["item_id"], r["origin"]) for r in rows] == [
        ("q0", {"run_id": report.id, "experiment": "qa", "item_index": 0}),
        ("q3", {"run_id": report.id, "experiment": "qa", "item_index": 3})]
    assert rows[0]["item"] == {"id": "q0", "input": "question 0", "expected_output": "yes"}

    labels = [{"experiment": "qa", "evaluator": "exact", "item_id": item, "value": value, "who": "ann"}
              for item, value in (("q3", 0), ("q4", 0), ("q5", 1))]
    write_jsonl(project / "labels.jsonl", labels)
    assert cobalt(capsys, "labels", "import", "labels.jsonl")[0] == 0
    code, out, err = cobalt(capsys, "dataset", "add", "regressions", "--from-labels", "qa", "--json")
    assert code == 0, err
    outcome = json.loads(out)
    assert (outcome["version"]["version"], outcome["added"], outcome["already_in"]) == (2, ["q4"], ["q3"])
    q4 = store(project).dataset_items("regressions", 2)[-1]
    assert q4["item_id"] == "q4"
    assert q4["origin"] == {"run_id": report.id, "experiment": "qa", "item_index": 4,
                            "label": {"evaluator": "exact", "value": 0.0, "note": None, "who": "ann"}}

    code, _, err = cobalt(capsys, "dataset", "add", "regressions", "--from-run", report.id, "--items", "9")
    assert (code, err) == (2, f"error: Run {report.id} has no item 9; `cobalt show {report.id}` lists its items.\n")
