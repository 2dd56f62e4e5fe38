"""What a reader makes of a source: the experiment to write, independent of the source's format."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..results._report import ExperimentReport

#: A prompt: one text (sent as the user message) or chat messages (`{"role", "content"}`), with
#: `{{field}}` read from the item.
Prompt = str | list[dict[str, str]]


@dataclass(frozen=True)
class ModelSpec:
    """The model the source's agent called: cobalt calls it through its own provider client."""

    provider: str
    model: str
    base_url: str | None = None
    temperature: float | None = None
    max_tokens: int | None = None


@dataclass
class EvaluatorSpec:
    """One `Evaluator(...)` of the generated file; `fn` names a function of the plan's `code`."""

    name: str
    type: str
    options: dict[str, Any] = field(default_factory=dict)
    threshold: float | None = None
    fn: str | None = None


@dataclass
class Plan:
    """The experiment an import writes: its dataset, agent (prompts x models), evaluators and gates.

    Several prompts or models become the variants `prompt` and `model`, so the grid is the source's matrix.
    """

    format: str
    source: str
    name: str
    items: list[dict[str, Any]]
    prompts: dict[str, Prompt]
    models: dict[str, ModelSpec]
    evaluators: list[EvaluatorSpec] = field(default_factory=list)
    #: Python source put before the experiment (the function evaluators' code), one block each.
    code: list[str] = field(default_factory=list)
    gates: list[tuple[str, float]] = field(default_factory=list)
    #: One sentence per construct left out with `--skip-unsupported`.
    skipped: list[str] = field(default_factory=list)
    description: str = ""
    #: The item field holding the output the source already recorded: the agent returns it, calling no model.
    replay: str | None = None
    #: The agent's docstring (default: it sends the prompt to the model as the source did).
    agent_doc: str = ""
    #: The item field holding each item's own chat messages: the agent sends them as they are (no prompt).
    messages_field: str | None = None
    #: Runs the source already ran (their results), to record in history with the files.
    history: list[ExperimentReport] = field(default_factory=list)
