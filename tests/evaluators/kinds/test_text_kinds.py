"""The deterministic text and JSON kinds on hand-checked cases: Unicode, empty and non-string outputs,
`negate` on every one, and their options checked at declaration."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from cobalt_lib import EvalContext, Evaluator, EvaluatorError
from cobalt_lib.evaluators import evaluator_kinds
from cobalt_lib.results import Evaluation

SCHEMA = {"type": "object", "required": ["city", "country"],
          "properties": {"city": {"type": "string"}, "country": {"type": "string"},
                         "tags": {"type": "array", "items": {"type": "string"}}}}


def score(kind: str, output: Any, expected: Any = None, **options: Any) -> Evaluation:
    evaluator = Evaluator(name="e", type=kind, **options)
    item = {} if expected is None else {"expected_output": expected}
    return asyncio.run(evaluator.evaluate(EvalContext(item=item, output=output), None, None))


CASES = [
    # (kind, output, expected_output, options, score, reason)
    ("regex", "Order 2024-01-02 shipped", None, {"pattern": r"\d{4}-\d{2}-\d{2}"}, 1.0,
     r"/\d{4}-\d{2}-\d{2}/ matches '2024-01-02'"),
    ("regex", "ORDER", None, {"pattern": "order", "flags": "i"}, 1.0, "/order/ matches 'ORDER'"),
    ("regex", "", None, {"pattern": "x"}, 0.0, "no match for /x/"),
    ("regex", {"n": 42}, None, {"pattern": r'"n": \d+'}, 1.0, "/\"n\": \\d+/ matches '\"n\": 42'"),
    ("regex", "Straße", None, {"pattern": r"^\w+$"}, 1.0, r"/^\w+$/ matches 'Straße'"),
    ("starts_with", "  Yes, it is.", None, {"value": "yes", "ignore_case": True}, 1.0, "starts with 'yes'"),
    ("starts_with", "No.", None, {"value": "Yes"}, 0.0, "starts with 'No.', not 'Yes'"),
    ("starts_with", "Ünïcode first", None, {"value": "Ünï"}, 1.0, "starts with 'Ünï'"),
    ("equals_json", '{"b": [1, 2], "a": {"x": "é"}}', {"a": {"x": "é"}, "b": [1, 2]}, {}, 1.0, "equal JSON"),
    ("equals_json", '{"a": 1}', '{"a": true}', {}, 0.0, "at $.a: expected True, got 1"),
    ("equals_json", '{"a": 1.0}', {"a": 1}, {}, 1.0, "equal JSON"),
    ("equals_json", '{"a": [1]}', {"a": [1, 2]}, {}, 0.0, "at $.a: expected 2 elements, got 1"),
    ("equals_json", "", {"a": 1}, {}, 0.0, "the output is not valid JSON (Expecting value at line 1, column 1)"),
    ("equals_json", {"b": 2, "a": 1}, '{"a": 1, "b": 2}', {}, 1.0, "equal JSON"),
    ("numeric_match", "The total is $1,234.50.", "1234.5", {}, 1.0, "1234.5 matches 1234.5"),
    ("numeric_match", "Total : 1\u202f234.50 €", 1234, {}, 0.0, "1234.5 differs from 1234 (by 0.5)"),
    ("numeric_match", "3 apples and 5 pears make 8 fruits", 8, {}, 1.0, "8 matches 8"),
    ("numeric_match", "about 3.05", 3, {"tolerance": 0.1}, 1.0, "3.05 matches 3"),
    ("numeric_match", "−12 degrees", -12, {}, 1.0, "-12 matches -12"),
    ("numeric_match", 42, "£42", {}, 1.0, "42 matches 42"),
    ("numeric_match", "no idea", "7", {}, 0.0, "the output holds no number: 'no idea'"),
    # a hyphen between numbers is not a minus
    ("numeric_match", "see pages 10-20", 20, {}, 1.0, "20 matches 20"),
    ("numeric_match", "5-7", 7, {}, 1.0, "7 matches 7"),
    ("numeric_match", "due 2024-01-02", 2, {}, 1.0, "2 matches 2"),
    ("numeric_match", "call 555-1234", "1234", {}, 1.0, "1234 matches 1234"),
    ("numeric_match", "it fell to -4.5 (from 3)", "it is -3 now", {}, 0.0, "3 differs from -3 (by 6)"),
    ("numeric_match", "a drop of -4.5", -4.5, {}, 1.0, "-4.5 matches -4.5"),
    ("exact-match", {"a": 1, "b": "é"}, '{"a": 1, "b": "é"}', {}, 1.0, "exact match"),
    ("exact-match", True, "true", {}, 1.0, "exact match"),
    ("exact-match", [1, 2], "[1,2]", {}, 0.0, "expected '[1,2]', got '[1, 2]'"),
    ("exact-match", 3, "3", {}, 1.0, "exact match"),
    ("exact-match", None, "", {}, 1.0, "exact match"),
    ("json_valid", '{"a": [1, 2]}', None, {}, 1.0, "valid JSON"),
    ("json_valid", "{'a': 1}", None, {}, 0.0,
     "the output is not valid JSON (Expecting property name enclosed in double quotes at line 1, column 2)"),
    ("json_valid", {"a": "ü"}, None, {}, 1.0, "valid JSON"),
    ("json_valid", "", None, {}, 0.0, "the output is not valid JSON (Expecting value at line 1, column 1)"),
    ("json_schema", '{"city": "Zürich", "country": "CH"}', None, {"schema": SCHEMA}, 1.0, "valid against the schema"),
    ("json_schema", '{"city": "Paris"}', None, {"schema": SCHEMA}, 0.0, "at $: missing required property 'country'"),
    ("json_schema", {"city": "P", "country": "F", "tags": ["a", 3]}, None, {"schema": SCHEMA}, 0.0,
     "at $.tags[1]: 3 is not of type 'string'"),
    ("json_schema", "[]", None, {"schema": SCHEMA}, 0.0, "at $: [] is not of type 'object'"),
    ("levenshtein", "café", "cafe", {}, 0.75, "1 edit over 4 characters"),
    ("levenshtein", "", "", {}, 1.0, "0 edits over 0 characters"),
    ("levenshtein", "", "abc", {}, 0.0, "3 edits over 3 characters"),
    ("levenshtein", "KITTEN", "sitting", {"ignore_case": True}, 1 - 3 / 7, "3 edits over 7 characters"),
    ("levenshtein", 1234, "1235", {}, 0.75, "1 edit over 4 characters"),
    ("rouge", "the cat sat on the mat", "the cat is on the mat", {"variant": "rouge1"}, 5 / 6,
     "rouge1 F 0.833 (precision 0.833, recall 0.833)"),
    ("rouge", "the cat sat on the mat", "the cat is on the mat", {"variant": "rouge2"}, 3 / 5,
     "rouge2 F 0.600 (precision 0.600, recall 0.600)"),
    ("rouge", "Café crème", "café CRÈME", {}, 1.0, "rougeL F 1.000 (precision 1.000, recall 1.000)"),
    ("rouge", "", "the cat", {}, 0.0, "rougeL F 0.000 (precision 0.000, recall 0.000)"),
    ("rouge", "the dog", ["the cat", "the dog"], {}, 1.0, "rougeL F 1.000 (precision 1.000, recall 1.000)"),
    ("bleu", "the cat sat on the mat", "the cat sat on the mat", {}, 1.0,
     "BLEU 100.0 (n-gram precisions 100.0, 100.0, 100.0, 100.0; brevity penalty 1.000)"),
    ("bleu", "", "the cat sat on the mat", {}, 0.0,
     "BLEU 0.0 (n-gram precisions 0.0, 0.0, 0.0, 0.0; brevity penalty 0.000)"),
]


@pytest.mark.parametrize(("kind", "output", "expected", "options", "value", "reason"), CASES,
                         ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_hand_checked_cases(kind: str, output: Any, expected: Any, options: dict[str, Any], value: float,
                            reason: str) -> None:
    result = score(kind, output, expected, **options)
    assert (result.status, result.reason) == ("ok", reason)
    assert result.score == pytest.approx(value)
    negated = score(kind, output, expected, negate=True, **options)
    assert negated.score == pytest.approx(1 - value) and negated.reason == f"not wanted: {reason}"


@pytest.mark.parametrize("kind", ["bleu", "rouge"])
def test_an_empty_reference_list_is_the_items_eval_error_not_the_text_of_the_list(kind: str) -> None:
    result = score(kind, "[]", [])
    assert (result.status, result.score) == ("eval-error", None)
    assert result.error == ("item field 'expected_output' is an empty list of references; give at least one "
                            "reference text")


def test_bleu_matches_sacrebleu_on_a_partial_match() -> None:
    import sacrebleu

    result = score("bleu", "the cat sat on a mat", "the cat sat on the mat")
    expected = sacrebleu.sentence_bleu("the cat sat on a mat", ["the cat sat on the mat"]).score / 100
    assert result.score == pytest.approx(expected) and 0.5 < expected < 0.6


def test_every_deterministic_kind_takes_negate() -> None:
    from cobalt_lib.evaluators._deterministic import Deterministic

    deterministic = {name for name, cls in evaluator_kinds().items() if issubclass(cls, Deterministic)}
    assert deterministic >= {"contains", "regex", "starts_with", "equals_json", "numeric_match", "json_valid",
                             "json_schema", "levenshtein", "rouge", "bleu", "max_latency", "max_cost", "max_tokens",
                             "tool_call_match", "tool_calls_valid", "max_tool_calls", "exact-match"}
    assert all("negate" in evaluator_kinds()[name].option_names() for name in deterministic)


@pytest.mark.parametrize(
    ("kind", "options", "message"),
    [("regex", {}, r"\(regex\) needs pattern=\.\.\."),
     ("regex", {"pattern": "(unclosed"}, r"pattern='\(unclosed' is not a valid regular expression"),
     ("regex", {"pattern": "a", "flags": "iq"}, r"flags='iq' has unknown flag 'q'; use letters from 'imsxa'"),
     ("regex", {"patern": "a"}, r"has no option 'patern'; did you mean 'pattern'\?"),
     ("starts_with", {"valu": "a"}, r"has no option 'valu'; did you mean 'value'\?"),
     ("numeric_match", {"tolerance": -1}, r"tolerance=-1 is not valid: input should be greater than or equal to 0"),
     ("json_schema", {}, r"\(json_schema\) needs schema=\.\.\. \(the JSON Schema"),
     ("json_schema", {"schema": {"type": "objekt"}}, r"schema is not a valid JSON Schema: .* \(at \$\.type of"),
     ("rouge", {"variant": "rouge3"}, r"variant='rouge3' is not valid: input should be 'rouge1', 'rouge2'"),
     ("bleu", {"tokenize": "klingon"}, r"tokenize='klingon' is not valid"),
     ("max_latency", {}, r"\(max_latency\) needs ms=\.\.\."),
     ("max_latency", {"ms": 0}, r"ms=0 is not valid: input should be greater than 0"),
     ("max_tokens", {"n": "many"}, r"n='many' is not valid"),
     ("max_cost", {"dollars": 1}, r"has no option 'dollars'; its options are usd, negate"),
     ("levenshtein", {"negate": "sometimes"}, r"negate='sometimes' is not valid: input should be a valid boolean")],
)
def test_options_are_checked_at_declaration(kind: str, options: dict[str, Any], message: str) -> None:
    with pytest.raises(EvaluatorError, match=message):
        Evaluator(name="e", type=kind, **options)


def test_budgets_read_the_items_own_metrics() -> None:
    def budget(kind: str, **metrics: Any) -> Evaluation:
        limit = {"max_latency": {"ms": 500}, "max_cost": {"usd": 0.01}, "max_tokens": {"n": 100}}[kind]
        evaluator = Evaluator(name="b", type=kind, **limit)
        return asyncio.run(evaluator.evaluate(EvalContext(item={}, output="x", **metrics), None, None))

    assert budget("max_latency", latency_ms=499.5).reason == "latency 499.5 ms within 500 ms"
    assert budget("max_latency", latency_ms=501).score == 0.0
    assert (budget("max_cost", cost_usd=0.02).score, budget("max_cost", cost_usd=0.02).reason) == (
        0.0, "cost 0.02 USD over 0.01 USD")
    assert budget("max_tokens", tokens=100).score == 1.0
    # "over" is strictly over, and a reason never shows two equal numbers as over
    assert budget("max_latency", latency_ms=500).reason == "latency 500 ms within 500 ms"
    assert budget("max_latency", latency_ms=500.0004).reason == "latency 500.0004 ms over 500 ms"
    assert budget("max_latency", latency_ms=499.99999).reason == "latency 499.99999 ms within 500 ms"
    assert budget("max_cost", cost_usd=0.0100000001).reason == "cost 0.0100000001 USD over 0.01 USD"
    unknown = budget("max_cost")
    assert unknown.status == "eval-error" and "cost is unknown: report metadata cost_usd" in (unknown.error or "")


def test_evaluate_sync_scores_one_output_outside_a_run() -> None:
    total = Evaluator(name="total", type="numeric_match")
    assert total.evaluate_sync("It costs $12.", item={"expected_output": 12}).passed is True
    with pytest.raises(EvaluatorError, match="compares with field 'expected_output', which dataset item 0 lacks"):
        total.evaluate_sync("12")
    with pytest.raises(EvaluatorError, match=r"Evaluator 'g' \(g_eval\) calls a model: score it in an experiment run"):
        Evaluator(name="g", type="g_eval", criteria="polite").evaluate_sync("hi")


@pytest.mark.parametrize(("output", "reason"), [
    ("NaN", "the output is not valid JSON (NaN is not a JSON value (JSON has no NaN or Infinity))"),
    ('{"score": Infinity}', "the output is not valid JSON (Infinity is not a JSON value (JSON has no NaN or "
                            "Infinity))"),
    ("[-Infinity]", "the output is not valid JSON (-Infinity is not a JSON value (JSON has no NaN or Infinity))"),
    ({"score": float("nan")}, "the output holds nan at $.score, which JSON cannot hold (JSON has no NaN or "
                              "Infinity)")])
def test_nan_and_infinity_are_not_json(output: Any, reason: str) -> None:
    """Issue 34 item 12: Python's json.loads reads NaN and Infinity, JSON does not; a `maximum: 10` must not
    pass `{"score": NaN}` (NaN compares false with everything, so jsonschema lets it through)."""
    assert (score("json_valid", output).score, score("json_valid", output).reason) == (0.0, reason)
    bounded = score("json_schema", output, schema={"properties": {"score": {"type": "number", "maximum": 10}}})
    assert (bounded.score, bounded.reason) == (0.0, reason)
    assert score("json_schema", '{"score": 3}', schema={"properties": {"score": {"maximum": 10}}}).score == 1.0


DATED = {"type": "object", "properties": {"date": {"type": "string", "format": "date"}}}


def test_json_schema_and_tool_calls_valid_check_formats_alike() -> None:
    """Issue 34 item 13: one validator, formats checked, for both kinds: the same schema says the same thing."""
    assert score("json_schema", '{"date": "2024-13-45"}', schema=DATED).reason == \
        "at $.date: '2024-13-45' is not a 'date'"
    evaluator = Evaluator(name="t", type="tool_calls_valid", schema={"book": DATED})
    calls = [{"name": "book", "arguments": {"date": "2024-13-45"}},
             {"name": "book", "arguments": '{"date": "2024-12-24"}'}, {"name": "book", "arguments": '{"date": NaN}'}]
    ctx = EvalContext(item={}, output="", metadata={"tool_calls": calls})
    result = asyncio.run(evaluator.evaluate(ctx, None, None))
    assert result.score == pytest.approx(1 / 3)
    assert result.reason == ("2 of 3 tool calls invalid: book: at $.date: '2024-13-45' is not a 'date'; "
                             "book: at $: '{\"date\": NaN}' is not of type 'object'")
