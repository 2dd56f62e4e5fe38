"""The open-source openai/evals registry: an eval spec YAML naming a basic eval class and its samples JSONL
(`input` chat messages, `ideal` answers) as an experiment.

`oaieval MODEL EVAL` takes the model on its command line, so the spec names none: the agent sends each
sample's messages to gpt-4o-mini (change MODELS to the model you ran).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from ._plan import EvaluatorSpec, ModelSpec, Plan
from ._source import Document, Findings, load_jsonl, load_yaml
from ._writer import slug

STAND_IN = ModelSpec("openai", "gpt-4o-mini")
_CLASSES = {"evals.elsuite.basic.match:Match": "match", "evals.elsuite.basic.includes:Includes": "includes",
            "evals.elsuite.basic.fuzzy_match:FuzzyMatch": "fuzzy",
            "evals.elsuite.basic.json_match:JsonMatch": "json",
            "evals.elsuite.modelgraded.classify:ModelBasedClassify": "graded"}
_ARGS = {"samples_jsonl", "ignore_case", "modelgraded_spec", "eval_type"}
FUZZY = '''def fuzzy_match(ctx: EvalContext) -> bool:
    """openai/evals' FuzzyMatch: the output and an ideal answer, normalised, hold one another."""

    def normal(text):
        text = re.sub(r"\\b(a|an|the)\\b", " ", re.sub(r"[^\\w\\s]", "", str(text).lower()))
        return " ".join(text.split())

    ideals = ctx.item["ideal"] if isinstance(ctx.item["ideal"], list) else [ctx.item["ideal"]]
    output = normal(ctx.output)
    return any(normal(ideal) in output or output in normal(ideal) for ideal in ideals)'''


def read(path: Path, findings: Findings) -> Plan:
    doc = load_yaml(path)
    findings.source = doc.path.name
    specs = doc.data if isinstance(doc.data, dict) else {}
    name, spec_key = _eval(specs, doc, findings)
    spec = specs.get(spec_key) or {}
    kind = _CLASSES.get(str(spec.get("class")))
    args = spec.get("args") or {}
    if kind is None:
        findings.refuse(doc.where((spec_key, "class")), f"eval class {spec.get('class')!r} is not one of the basic "
                        "evals (Match, Includes, FuzzyMatch, JsonMatch, ModelBasedClassify with the fact spec); "
                        "import its samples with a basic class, or write the experiment by hand")
    for key in args:
        if key not in _ARGS:
            findings.refuse(doc.where((spec_key, "args", key)), f"eval argument {key!r} has no cobalt equivalent; "
                                                                 "remove it")
    items = _samples(doc, spec_key, args, findings)
    plan = Plan("openai/evals", doc.path.name, slug(name), items, {}, {STAND_IN.model: STAND_IN},
                messages_field="input")
    plan.description = ("oaieval takes the model on its command line, so the spec names none: this agent sends "
                        f"each sample's messages to {STAND_IN.model}; change MODELS to the model you ran.")
    if kind is not None:
        _evaluators(kind, args, plan, doc, spec_key, findings)
    return plan


def _eval(specs: dict[str, Any], doc: Document, findings: Findings) -> tuple[str, str]:
    """The eval's name and the key of its versioned spec (`capitals` -> `capitals.dev.v0`)."""
    for key, value in specs.items():
        if isinstance(value, dict) and "id" in value:
            return key, str(value["id"])
    for key, value in specs.items():
        if isinstance(value, dict) and "class" in value:
            return key.split(".")[0], key
    findings.error(doc.where(()), "names no eval (a key with an id, and the spec it names with a class); give both")
    return "imported", ""


def _samples(doc: Document, spec_key: str, args: dict[str, Any], findings: Findings) -> list[dict[str, Any]]:
    name = args.get("samples_jsonl")
    if not isinstance(name, str):
        findings.error(doc.where((spec_key, "args")), "names no samples_jsonl; give the samples file")
        return []
    file = next((p for p in (doc.path.parent / name, doc.path.parent.parent / "data" / name) if p.is_file()), None)
    if file is None:
        findings.error(doc.where((spec_key, "args", "samples_jsonl")), f"names {name}, which is neither beside the "
                       "spec nor under ../data/; put it there")
        return []
    items = []
    for number, row in load_jsonl(file, findings, shown=name):
        if not isinstance(row, dict) or "input" not in row or "ideal" not in row:
            findings.error(f"{name}, line {number}", "is not a sample; give input (chat messages) and ideal")
            continue
        items.append(row)
    return items


def _evaluators(kind: str, args: dict[str, Any], plan: Plan, doc: Document, spec_key: str,
                findings: Findings) -> None:
    if kind in ("match", "includes"):
        for item in plan.items:
            ideals = item["ideal"] if isinstance(item["ideal"], list) else [item["ideal"]]
            item["checks"] = [_check(kind, [str(i) for i in ideals], bool(args.get("ignore_case")))]
    elif kind == "fuzzy":
        plan.code.append(FUZZY)
        plan.evaluators.append(EvaluatorSpec("fuzzy_match", "function", fn="fuzzy_match"))
    elif kind == "json":
        plan.evaluators.append(EvaluatorSpec("json_match", "equals_json", {"field": "ideal"}))
    elif args.get("modelgraded_spec") == "fact":
        plan.evaluators.append(EvaluatorSpec("fact", "factuality", {"field": "ideal"}))
    else:
        findings.refuse(doc.where((spec_key, "args", "modelgraded_spec")), f"model-graded spec "
                        f"{args.get('modelgraded_spec')!r} has no cobalt kind (fact is factuality); write its "
                        "rubric as an llm-judge evaluator")


def _check(kind: str, ideals: list[str], ignore_case: bool) -> dict[str, Any]:
    """Match: the output starts with an ideal answer (after leading space); Includes: it holds one."""
    case = {"ignore_case": True} if ignore_case else {}
    if kind == "includes":
        return {"type": "contains", "values": ideals, **case}
    if len(ideals) == 1:
        return {"type": "starts_with", "value": ideals[0], **case}
    return {"type": "regex", "pattern": r"^\s*(?:" + "|".join(map(re.escape, ideals)) + ")",
            **({"flags": "i"} if ignore_case else {})}
