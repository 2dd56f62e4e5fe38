"""A run's evaluation identity: what it measured with, so two runs' deltas are known to compare one measurement.

The identity holds the dataset (a content hash and the item count), each evaluator's configuration
(kind, options, prompt hash, judge model), the agent (its module, a hash of its source file, the git
commit when in a repository) and cobalt's version. The engine computes it once per run
(`run/_identity.py`); it is stored with the run (the `identities` table and the results JSON) and
`identity_changes` says how two runs' identities differ, in sentences.

A change of the dataset or of an evaluator's configuration changes the measurement: the deltas of two
such runs mix two measurements, and `no_regression` and `--fail-on-regression` refuse such a baseline
unless told to accept it. A change of the agent is what a comparison measures, and a new cobalt version
is said but does not block.
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel, Field


class DatasetIdentity(BaseModel):
    """The dataset a run drew its items from: a hash of every item's content, in order, and their count."""

    hash: str
    items: int
    source: str | None = None
    #: A stored dataset's name, version and split (`Dataset.from_store`, docs/datasets.md); None for a file.
    name: str | None = None
    version: int | None = None
    split: str | None = None

    @property
    def ref(self) -> str | None:
        """`qa@3` or `qa@3:test` for a stored dataset, else None."""
        if self.name is None:
            return None
        return f"{self.name}@{self.version}" + (f":{self.split}" if self.split else "")


class EvaluatorIdentity(BaseModel):
    """One evaluator as configured for a run: long texts (prompts, rubrics) and code by their hash."""

    name: str
    kind: str
    #: The options other than the prompt; a callable is its source's hash (`code:1a2b...`).
    options: dict[str, Any] = Field(default_factory=dict)
    #: The judge prompt's (or grader deck's, or rubric's) hash; None for an evaluator without one.
    prompt_hash: str | None = None
    #: `provider/model` of the judge or embeddings model it calls; None when it calls none.
    judge_model: str | None = None


class AgentIdentity(BaseModel):
    """The agent: where it is defined, a hash of that source file, and the repository's commit."""

    module: str | None = None
    qualname: str | None = None
    #: The source file, relative to the project root when under it.
    source_file: str | None = None
    source_hash: str | None = None
    git_commit: str | None = None


class EvaluationIdentity(BaseModel):
    """What a run measured with; stored with every run."""

    dataset: DatasetIdentity
    evaluators: list[EvaluatorIdentity] = Field(default_factory=list)
    agent: AgentIdentity = Field(default_factory=AgentIdentity)
    cobalt_version: str = ""


class IdentityChange(BaseModel):
    """One difference between a baseline's identity (A) and a run's (B), as a sentence."""

    #: `dataset`, `evaluator`, `agent`, `cobalt`, or `unknown` (a run stored before identities were).
    part: str
    #: The evaluator it concerns, if any.
    evaluator: str | None = None
    text: str
    #: True when the two runs measured differently: their deltas compare two measurements.
    measurement: bool


def identity_changes(a: EvaluationIdentity | None, b: EvaluationIdentity | None) -> list[IdentityChange]:
    """How B's identity differs from baseline A's: measurement changes first, then the agent and cobalt."""
    if a is None or b is None:
        missing = " and ".join(side for side, ident in (("A", a), ("B", b)) if ident is None)
        return [IdentityChange(part="unknown", measurement=False,
                               text=f"run {missing} has no evaluation identity (stored before cobalt recorded one), "
                                    "so whether both runs measured alike is unknown")]
    changes = _dataset_changes(a.dataset, b.dataset)
    changes += _evaluator_changes(a.evaluators, b.evaluators)
    changes += _agent_changes(a.agent, b.agent)
    if a.cobalt_version != b.cobalt_version:
        changes.append(IdentityChange(part="cobalt", measurement=False,
                                      text=f"cobalt's version changed ({a.cobalt_version} -> {b.cobalt_version})"))
    return changes


def measurement_changes(changes: list[IdentityChange]) -> list[IdentityChange]:
    """The changes that make two runs' deltas compare two measurements."""
    return [c for c in changes if c.measurement]


def refusal(changes: list[IdentityChange], accept: str) -> str:
    """One sentence refusing a baseline measured differently, naming what changed and how to accept it."""
    said = "; ".join(c.text for c in measurement_changes(changes))
    return f"the baseline was measured differently: {said} ({accept})"


def _dataset_changes(a: DatasetIdentity, b: DatasetIdentity) -> list[IdentityChange]:
    if a.ref != b.ref and a.ref is not None and b.ref is not None:
        # Another version is another measurement even where the items read came out alike.
        return [IdentityChange(part="dataset", measurement=True,
                               text=f"the dataset changed version ({a.ref} -> {b.ref}, {a.items} -> {b.items} items): "
                                    "its means are over different items")]
    if a.hash == b.hash and a.items == b.items:
        return []
    count = f"{a.items} -> {b.items} items" if a.items != b.items else f"{a.items} items, their content differs"
    return [IdentityChange(part="dataset", measurement=True,
                           text=f"the dataset changed ({count}): its means are over different items")]


def _evaluator_changes(a: list[EvaluatorIdentity], b: list[EvaluatorIdentity]) -> list[IdentityChange]:
    before, after = {e.name: e for e in a}, {e.name: e for e in b}
    changes = []
    for name, old in before.items():
        new = after.get(name)
        if new is None:
            changes.append(IdentityChange(part="evaluator", evaluator=name, measurement=False,
                                          text=f"evaluator {name!r} is not in run B: it is not compared"))
            continue
        changes += _one_evaluator(old, new)
    changes += [IdentityChange(part="evaluator", evaluator=name, measurement=False,
                               text=f"evaluator {name!r} is new in run B: it has no baseline")
                for name in after if name not in before]
    return changes


def _one_evaluator(a: EvaluatorIdentity, b: EvaluatorIdentity) -> list[IdentityChange]:
    name, tail = a.name, "its deltas compare two measurements"
    found = []
    if a.kind != b.kind:
        found.append(f"the kind of {name!r} changed ({a.kind} -> {b.kind})")
    if a.prompt_hash != b.prompt_hash:
        found.append(f"the judge prompt of {name!r} changed")
    if a.judge_model != b.judge_model:
        found.append(f"the judge model of {name!r} changed ({a.judge_model or 'none'} -> {b.judge_model or 'none'})")
    if a.options != b.options:
        keys = sorted(k for k in {*a.options, *b.options} if a.options.get(k) != b.options.get(k))
        shown = ", ".join(f"{k} {_short(a.options.get(k))} -> {_short(b.options.get(k))}" for k in keys[:4])
        found.append(f"the options of {name!r} changed ({shown}{', ...' if len(keys) > 4 else ''})")
    return [IdentityChange(part="evaluator", evaluator=name, measurement=True, text=f"{text}: {tail}")
            for text in found]


def _agent_changes(a: AgentIdentity, b: AgentIdentity) -> list[IdentityChange]:
    """The agent's location or source changed; a new commit alone is not said (every pull request has
    one, whether or not it touched the agent)."""
    parts = []
    if (a.module, a.qualname, a.source_file) != (b.module, b.qualname, b.source_file):
        parts.append(f"{_where(a)} -> {_where(b)}")
    elif a.source_hash != b.source_hash:
        parts.append(f"its source file {b.source_file or '(unknown)'} differs")
    if not parts:
        return []
    if a.git_commit != b.git_commit and (a.git_commit or b.git_commit):
        parts.append(f"commit {(a.git_commit or 'none')[:12]} -> {(b.git_commit or 'none')[:12]}")
    return [IdentityChange(part="agent", measurement=False,
                           text=f"the agent changed ({'; '.join(parts)}): this is what the deltas measure")]


def _where(agent: AgentIdentity) -> str:
    """`pkg.agents.answer`, or `experiments/qa.cobalt.py:answer` for an agent in an experiment file."""
    if agent.module is None and agent.source_file:
        return f"{agent.source_file}:{agent.qualname or '?'}"
    return ".".join(p for p in (agent.module, agent.qualname) if p) or "(unknown)"


def _short(value: Any, limit: int = 40) -> str:
    text = "none" if value is None else json.dumps(value, sort_keys=True, default=str)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def identity_lines(identity: EvaluationIdentity | None) -> list[str]:
    """The identity as `label: value` lines, for `cobalt show`."""
    if identity is None:
        return ["(none: stored before cobalt recorded evaluation identities)"]
    d, agent = identity.dataset, identity.agent
    lines = [f"dataset: {d.items} items, content hash {d.hash}" + (f" ({d.ref or d.source})" if d.ref or d.source
                                                                   else "")]
    for e in identity.evaluators:
        bits = [e.kind, *(f"{label} {value}" for label, value in (
            ("prompt", e.prompt_hash), ("judge", e.judge_model),
            ("options", _short(e.options, 80) if e.options else None)) if value)]
        lines.append(f"evaluator {e.name}: " + ", ".join(bits))
    source = f"source {agent.source_file} ({agent.source_hash})" if agent.source_file else None
    commit = f"commit {agent.git_commit[:12]}" if agent.git_commit else None
    lines.append("agent: " + ", ".join(p for p in (_where(agent), source, commit) if p))
    lines.append(f"cobalt: {identity.cobalt_version}")
    return lines
