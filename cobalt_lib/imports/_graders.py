"""The Evals API's graders (`testing_criteria`) as cobalt evaluators."""

from __future__ import annotations

import ast
import re
from typing import Any

from ._plan import EvaluatorSpec
from ._source import Document, Findings, KeyPath
from ._templates import message_content, openai_template

_REFERENCE = re.compile(r"^\{\{\s*item\.([\w-]+)\s*\}\}$")
_OUTPUT = re.compile(r"^\{\{\s*sample\.output_text\s*\}\}$")
_SIMILARITY = {"fuzzy_match": ("levenshtein", {}), "bleu": ("bleu", {}), "cosine": ("similarity", {}),
               "rouge_1": ("rouge", {"variant": "rouge1"}), "rouge_2": ("rouge", {"variant": "rouge2"}),
               "rouge_l": ("rouge", {"variant": "rougeL"})}


def _name(text: str) -> str:
    return re.sub(r"\W+", "_", text).strip("_").lower() or "grader"


class Graders:
    def __init__(self, doc: Document, findings: Findings) -> None:
        self.doc, self.findings = doc, findings
        self.evaluators: list[EvaluatorSpec] = []
        self.code: list[str] = []

    def add(self, grader: Any, at: KeyPath) -> None:
        kind = grader.get("type") if isinstance(grader, dict) else None
        handler = getattr(self, f"_{kind}", None) if isinstance(kind, str) else None
        if handler is None:
            self.findings.refuse(self.doc.where((*at, "type")), f"grader type {kind!r} has no cobalt equivalent"
                                 + ("; declare its graders one by one (cobalt scores each as its own evaluator)"
                                    if kind == "multi" else "; leave it out, or write it as a python grader"))
            return
        handler(grader, at, str(grader.get("name") or kind))

    def _output_input(self, grader: dict[str, Any], at: KeyPath) -> bool:
        if _OUTPUT.match(str(grader.get("input", ""))):
            return True
        self.findings.refuse(self.doc.where((*at, "input")), f"grades {grader.get('input')!r}, but cobalt grades the "
                             "agent's output; use input {{sample.output_text}}")
        return False

    def _string_check(self, grader: dict[str, Any], at: KeyPath, name: str) -> None:
        if not self._output_input(grader, at):
            return
        reference, operation = str(grader.get("reference", "")), grader.get("operation")
        field = _REFERENCE.match(reference)
        if operation in ("eq", "ne") and field:
            negate = {"negate": True} if operation == "ne" else {}
            self.evaluators.append(EvaluatorSpec(name, "exact-match", {"field": field.group(1), **negate}))
        elif operation in ("like", "ilike") and not field and "{{" not in reference:
            case = {"ignore_case": True} if operation == "ilike" else {}
            self.evaluators.append(EvaluatorSpec(name, "contains", {"value": reference, **case}))
        elif operation in ("eq", "ne", "like", "ilike"):
            self._string_function(name, operation, reference, field.group(1) if field else None, at)
        else:
            self.findings.refuse(self.doc.where((*at, "operation")), f"string_check operation {operation!r} is not "
                                 "one of eq, ne, like, ilike; use one of them")

    def _string_function(self, name: str, operation: str, reference: str, field: str | None, at: KeyPath) -> None:
        function = _name(name)
        wanted = f'str(ctx.item["{field}"])' if field else repr(reference)
        test = {"eq": "output == wanted", "ne": "output != wanted", "like": "wanted in output",
                "ilike": "wanted.lower() in output.lower()"}[operation]
        self.code.append(f'def {function}(ctx: EvalContext) -> bool:\n    """string_check {name!r} '
                         f'({self.doc.where(at)}): {operation} {reference}."""\n'
                         f"    output, wanted = str(ctx.output), {wanted}\n    return {test}")
        self.evaluators.append(EvaluatorSpec(name, "function", fn=function))

    def _text_similarity(self, grader: dict[str, Any], at: KeyPath, name: str) -> None:
        metric = grader.get("evaluation_metric")
        field = _REFERENCE.match(str(grader.get("reference", "")))
        if metric not in _SIMILARITY:
            self.findings.refuse(self.doc.where((*at, "evaluation_metric")), f"text_similarity metric {metric!r} has "
                                 "no cobalt kind (cobalt has fuzzy_match as levenshtein, bleu, cosine as similarity, "
                                 "rouge_1, rouge_2, rouge_l); choose one of them")
            return
        if not self._output_input(grader, at):
            return
        if field is None:
            self.findings.refuse(self.doc.where((*at, "reference")), "a text_similarity reference must be an item "
                                 "field ({{item.x}}); put the reference text in each item")
            return
        kind, options = _SIMILARITY[metric]
        self.evaluators.append(EvaluatorSpec(name, kind, {"field": field.group(1), **options},
                                             threshold=grader.get("pass_threshold")))

    def _score_model(self, grader: dict[str, Any], at: KeyPath, name: str) -> None:
        low, high = (grader.get("range") or [0, 1])[:2]
        prompt = self._messages(grader, at) + (
            f"\n\n(The score above runs from {low} to {high}; answer it on cobalt's 0 to 1 scale, where 0 is "
            f"{low} and 1 is {high}.)" if (low, high) != (0, 1) else "")
        passing = grader.get("pass_threshold")
        threshold = None if passing is None else round((float(passing) - low) / (high - low), 6)
        self.evaluators.append(EvaluatorSpec(name, "llm-judge", {"prompt": prompt, **self._model(grader)},
                                             threshold=threshold))

    def _label_model(self, grader: dict[str, Any], at: KeyPath, name: str) -> None:
        labels, passing = grader.get("labels") or [], grader.get("passing_labels") or []
        prompt = self._messages(grader, at) + (
            f"\n\nChoose one label of: {', '.join(labels)}. Score 1.0 when the label you chose is one of "
            f"{', '.join(passing)}, else 0.0, and name the label in your reason.")
        self.evaluators.append(EvaluatorSpec(name, "llm-judge", {"prompt": prompt, **self._model(grader)},
                                             threshold=0.5))

    def _messages(self, grader: dict[str, Any], at: KeyPath) -> str:
        messages = grader.get("input") or []
        for i, message in enumerate(messages):
            if re.search(r"\{\{\s*sample\.(?!output_text)", message_content(message.get("content"))):
                self.findings.refuse(self.doc.where((*at, "input", i)), "reads a sample field other than "
                                     "output_text, which a cobalt agent's output does not have; grade "
                                     "{{sample.output_text}}")
        return "\n\n".join(f"{m.get('role', 'user')}: {openai_template(message_content(m.get('content')))}"
                             for m in messages)

    @staticmethod
    def _model(grader: dict[str, Any]) -> dict[str, Any]:
        return {"provider": "openai", "model": grader["model"]} if grader.get("model") else {}

    def _python(self, grader: dict[str, Any], at: KeyPath, name: str) -> None:
        source = str(grader.get("source") or "")
        try:
            tree = ast.parse(source)
        except SyntaxError as exc:
            self.findings.error(self.doc.where((*at, "source")), f"is not Python (line {exc.lineno}: {exc.msg}); "
                                "fix the grader's source")
            return
        if not any(isinstance(node, ast.FunctionDef) and node.name == "grade" for node in tree.body):
            self.findings.error(self.doc.where((*at, "source")), "defines no grade(sample, item); define it")
            return
        function = _name(name)
        self.code.append(f"# the python grader {name!r} ({self.doc.where(at)}), as OpenAI ran it\n{source.strip()}"
                         f"\n\n\n_{function}_grade = grade\n\n\n"
                         f"def {function}(ctx: EvalContext) -> float:\n"
                         '    """Its grade(sample, item) of the output."""\n'
                         f'    return float(_{function}_grade({{"output_text": str(ctx.output)}}, ctx.item))')
        self.evaluators.append(EvaluatorSpec(name, "function", fn=function, threshold=grader.get("pass_threshold")))
