"""The deck builder: `grader(name).spec(text).card(title, fn).context(name, value)`.

Every step returns a new, frozen deck, so a base grader can be extended into variants without
changing it. Nothing here is a template: spec text, card text and context values reach the model
exactly as written, and context values only ever inside their delimiters (see `_prompt`).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from ..._errors import ConfigError


def _text(value: Any, what: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ConfigError(f"{what} must be a non-empty string, got {value!r}.")
    return value


@dataclass(frozen=True)
class Card:
    """A titled group of criteria: spec lines and nested cards, in the order they were added."""

    title: str
    specs: tuple[str, ...] = ()
    cards: tuple[Card, ...] = ()

    def spec(self, text: str) -> Card:
        """This card with one more line of criteria."""
        return replace(self, specs=(*self.specs, _text(text, f"card {self.title!r}: spec text")))

    def card(self, title: str, build: Callable[[Card], Card]) -> Card:
        """This card with a nested card, built by `build(Card(title))`."""
        return replace(self, cards=(*self.cards, _build_card(title, build)))

    def payload(self) -> dict[str, Any]:
        return {"title": self.title, "specs": list(self.specs), "cards": [c.payload() for c in self.cards]}


def _build_card(title: str, build: Callable[[Card], Card]) -> Card:
    title = _text(title, "A card title")
    if not callable(build):
        raise ConfigError(f"card({title!r}, ...) needs a function such as lambda c: c.spec('...'), got {build!r}.")
    built = build(Card(title))
    if not isinstance(built, Card):
        raise ConfigError(f"The function of card {title!r} returned {type(built).__name__}, not the card: "
                          "cards are immutable, so return it, e.g. lambda c: c.spec('...').spec('...').")
    return built


@dataclass(frozen=True)
class Context:
    """One named value the grader is given as data. `value` is kept as given (text or JSON-able)."""

    name: str
    value: Any

    def as_text(self) -> str:
        if isinstance(self.value, str):
            return self.value
        return json.dumps(self.value, ensure_ascii=False, sort_keys=True, default=str, indent=2)


@dataclass(frozen=True)
class Grader:
    """A grading prompt built from a spec, titled cards of criteria and context values.

    It scores an output from -3 (worst) to 3 (best) with notes; `hash` identifies its content
    (spec, cards, context and the output contract), so a changed rubric is a new grader. Use it as
    an evaluator with `Evaluator(name=..., type="grader", grader=g)` or with `cobalt grade`.
    """

    name: str
    specs: tuple[str, ...] = ()
    cards: tuple[Card, ...] = ()
    contexts: tuple[Context, ...] = ()
    #: The file the grader was loaded from, if any (not part of its content or hash).
    source: str | None = field(default=None, compare=False)

    def spec(self, text: str) -> Grader:
        """This grader with one more paragraph of its overall specification."""
        return replace(self, specs=(*self.specs, _text(text, f"grader {self.name!r}: spec text")))

    def card(self, title: str, build: Callable[[Card], Card]) -> Grader:
        """This grader with a card of criteria: `build` gets `Card(title)` and returns it with specs."""
        return replace(self, cards=(*self.cards, _build_card(title, build)))

    def context(self, name: str, value: Any) -> Grader:
        """This grader with a named value given to the model as delimited data, never as instructions.

        A later value of the same name replaces the earlier one.
        """
        name = _text(name, f"grader {self.name!r}: a context name")
        kept = tuple(c for c in self.contexts if c.name != name)
        return replace(self, contexts=(*kept, Context(name, value)))

    @property
    def hash(self) -> str:
        """The SHA-256 of the grader's content: spec, cards, context and the output contract."""
        from ._hash import content_hash

        return content_hash(self)

    @property
    def short_hash(self) -> str:
        """The first 12 hex digits of `hash`, as shown beside the grader's name."""
        return self.hash[:12]

    def render(self, user_message: Any, assistant_response: Any, expected_output: Any = None) -> str:
        """The prompt for one output (the user message; the system prompt is `SYSTEM`)."""
        from ._prompt import render_prompt

        return render_prompt(self, user_message, assistant_response, expected_output)

    def describe(self) -> dict[str, Any]:
        """Name, hash and source, as stored with every run that used the grader."""
        return {"name": self.name, "hash": self.hash, "source": self.source}

    def __repr__(self) -> str:
        return f"grader({self.name!r}) #{self.short_hash}"


def grader(name: str) -> Grader:
    """Start a deck: `grader("json-validator").spec("...").card("criteria", lambda c: c.spec("..."))`."""
    return Grader(_text(name, "A grader name"))
