"""promptfoo's assertions as cobalt checks (per item) or evaluators (a defaultTest's python)."""

from __future__ import annotations

from typing import Any

from ._plan import EvaluatorSpec, ModelSpec, Prompt
from ._source import Document, Findings, KeyPath, read_text
from ._templates import fill_static
from ._writer import prompt_text

_KEYS = {"type", "value", "threshold", "metric", "provider", "weight"}
#: The kinds that call no model: promptfoo's `not-` prefix is their `negate`.
_NEGATABLE = {"equals", "contains", "icontains", "contains-any", "icontains-any", "contains-all", "icontains-all",
              "regex", "starts-with", "is-json", "bleu", "rouge-n", "latency", "cost"}
#: promptfoo's own layout of the output and the rubric, so that a judge sees what promptfoo's grader saw.
RUBRIC_PROMPT = ("Grade the output according to the rubric: if the statement in the rubric is true of the output, "
                 "score 1.0, else 0.0.\n\n<Output>\n{{{{output}}}}\n</Output>\n<Rubric>\n{rubric}\n</Rubric>")
#: promptfoo passes factuality choices A, B, C and E and fails D; cobalt scores A (the lowest passing) 0.4.
FACTUALITY_PASS = 0.4
PYTHON_SCORE = '''def promptfoo_score(value):
    """A promptfoo python assertion's result as a cobalt score: a bool, a number or {pass, score, reason}."""
    if isinstance(value, dict):
        passed = value.get("pass", value.get("pass_"))
        return {"score": float(value.get("score", 1.0 if passed else 0.0)), "reason": str(value.get("reason", ""))}
    return float(value)'''


class Assertions:
    """Reads `assert` lists; the defaultTest's python assertions become experiment evaluators."""

    def __init__(self, doc: Document, findings: Findings) -> None:
        self.doc, self.findings = doc, findings
        self.judge: ModelSpec | None = None
        self.evaluators: list[EvaluatorSpec] = []
        self.code: list[str] = []
        self._python: set[KeyPath] = set()

    def checks(self, item: dict[str, Any], default: list[Any], default_at: KeyPath, at: KeyPath, own: list[Any],
               prompts: dict[str, Prompt]) -> list[dict[str, Any]]:
        found = []
        for where, entries in ((default_at, default), (at, own)):
            for i, entry in enumerate(entries):
                check = self._one(entry, (*where, i), item, prompts, in_default=where is default_at)
                if check is not None:
                    found.append(check)
        return found

    def _one(self, entry: Any, at: KeyPath, item: dict[str, Any], prompts: dict[str, Prompt],
             in_default: bool) -> dict[str, Any] | None:
        where = self.doc.where(at)
        if not isinstance(entry, dict) or not isinstance(entry.get("type"), str):
            self.findings.error(where, "is not an assertion; give a mapping with a type")
            return None
        for key in entry:
            if key not in _KEYS or (key == "weight" and entry[key] != 1):
                self.findings.refuse(self.doc.where((*at, key)), f"assertion option {key!r} has no cobalt "
                                     "equivalent (every check of an item counts the same); remove it")
        kind = entry["type"]
        negate, base = kind.startswith("not-"), kind.removeprefix("not-")
        value = entry.get("value")
        value = fill_static(value, item) if isinstance(value, str) else value
        if negate and base not in _NEGATABLE:
            self.findings.refuse(where, f"assertion type {kind!r} negates a model-graded check, which cobalt cannot "
                                        "negate; write the opposite rubric instead")
            return None
        check = self._kind(base, value, entry, at, item, prompts, in_default)
        if check is None:
            return None
        if negate:
            check["negate"] = True
        if entry.get("metric"):
            check["name"] = str(entry["metric"])
        return check

    def _kind(self, kind: str, value: Any, entry: dict[str, Any], at: KeyPath, item: dict[str, Any],
              prompts: dict[str, Prompt], in_default: bool) -> dict[str, Any] | None:
        threshold = entry.get("threshold")
        simple = _simple(kind, value)
        if simple is not None:
            return simple
        if kind == "equals":
            return {"type": "equals_json" if isinstance(value, dict | list) else "exact-match",
                    "field": _reference(item, value)}
        if kind in ("similar", "factuality", "bleu", "rouge-n"):
            return self._reference_kind(kind, value, threshold, at, item)
        if kind == "llm-rubric":
            return {"type": "llm-judge", "prompt": RUBRIC_PROMPT.format(rubric=value), **self._judge(entry, at),
                    **_pass_mark(threshold)}
        if kind == "answer-relevance":
            item.setdefault("input", item.get("query") or _first_prompt(prompts, item))
            return {"type": "answer_relevancy", **self._judge(entry, at), **_pass_mark(threshold)}
        if kind in ("latency", "cost"):
            if not isinstance(threshold, int | float):
                self.findings.error(self.doc.where(at), f"a {kind} assertion needs a threshold; give one")
                return None
            return ({"type": "max_latency", "ms": threshold} if kind == "latency"
                    else {"type": "max_cost", "usd": threshold})
        if kind == "python":
            self._python_check(value, entry, at, in_default)
            return None
        self.findings.refuse(self.doc.where(at), _refusal(kind))
        return None

    def _reference_kind(self, kind: str, value: Any, threshold: Any, at: KeyPath,
                        item: dict[str, Any]) -> dict[str, Any]:
        field = _reference(item, value)
        if kind == "similar":
            return {"type": "similarity", "field": field, "threshold": 0.75 if threshold is None else threshold,
                    **self._judge({}, at, embeddings=True)}
        if kind == "factuality":
            return {"type": "factuality", "field": field, "threshold": FACTUALITY_PASS, **self._judge({}, at)}
        if kind == "bleu":
            return {"type": "bleu", "field": field, "threshold": 0.5 if threshold is None else threshold}
        return {"type": "rouge", "field": field, "variant": "rouge1",
                "threshold": 0.75 if threshold is None else threshold}

    def _judge(self, entry: dict[str, Any], at: KeyPath, *, embeddings: bool = False) -> dict[str, Any]:
        """The model options of a model-graded check: its own provider, else defaultTest.options.provider."""
        spec = self.judge
        if entry.get("provider") is not None:
            from ._providers import provider_spec

            found = provider_spec(entry["provider"], self.doc, (*at, "provider"), self.findings)
            spec = found[1] if found else None
        if spec is None or embeddings:
            return {}
        return {"provider": spec.provider, "model": spec.model,
                **({"base_url": spec.base_url} if spec.base_url else {})}

    def _python_check(self, value: Any, entry: dict[str, Any], at: KeyPath, in_default: bool) -> None:
        """A defaultTest's python assertion as a function evaluator (once, however many tests meet it)."""
        if not in_default:
            self.findings.refuse(self.doc.where(at), "a python assertion on one test cannot travel in the dataset "
                                 "(cobalt's item checks are data, not code); move it to defaultTest, where it "
                                 "becomes a function evaluator of every item")
            return
        if at in self._python or not isinstance(value, str):
            return
        self._python.add(at)
        number = len(self._python)
        if not self.code:
            self.code.append(PYTHON_SCORE)
        self.code.append(self._python_code(value, number, at))
        name = str(entry.get("metric") or f"python_{number}")
        self.evaluators.append(EvaluatorSpec(name, "function", fn=f"python_{number}",
                                             threshold=entry.get("threshold")))

    def _python_code(self, value: str, number: int, at: KeyPath) -> str:
        where = self.doc.where(at)
        header = (f"def python_{number}(ctx: EvalContext):\n    \"\"\"promptfoo's python assertion ({where}).\"\"\"\n"
                  "    output, context = str(ctx.output), {\"vars\": ctx.item}\n")
        if value.startswith("file://"):
            name, _, function = value[7:].partition(":")
            source = read_text(self.doc.path.parent / name).strip()
            return (f"# {name}, as promptfoo ran it\n{source}\n\n\n_python_{number}_assert = {function or 'get_assert'}"
                    f"\n\n\n{header}    return promptfoo_score(_python_{number}_assert(output, context))")
        body = value.strip()
        if "\n" not in body:
            return f"{header}    return promptfoo_score({body})"
        inner = "\n".join(f"        {line}" for line in body.splitlines())
        return f"{header}\n    def check():\n{inner}\n\n    return promptfoo_score(check())"


def _simple(kind: str, value: Any) -> dict[str, Any] | None:
    """The checks that take the assertion's value as an option."""
    ignore = kind.startswith("i") and kind != "is-json"
    base = kind[1:] if ignore else kind
    if base == "contains":
        return {"type": "contains", "value": str(value), **({"ignore_case": True} if ignore else {})}
    if base in ("contains-any", "contains-all"):
        values = value if isinstance(value, list) else [v.strip() for v in str(value).split(",")]
        return {"type": "contains", "values": [str(v) for v in values],
                **({"all": True} if base == "contains-all" else {}), **({"ignore_case": True} if ignore else {})}
    if kind == "regex":
        return {"type": "regex", "pattern": str(value)}
    if kind == "starts-with":
        return {"type": "starts_with", "value": str(value), "strip": False}
    if kind == "is-json":
        return {"type": "json_schema", "schema": value} if isinstance(value, dict) else {"type": "json_valid"}
    return None


def _reference(item: dict[str, Any], value: Any) -> str:
    """Put a reference value in the item (`expected_output`, then `expected_output_2`, ...): cobalt's
    reference kinds compare with an item field."""
    field, n = "expected_output", 1
    while field in item and item[field] != value:
        n += 1
        field = f"expected_output_{n}"
    item[field] = value
    return field


def _pass_mark(threshold: Any) -> dict[str, Any]:
    return {} if threshold is None else {"threshold": threshold}


def _first_prompt(prompts: dict[str, Prompt], item: dict[str, Any]) -> str:
    return fill_static(prompt_text(next(iter(prompts.values()))), item) if prompts else ""


_REASONS = {
    "javascript": "cobalt does not run JavaScript; rewrite the check as a python assertion in defaultTest (a "
                  "function evaluator) or as one of the deterministic types",
    "levenshtein": "promptfoo's threshold counts edits, cobalt's levenshtein scores a normalised similarity; "
                   "declare Evaluator(type='levenshtein', threshold=...) with a similarity pass mark instead",
    "contains-json": "cobalt has no check for JSON inside prose; use is-json on a JSON-only answer, or a regex",
}


def _refusal(kind: str) -> str:
    return f"assertion type {kind!r} is refused: " + _REASONS.get(
        kind, "cobalt has no equivalent check; write it as a python assertion in defaultTest, or leave it out")
