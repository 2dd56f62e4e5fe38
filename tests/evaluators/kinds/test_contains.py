"""The `contains` kind: any/all of several texts, case folding, negation, and its declaration errors."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from cobalt_lib import Dataset, EvalContext, Evaluator, EvaluatorError, experiment
from cobalt_lib.results import Evaluation


def _score(output: Any, **options: Any) -> Evaluation:
    evaluator = Evaluator(name="c", type="contains", **options)
    return asyncio.run(evaluator.evaluate(EvalContext(item={}, output=output), None, None))


@pytest.mark.parametrize(
    ("output", "options", "score", "reason"),
    [("The capital is Paris.", {"value": "Paris"}, 1.0, "contains 'Paris'"),
     ("The capital is paris.", {"value": "Paris"}, 0.0, "lacks 'Paris'"),
     ("The capital is paris.", {"value": "Paris", "ignore_case": True}, 1.0, "contains 'Paris'"),
     ("Paris, France", {"values": ["Paris", "Lyon"]}, 1.0, "contains 'Paris'; lacks 'Lyon'"),
     ("Paris, France", {"values": ["Paris", "Lyon"], "all": True}, 0.0, "contains 'Paris'; lacks 'Lyon'"),
     ("Paris, France", {"values": ["Paris", "France"], "all": True}, 1.0, "contains 'Paris', 'France'"),
     ("As an AI model, I cannot", {"value": "As an AI", "negate": True}, 0.0, "not wanted: contains 'As an AI'"),
     ("Paris", {"value": "As an AI", "negate": True}, 1.0, "not wanted: lacks 'As an AI'"),
     ({"city": "Paris"}, {"value": '"city": "Paris"'}, 1.0, "contains '\"city\": \"Paris\"'")],
)
def test_contains_scores(output: Any, options: dict[str, Any], score: float, reason: str) -> None:
    result = _score(output, **options)
    assert (result.status, result.score, result.reason) == ("ok", score, reason)
    assert result.passed is (score == 1.0)


@pytest.mark.parametrize(
    ("options", "message"),
    [({}, r"\(contains\): give value='\.\.\.' or values=\[\.\.\.\], exactly one of them"),
     ({"value": "a", "values": ["b"]}, "exactly one of them"),
     ({"values": []}, r"values=\[\] is empty"),
     ({"value": "a", "all": True}, "all=True applies to values"),
     ({"vaule": "a"}, r"has no option 'vaule'; did you mean 'value'\?"),
     ({"values": "abc"}, r"values='abc' is not valid: input should be a valid list")],
)
def test_contains_declaration_errors(options: dict[str, Any], message: str) -> None:
    with pytest.raises(EvaluatorError, match=message):
        Evaluator(name="c", type="contains", **options)


def test_contains_in_a_run(project: Path) -> None:
    data = Dataset([{"input": "France"}, {"input": "Spain"}])
    exp = experiment("capitals", data, lambda ctx: {"France": "Paris", "Spain": "Madrid"}[ctx.item["input"]],
                     evaluators=[Evaluator(name="paris", type="contains", value="paris", ignore_case=True)])
    report = exp.run()
    assert [i.evaluations["paris"].score for i in report.items] == [1.0, 0.0]
    assert report.summary.scores["paris"].avg == 0.5
