"""`similarity`: embeddings batched per run (one request per batch, not per item), cached like judge
answers, with the judge's retries; the optional local backend and the message without its extra."""

from __future__ import annotations

import importlib
import importlib.util
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from fakellm import FakeLLM, error

from cobalt_lib import ConfigError, Dataset, Evaluator, EvaluatorError, Experiment, experiment, load_config

ANSWERS = ["The capital of France is Paris.", "Bananas are yellow.", "Water boils at 100 °C.",
           "Tokyo is in Japan.", "Zürich liegt in der Schweiz.", "Two plus two is four."]


@pytest.fixture(autouse=True)
def _patient_batches(monkeypatch: pytest.MonkeyPatch) -> None:
    """A wider batch window: on a loaded test machine the items' scoring may start further apart than the
    default 50 ms, and these tests count requests."""
    from cobalt_lib.llm import _judge

    monkeypatch.setattr(_judge, "EMBED_BATCH_WINDOW", 0.3)


def _experiment(**options: object) -> Experiment:
    data = Dataset([{"input": str(i), "expected_output": answer} for i, answer in enumerate(ANSWERS)])
    return experiment("sim", data, lambda ctx: ANSWERS[int(ctx.input)] if ctx.input != "1" else "Apples are red.",
                      evaluators=[Evaluator(name="semantic", type="similarity", **options)])


def test_embeddings_of_a_run_go_out_in_one_request_and_are_cached(judged_project: Path, llm: FakeLLM) -> None:
    report = _experiment().run(config=load_config())
    scores = [i.evaluations["semantic"] for i in report.items]
    assert [s.score for s in scores].count(1.0) == 5 and scores[1].score is not None and scores[1].score < 0.85
    assert llm.count("embeddings") == 1
    body = next(r["body"] for r in llm.requests if r["kind"] == "embeddings")
    assert len(body["input"]) == 7  # 6 answers + "Apples are red.", each text once
    assert sum(s.judge_calls for s in scores) == 1
    sent_tokens = sum(len(t.split()) for t in body["input"])
    assert sum(s.input_tokens for s in scores) == sent_tokens == max(s.input_tokens for s in scores)
    assert report.summary.judge_calls == 1 and report.summary.judge_tokens == sent_tokens
    assert not any(s.cached for s in scores)
    again = _experiment().run(config=load_config())
    assert all(i.evaluations["semantic"].cached for i in again.items)
    assert [i.evaluations["semantic"].score for i in again.items] == [s.score for s in scores]
    assert llm.count("embeddings") == 1


def test_a_failed_embeddings_request_is_retried_like_a_judge_call(judged_project: Path, llm: FakeLLM) -> None:
    llm.script_embeddings(error(503), error(429, retry_after=0))
    report = _experiment().run(config=load_config())
    assert all(i.evaluations["semantic"].status == "ok" for i in report.items)
    assert llm.count("embeddings") == 3


def test_a_request_that_keeps_failing_is_an_eval_error_on_every_item(judged_project: Path, llm: FakeLLM) -> None:
    llm.embeddings_reply = error(400)
    report = _experiment().run(config=load_config())
    evaluations = [i.evaluations["semantic"] for i in report.items]
    assert all(e.status == "eval-error" and "400" in (e.error or "") for e in evaluations)
    assert llm.count("embeddings") == 1


@pytest.mark.skipif(importlib.util.find_spec("sentence_transformers") is not None,
                    reason="sentence-transformers is installed here")
def test_the_local_backend_without_its_extra_says_which_to_install(project: Path) -> None:
    with pytest.raises(EvaluatorError, match=r"provider='local' needs model="):
        Evaluator(name="s", type="similarity", provider="local")
    exp = _experiment(provider="local", model="/models/all-MiniLM-L6-v2")
    with pytest.raises(ConfigError, match=r"Evaluator 'semantic' uses the local embeddings backend \(provider='local'\)"
                                          r", which needs the optional extra: pip install 'cobalt-evals\[local\]'"):
        exp.run()


FAKE_SENTENCE_TRANSFORMERS = '''\
"""A stand-in with sentence-transformers' interface: SentenceTransformer(path, local_files_only=...).encode."""
import sys
sys.path.insert(0, {tests!r})
from fakellm import embedding_for

LOADED = []


class SentenceTransformer:
    def __init__(self, name, local_files_only=False):
        assert local_files_only, "the local backend must never download a model"
        LOADED.append(name)

    def encode(self, texts):
        return [embedding_for(t) for t in texts]
'''


@pytest.fixture
def local_library(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """A stand-in `sentence_transformers` on the path (the real one is an optional extra, not a dev dependency)."""
    from cobalt_lib.evaluators import _local_embeddings

    package = tmp_path / "lib" / "sentence_transformers"
    package.mkdir(parents=True)
    package.joinpath("__init__.py").write_text(
        FAKE_SENTENCE_TRANSFORMERS.format(tests=str(Path(__file__).parents[2])))
    monkeypatch.syspath_prepend(str(tmp_path / "lib"))
    importlib.invalidate_caches()
    monkeypatch.setattr(_local_embeddings, "_models", {})
    yield
    sys.modules.pop("sentence_transformers", None)


def test_the_local_backend_embeds_on_this_machine_and_caches(project: Path, llm: FakeLLM,
                                                             local_library: None) -> None:
    report = _experiment(provider="local", model="/models/mini").run()
    scores = [i.evaluations["semantic"] for i in report.items]
    assert [s.score for s in scores].count(1.0) == 5 and all(s.judge_model == "local//models/mini" for s in scores)
    assert sys.modules["sentence_transformers"].LOADED == ["/models/mini"]
    again = _experiment(provider="local", model="/models/mini").run()
    assert all(i.evaluations["semantic"].cached for i in again.items)
    assert llm.count() == 0


def test_a_list_of_references_scores_against_the_nearest_one(judged_project: Path, llm: FakeLLM) -> None:
    """Issue 34 item 11: as bleu and rouge do, a list of references is several texts, and the output is as
    close as its nearest one; the list's JSON text is never embedded as one string."""
    references = ["Rome is the capital of Italy.", "The capital of France is Paris."]
    data = Dataset([{"input": "q", "expected_output": references}, {"input": "r", "expected_output": []}])
    report = experiment("sim-list", data, lambda ctx: "The capital of France is Paris.",
                        evaluators=[Evaluator(name="semantic", type="similarity")]).run(config=load_config())
    listed, empty = (i.evaluations["semantic"] for i in report.items)
    assert listed.score == 1.0 and listed.raw_score == pytest.approx(1.0)
    assert listed.reason == "cosine similarity 1.000 (nearest of 2 references: #2)"
    sent = [t for r in llm.requests if r["kind"] == "embeddings" for t in r["body"]["input"]]
    assert sorted(sent) == sorted(["The capital of France is Paris.", "Rome is the capital of Italy."])
    assert empty.status == "eval-error" and "empty list of references" in (empty.error or "")
