"""Evaluation identities: what each part of a run's identity is, and the sentences two identities' differences
make (which of them mean the runs measured differently)."""

from __future__ import annotations

from pathlib import Path

from cobalt_lib import Dataset, Evaluator, experiment
from cobalt_lib.results._evaluation_identity import (
    AgentIdentity,
    DatasetIdentity,
    EvaluationIdentity,
    EvaluatorIdentity,
    identity_changes,
)
from cobalt_lib.run._identity import dataset_identity, evaluation_identity, evaluator_identity, git_commit


def ident(**changes: object) -> EvaluationIdentity:
    base = EvaluationIdentity(
        dataset=DatasetIdentity(hash="d1", items=10),
        evaluators=[EvaluatorIdentity(name="relevance", kind="llm-judge", prompt_hash="p1",
                                      judge_model="openai/gpt-4o-mini", options={"threshold": 0.5}),
                    EvaluatorIdentity(name="exact", kind="exact-match", options={"field": "expected_output"})],
        agent=AgentIdentity(source_file="experiments/qa.cobalt.py", qualname="agent", source_hash="s1",
                            git_commit="c" * 40),
        cobalt_version="0.1.0")
    return base.model_copy(update=changes)


def texts(a: EvaluationIdentity | None, b: EvaluationIdentity | None) -> list[tuple[str, bool]]:
    return [(c.text, c.measurement) for c in identity_changes(a, b)]


def test_equal_identities_have_nothing_to_say() -> None:
    assert texts(ident(), ident()) == []


def test_each_evaluator_change_is_a_different_measurement() -> None:
    a = ident()
    relevance = a.evaluators[0].model_copy(update={"prompt_hash": "p2", "judge_model": "openai/gpt-4o",
                                                   "options": {"threshold": 0.7}})
    assert texts(a, ident(evaluators=[relevance, a.evaluators[1]])) == [
        ("the judge prompt of 'relevance' changed: its deltas compare two measurements", True),
        ("the judge model of 'relevance' changed (openai/gpt-4o-mini -> openai/gpt-4o): its deltas compare two "
         "measurements", True),
        ("the options of 'relevance' changed (threshold 0.5 -> 0.7): its deltas compare two measurements", True)]
    assert texts(a, ident(evaluators=[a.evaluators[0]])) == [("evaluator 'exact' is not in run B: it is not "
                                                               "compared", False)]
    added = EvaluatorIdentity(name="tone", kind="llm-judge", prompt_hash="p9")
    assert texts(a, ident(evaluators=[*a.evaluators, added])) == [("evaluator 'tone' is new in run B: it has no "
                                                                   "baseline", False)]


def test_the_dataset_changes_the_measurement_the_agent_and_cobalt_do_not() -> None:
    a = ident()
    assert texts(a, ident(dataset=DatasetIdentity(hash="d2", items=12))) == [
        ("the dataset changed (10 -> 12 items): its means are over different items", True)]
    assert texts(a, ident(dataset=DatasetIdentity(hash="d2", items=10))) == [
        ("the dataset changed (10 items, their content differs): its means are over different items", True)]
    agent = a.agent.model_copy(update={"source_hash": "s2", "git_commit": "d" * 40})
    assert texts(a, ident(agent=agent, cobalt_version="0.2.0")) == [
        ("the agent changed (its source file experiments/qa.cobalt.py differs; commit cccccccccccc -> dddddddddddd): "
         "this is what the deltas measure", False),
        ("cobalt's version changed (0.1.0 -> 0.2.0)", False)]
    assert texts(a, ident(agent=a.agent.model_copy(update={"git_commit": "e" * 40}))) == []  # a commit alone
    assert texts(None, a) == [("run A has no evaluation identity (stored before cobalt recorded one), so whether "
                               "both runs measured alike is unknown", False)]


def test_an_evaluator_identity_hashes_prompts_and_code_and_names_the_judge() -> None:
    judge = Evaluator(name="relevance", prompt="Rate {{output}}.", model="gpt-4o", provider="openai")
    first = evaluator_identity(judge, None)
    again = evaluator_identity(Evaluator(name="relevance", prompt="Rate {{output}}.", model="gpt-4o",
                                         provider="openai"), None)
    other = evaluator_identity(Evaluator(name="relevance", prompt="Rate {{output}} strictly.", model="gpt-4o",
                                         provider="openai"), None)
    assert first.prompt_hash and first.prompt_hash == again.prompt_hash != other.prompt_hash
    assert "prompt" not in first.options and first.options["model"] == "gpt-4o"

    def score(ctx: object) -> float:
        return 1.0

    code = evaluator_identity(Evaluator(name="f", type="function", fn=score), None)
    assert str(code.options["fn"]).startswith("code:") and code.prompt_hash is None and code.judge_model is None


def test_a_dataset_identity_follows_content_and_order() -> None:
    items = [{"input": "a"}, {"input": "b"}]
    assert dataset_identity(items, None) == dataset_identity([dict(i) for i in items], None)
    assert dataset_identity(items, None).hash != dataset_identity(items[::-1], None).hash
    assert dataset_identity(items, "https://user:pw@example.test/qa.jsonl?sig=secret").source == \
        "https://example.test/qa.jsonl"


def test_the_git_commit_is_read_from_the_repository_files(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    (repo / ".git" / "refs" / "heads").mkdir(parents=True)
    (repo / "src").mkdir()
    assert git_commit(repo / "src") is None  # no HEAD file: no commit to say
    (repo / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    assert git_commit(repo / "src") is None  # a branch with no commit yet
    (repo / ".git" / "packed-refs").write_text(f"# pack-refs\n{'1' * 40} refs/heads/main\n")
    assert git_commit(repo / "src") == "1" * 40
    (repo / ".git" / "refs" / "heads" / "main").write_text("2" * 40 + "\n")
    assert git_commit(repo / "src") == "2" * 40  # a loose ref wins over the packed one
    (repo / ".git" / "HEAD").write_text("3" * 40 + "\n")
    assert git_commit(repo / "src") == "3" * 40  # detached, as CI checks out
    worktree = tmp_path / "wt"
    (repo / ".git" / "worktrees" / "wt").mkdir(parents=True)
    (repo / ".git" / "worktrees" / "wt" / "HEAD").write_text("ref: refs/heads/main\n")
    (repo / ".git" / "worktrees" / "wt" / "commondir").write_text("../..\n")
    worktree.mkdir()
    (worktree / ".git").write_text(f"gitdir: {repo / '.git' / 'worktrees' / 'wt'}\n")
    assert git_commit(worktree) == "2" * 40


def test_a_run_identity_names_the_agent_by_its_source_file(tmp_path: Path) -> None:
    def agent(ctx: object) -> str:
        return "x"

    exp = experiment("ident", Dataset([{"input": "a"}]), agent, evaluators=[Evaluator(name="e", type="exact-match")])
    identity = evaluation_identity(exp, exp.evaluators, {}, Path(__file__).parents[2])
    assert identity.agent.source_file == "tests/results/test_evaluation_identity.py"
    assert identity.agent.module == "test_evaluation_identity" and identity.agent.qualname.endswith("agent")
    assert identity.dataset.items == 1 and [e.name for e in identity.evaluators] == ["e"]


def test_a_grader_deck_is_its_hash_and_never_its_path() -> None:
    from cobalt_lib import grader

    deck = grader("json").spec("Return valid JSON.")
    first = evaluator_identity(Evaluator(name="g", type="grader", grader=deck), None)
    assert first == evaluator_identity(Evaluator(name="g", type="grader", grader=grader("json").spec(
        "Return valid JSON.")), None)
    changed = evaluator_identity(Evaluator(name="g", type="grader", grader=grader("json").spec(
        "Return valid JSON with a `name` key.")), None)
    assert changed.prompt_hash != first.prompt_hash and changed.options == first.options
    assert "grader_source" not in first.options and first.options["grader"] == "json"
