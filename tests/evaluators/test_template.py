"""`{{variable}}` templates: rendering, variable discovery and missing-variable errors."""

from __future__ import annotations

import json

import pytest

from cobalt_lib._errors import ConfigError, TemplateError
from cobalt_lib.evaluators._template import missing_item_variables, render, variables

ITEM = {"input": {"question": "Capital?", "lang": "en"}, "expected_output": "Paris", "tags": ["geo"]}


# -- render ---------------------------------------------------------------------------------------

def test_simple_variable() -> None:
    assert render("Q: {{name}}!", {"name": "Ada"}) == "Q: Ada!"


def test_spaces_inside_braces_are_allowed() -> None:
    assert render("{{ name }}|{{name  }}|{{  name}}", {"name": "x"}) == "x|x|x"


def test_same_variable_twice() -> None:
    assert render("{{a}} and {{a}}", {"a": "b"}) == "b and b"


def test_dotted_item_field() -> None:
    context = {**ITEM, "item": ITEM}
    assert render("{{item.expected_output}}", context) == "Paris"


def test_dotted_path_into_nested_input() -> None:
    assert render("{{input.question}} ({{ input.lang }})", ITEM) == "Capital? (en)"


def test_deeply_nested_path() -> None:
    assert render("{{item.input.question}}", {"item": ITEM}) == "Capital?"


@pytest.mark.parametrize(("value", "text"), [
    (3, "3"), (0.5, "0.5"), (True, "true"), (False, "false"),
    ({"k": "v", "n": 1}, '{"k": "v", "n": 1}'), ([1, "two"], '[1, "two"]'),
])
def test_non_string_values_render_as_json(value: object, text: str) -> None:
    assert render("{{v}}", {"v": value}) == text


def test_json_rendering_keeps_unicode() -> None:
    assert render("{{v}}", {"v": {"city": "Zürich"}}) == '{"city": "Zürich"}'


def test_whole_object_renders_as_parseable_json() -> None:
    assert json.loads(render("{{input}}", ITEM)) == ITEM["input"]


def test_values_are_not_re_expanded() -> None:
    assert render("{{a}}", {"a": "{{b}}", "b": "no"}) == "{{b}}"


def test_text_without_variables_is_unchanged() -> None:
    text = 'Answer as JSON: {"score": 0.5} { {not a var} } {{ 1bad }}'
    assert render(text, {}) == text


def test_missing_variable_raises_naming_it() -> None:
    with pytest.raises(TemplateError, match=r"\{\{answer\}\} but the item has no field 'answer'"):
        render("{{answer}}", {"input": "x"})


def test_missing_variable_error_lists_available_fields() -> None:
    with pytest.raises(TemplateError, match=r"available: expected_output, input, tags"):
        render("{{nope}}", ITEM)


def test_missing_variable_error_with_non_string_keys() -> None:
    with pytest.raises(TemplateError, match=r"available: 1, b\)"):
        render("{{x}}", {1: "a", "b": 2})


def test_missing_nested_field_names_the_dotted_path() -> None:
    with pytest.raises(TemplateError, match=r"no field 'input\.missing'"):
        render("{{input.missing}}", ITEM)


def test_dotted_path_through_a_string_is_missing() -> None:
    with pytest.raises(TemplateError, match=r"expected_output\.x"):
        render("{{expected_output.x}}", ITEM)


def test_missing_variable_error_uses_where() -> None:
    with pytest.raises(TemplateError, match=r"^Evaluator 'relevance' uses \{\{x\}\}"):
        render("{{x}}", {}, where="Evaluator 'relevance'")


def test_template_error_is_a_config_error() -> None:
    with pytest.raises(ConfigError):
        render("{{x}}", {})


# -- variables ------------------------------------------------------------------------------------

def test_variables_in_order_of_first_appearance_without_duplicates() -> None:
    assert variables("{{b}} {{ a }} {{item.x}} {{b}} {{input.q.r}}") == ["b", "a", "item.x", "input.q.r"]


def test_variables_of_plain_text_is_empty() -> None:
    assert variables("no {variables} here") == []


# -- missing_item_variables -----------------------------------------------------------------------

def test_runtime_variables_are_not_reported_missing() -> None:
    template = "{{output}} {{metadata}} {{metadata.model}} {{index}} {{run_index}} {{item}}"
    assert missing_item_variables(template, {}) == []


def test_item_fields_present_are_not_missing() -> None:
    assert missing_item_variables("{{expected_output}} {{input.question}} {{item.tags}}", ITEM) == []


def test_item_fields_absent_are_missing_in_order() -> None:
    template = "{{output}} {{context}} {{input.question}} {{item.reference}} {{input.nope}}"
    assert missing_item_variables(template, ITEM) == ["context", "item.reference", "input.nope"]


def test_item_dotted_path_into_nested_field() -> None:
    assert missing_item_variables("{{item.input.question}}", ITEM) == []
    assert missing_item_variables("{{item.input.other}}", ITEM) == ["item.input.other"]


def test_a_judge_prompt_naming_a_missing_item_field_fails_before_the_run_naming_the_field() -> None:
    from cobalt_lib import Evaluator

    judge = Evaluator(name="relevance", prompt="Is {{output}} right for {{item.nope}}?")
    with pytest.raises(TemplateError) as caught:
        judge.check_item(ITEM, 3)
    assert str(caught.value) == ("Evaluator 'relevance' uses {{item.nope}} but dataset item 3 has no field 'nope' "
                                 "(fields: expected_output, input, tags).")
    bare = Evaluator(name="relevance", prompt="Is {{output}} right for {{context}}?")
    with pytest.raises(TemplateError, match=r"uses \{\{context\}\} but dataset item 0 has no field 'context' "):
        bare.check_item(ITEM, 0)
    Evaluator(name="ok", prompt="{{output}} vs {{item.input}} and {{expected_output}}").check_item(ITEM, 0)
