"""A grader's numbered lines and the edits by number, the builder file written back (same hash), and the
reading of a drafted grader: pure functions, no model."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cobalt_lib import grader, load_grader
from cobalt_lib._errors import ConfigError
from cobalt_lib.grading.graders import Sample
from cobalt_lib.grading.graders._draft import draft_request, grader_name, parse_draft, spread
from cobalt_lib.grading.graders._outline import add_card, add_spec, delete_line, editable_text, outline, set_line
from cobalt_lib.grading.graders._source import deck_from_payload, deck_payload, grader_source
from cobalt_lib.render._units import decimal, percent

DECK = (grader("dates").spec("Grade the date.")
        .card("Format", lambda c: c.spec("ISO 8601.").spec("No time.").card("Zones", lambda z: z.spec("UTC.")))
        .card("Tone", lambda c: c.spec("Polite."))
        .context("policy", {"strict": True, "years": [2024, 2025]}))


def _texts(g: object) -> list[str]:
    return [f"{ln.number} {'  ' * ln.depth}{ln.kind}: {ln.text}" for ln in outline(g)]  # type: ignore[arg-type]


def test_lines_are_numbered_in_the_order_the_rubric_reads() -> None:
    assert _texts(DECK) == ["1 spec: Grade the date.", "2 card: Format", "3   spec: ISO 8601.", "4   spec: No time.",
                            "5   card: Zones", "6     spec: UTC.", "7 card: Tone", "8   spec: Polite.",
                            '9 context: policy: {"strict": true, "years": [2024, 2025]}']


def test_edits_by_number_return_new_graders() -> None:
    assert set_line(DECK, 4, "Dates only.").cards[0].specs == ("ISO 8601.", "Dates only.")
    assert set_line(DECK, 5, "Time zones").cards[0].cards[0].title == "Time zones"
    assert set_line(DECK, 9, '{"strict": false}').contexts[0].value == {"strict": False}
    assert add_spec(DECK, 2, "First.").cards[0].specs == ("First.", "ISO 8601.", "No time.")
    assert add_spec(DECK, 6, "Or offsets.").cards[0].cards[0].specs == ("UTC.", "Or offsets.")
    assert add_spec(DECK, 1, "Second paragraph.").specs == ("Grade the date.", "Second paragraph.")
    assert [c.title for c in add_card(DECK, 3, "Content", "Right day.").cards] == ["Format", "Content", "Tone"]
    assert [c.title for c in add_card(DECK, 6, "Leap years").cards[0].cards] == ["Zones", "Leap years"]
    assert [c.title for c in add_card(DECK, 1, "First").cards] == ["First", "Format", "Tone"]
    assert _texts(delete_line(DECK, 2))[1:3] == ["2 card: Tone", "3   spec: Polite."]
    assert delete_line(DECK, 9).contexts == () and delete_line(DECK, 8).cards[1].specs == ()
    assert editable_text(DECK, 9) == '{"strict": true, "years": [2024, 2025]}'
    assert DECK.cards[0].specs == ("ISO 8601.", "No time.")  # the original is untouched
    assert set_line(DECK, 3, "  ISO 8601.  ").hash == DECK.hash  # surrounding spaces are not an edit


@pytest.mark.parametrize(("edit", "message"), [
    (lambda: set_line(DECK, 10, "x"), "has lines 1 to 9; there is no line 10"),
    (lambda: set_line(DECK, 3, "  "), "The new spec is empty"),
    (lambda: set_line(DECK, 9, "not json"), "Context 'policy' holds JSON; the new value is not valid JSON"),
    (lambda: add_spec(DECK, 9, "x"), "Line 9 is a context value"),
    (lambda: delete_line(grader("one").spec("Only."), 1), "the grader's last criterion"),
])
def test_bad_edits_say_what_to_do(edit: object, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        edit()  # type: ignore[operator]


def test_the_builder_file_loads_back_with_the_same_hash(tmp_path: Path) -> None:
    tricky = DECK.spec('Quotes \' " and \\ and {{output}}\nand a second line.')
    path = tmp_path / "g.py"
    path.write_text(grader_source(tricky), encoding="utf-8")
    loaded = load_grader(path)
    assert loaded.hash == tricky.hash and loaded.name == "dates"
    assert grader_source(loaded) == path.read_text(encoding="utf-8")
    with pytest.raises(ConfigError, match="context 'when' holds a object that cannot be written as a literal"):
        grader_source(grader("x").spec("y").context("when", object()))


def _samples() -> list[Sample]:
    scores = [3, 3, 3, 3, -3, 0, None]
    return [Sample(id=f"s{i}", user_message=f"q{i}", assistant_response={"a": i}, score=s)
            for i, s in enumerate(scores)]


def test_draft_request_spreads_the_scores_and_delimits_the_samples() -> None:
    assert [s.score for s in spread(_samples(), limit=4)] == [-3, 0, 3, 3]
    request = draft_request(_samples(), name="answers", guidance="Strict about JSON.")
    assert request.count("### Sample") == 6 and "human score +3" in request and "BEGIN guidance #" in request
    assert '{"a": 4}' in request and "Name the grader 'answers'." in request
    with pytest.raises(ConfigError, match="None of the samples carries a human score"):
        draft_request([Sample(id="x", user_message="q", assistant_response="a")])


def test_a_drafted_grader_is_read_through_the_builder() -> None:
    answer = "Sure:\n```json\n" + json.dumps({
        "name": "JSON Answers!", "spec": "Grade the JSON.",
        "cards": [{"title": "Syntax", "specs": ["Valid."], "cards": [{"title": "Keys", "specs": ["Quoted."]}]}],
    }) + "\n```"
    drafted = parse_draft(answer)
    assert not isinstance(drafted, str)
    assert (drafted.name, drafted.specs, drafted.cards[0].cards[0].specs) == ("json-answers", ("Grade the JSON.",),
                                                                             ("Quoted.",))
    assert parse_draft(answer, name="mine").name == "mine"  # type: ignore[union-attr]
    assert parse_draft("no json here") == "no JSON object with 'spec' and 'cards' was found"
    assert parse_draft('{"spec": ["x"], "cards": [{"specs": ["y"]}]}') == "card 1 has no title"
    assert parse_draft('{"spec": ["x"], "cards": [{"title": "t", "specs": [""]}]}') == (
        "card 1: specs must be a list of non-empty strings")
    assert grader_name(" Dates & Times ") == "dates-times"


def test_rates_and_figures_print_as_people_read_them() -> None:
    assert [percent(r) for r in (0.9, 1.0, 0.925, 0.0, 2 / 3, None)] == ["90%", "100%", "92.5%", "0%", "66.7%", "–"]
    assert [decimal(v) for v in (0.1, 0.7, None)] == ["0.10", "0.70", "–"]


def test_the_rubric_stored_with_a_grading_rebuilds_the_same_grader() -> None:
    stored = json.loads(json.dumps(deck_payload(DECK)))
    assert deck_from_payload(stored).hash == DECK.hash and deck_from_payload(stored).name == "dates"
