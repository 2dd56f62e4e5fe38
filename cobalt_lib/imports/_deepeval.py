"""DeepEval: a test file's metrics and its goldens dataset (JSON or CSV) as an experiment, read without
running the file (its syntax tree only).

The metrics (`GEval`, `AnswerRelevancyMetric`, `FaithfulnessMetric`, `ContextualPrecisionMetric`,
`ContextualRecallMetric`) become evaluators with their thresholds and judge models. The goldens become the
dataset; `retrieval_context` is cobalt's `contexts`. The test file's own app is code cobalt cannot carry:
the agent replays recorded `actual_output`s, or else asks a model the golden's input (the header says so).
"""

from __future__ import annotations

import ast
import csv
import io
import json
from pathlib import Path
from typing import Any

from ._plan import EvaluatorSpec, ModelSpec, Plan
from ._source import Document, Findings, read_text
from ._writer import slug

#: DeepEval metric classes, as cobalt kinds and the names their scores get.
METRICS = {"GEval": ("g_eval", None), "AnswerRelevancyMetric": ("answer_relevancy", "answer_relevancy"),
           "FaithfulnessMetric": ("faithfulness", "faithfulness"),
           "ContextualPrecisionMetric": ("context_precision", "contextual_precision"),
           "ContextualRecallMetric": ("context_recall", "contextual_recall")}
#: Metric arguments without a counterpart that change nothing cobalt scores (it always gives a reason).
_HARMLESS = {"include_reason", "async_mode", "verbose_mode", "evaluation_params"}
_FIELDS = {"input": "input", "expected_output": "expected_output", "context": "context",
           "retrieval_context": "contexts", "actual_output": "actual_output"}
_LOADERS = {"add_goldens_from_json_file", "add_goldens_from_csv_file", "add_test_cases_from_json_file",
            "add_test_cases_from_csv_file"}
#: The model an agent asks when the test file's app cannot be carried.
STAND_IN = ModelSpec("openai", "gpt-4o-mini")


def read(path: Path, findings: Findings) -> Plan:
    file = path if path.is_file() else _test_file(path)
    text = read_text(file)
    findings.source = file.name
    doc = Document(file, None, {}, file.name)
    try:
        tree = ast.parse(text, filename=file.name)
    except SyntaxError as exc:
        findings.error(f"{file.name}, line {exc.lineno}", f"is not Python ({exc.msg}); fix the test file")
        return Plan("DeepEval", file.name, "imported", [], {}, {})
    reader = _Reader(doc, findings)
    reader.visit(tree)
    if not reader.items:
        findings.error(file.name, "loads no goldens (add_goldens_from_json_file, add_goldens_from_csv_file or "
                                  "Golden(...)); load the dataset from a file beside it")
    if not reader.evaluators:
        findings.error(file.name, "declares none of GEval, AnswerRelevancyMetric, FaithfulnessMetric, "
                                  "ContextualPrecisionMetric, ContextualRecallMetric; declare the metrics it runs")
    replay = "actual_output" if reader.items and all("actual_output" in i for i in reader.items) else None
    plan = Plan("DeepEval", file.name, slug(file.stem.removeprefix("test_")), reader.items,
                {} if replay else {"golden": "{{input}}"}, {} if replay else {STAND_IN.model: STAND_IN},
                reader.evaluators, replay=replay)
    if replay is None:
        app = f" (`{reader.app}`)" if reader.app else ""
        plan.description = (f"DeepEval's test file made actual_output with its own app{app}, which cobalt cannot "
                            f"carry over: this agent asks {STAND_IN.model} the golden's input. Replace it with "
                            "your app.")
        plan.agent_doc = f"A stand-in for the app DeepEval tested: asks {STAND_IN.model} the golden's input."
    return plan


def _test_file(folder: Path) -> Path:
    """The folder's DeepEval test file: a `test_*.py`, else the first Python file importing deepeval."""
    candidates = [*sorted(folder.glob("test_*.py")), *sorted(folder.glob("*.py"))]
    found = next((p for p in candidates if "deepeval" in p.read_text(encoding="utf-8", errors="replace")), None)
    return found or folder / "test_deepeval.py"


class _Reader(ast.NodeVisitor):
    def __init__(self, doc: Document, findings: Findings) -> None:
        self.doc, self.findings = doc, findings
        self.items: list[dict[str, Any]] = []
        self.evaluators: list[EvaluatorSpec] = []
        self.app: str | None = None
        #: What each name was last assigned (`reply` <- `answer_with_sources(golden.input)`).
        self.assigned: dict[str, str] = {}

    def visit_Assign(self, node: ast.Assign) -> None:
        for target in node.targets:
            for name in ast.walk(target):
                if isinstance(name, ast.Name):
                    self.assigned[name.id] = ast.unparse(node.value)
        self.generic_visit(node)

    def where(self, node: ast.AST) -> str:
        return f"{self.doc.shown}, line {getattr(node, 'lineno', '?')}"

    def visit_Call(self, node: ast.Call) -> None:
        name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
        if name in METRICS:
            self._metric(name, node)
        elif name.endswith("Metric"):
            self.findings.refuse(self.where(node), f"{name} has no cobalt kind (cobalt has GEval as g_eval, "
                                 "AnswerRelevancyMetric, FaithfulnessMetric, ContextualPrecisionMetric, "
                                 "ContextualRecallMetric); write it as a GEval with criteria, or leave it out")
        elif name in _LOADERS:
            self._load(name, node)
        elif name == "pull" and isinstance(node.func, ast.Attribute):
            self.findings.refuse(self.where(node), "a dataset pulled from Confident AI is not in the file; save "
                                 "it as JSON (dataset.save_as) and load it with add_goldens_from_json_file")
        elif name == "Golden":
            item = self._golden(node)
            if item is not None:
                self.items.append(item)
        elif name == "LLMTestCase" and self.app is None:
            output = next((k.value for k in node.keywords if k.arg == "actual_output"), None)
            if output is not None:
                self.app = self.assigned.get(output.id, output.id) if isinstance(output, ast.Name) else (
                    ast.unparse(output))
        self.generic_visit(node)

    def _literals(self, node: ast.Call) -> dict[str, Any] | None:
        values: dict[str, Any] = {}
        for keyword in node.keywords:
            try:
                values[str(keyword.arg)] = ast.literal_eval(keyword.value)
            except ValueError:
                if keyword.arg == "evaluation_params":
                    continue
                self.findings.refuse(self.where(keyword.value), f"argument {keyword.arg}= is computed "
                                     f"(`{ast.unparse(keyword.value)}`), and an import reads literals only; write "
                                     "its value out")
                return None
        return values

    def _metric(self, name: str, node: ast.Call) -> None:
        args = self._literals(node)
        if args is None:
            return
        kind, default_name = METRICS[name]
        options: dict[str, Any] = {}
        if name == "GEval":
            options["criteria"] = args.pop("criteria", None) or " ".join(args.get("evaluation_steps") or [])
            if args.get("evaluation_steps"):
                options["steps"] = list(args.pop("evaluation_steps"))
        if isinstance(args.get("model"), str):
            options["model"] = args.pop("model")
        threshold = args.pop("threshold", 0.5)
        if args.pop("strict_mode", False):
            threshold = 1.0  # DeepEval's strict mode scores 0 or 1: only a perfect score passes
        label = str(args.pop("name", default_name or "g_eval"))
        for key in args:
            if key not in _HARMLESS:
                self.findings.refuse(self.where(node), f"{name} argument {key}= has no cobalt equivalent; remove it")
        taken = {e.name for e in self.evaluators}
        label = label if label not in taken else f"{label}_{len(taken) + 1}"
        self.evaluators.append(EvaluatorSpec(label, kind, options, threshold=float(threshold)))

    def _load(self, name: str, node: ast.Call) -> None:
        args = self._literals(node)
        if args is None or not isinstance(args.get("file_path"), str):
            self.findings.error(self.where(node), f"{name} names no file_path literal; give the path as a string")
            return
        path = self.doc.path.parent / args["file_path"]
        keys = {field: args.get(f"{field}_key_name", args.get(f"{field}_col_name", field)) for field in _FIELDS}
        shown = args["file_path"]
        rows = _csv_rows(path, args.get("context_col_delimiter", ";")) if name.endswith("csv_file") \
            else _json_rows(path, shown, self.findings)
        for number, row in rows:
            self.items.append({_FIELDS[field]: row[key] for field, key in keys.items() if row.get(key) is not None})
            if "input" not in self.items[-1]:
                self.findings.error(f"{shown}, entry {number}", f"has no {keys['input']!r}; give each golden an input")

    def _golden(self, node: ast.Call) -> dict[str, Any] | None:
        args = self._literals(node)
        if args is None:
            return None
        return {_FIELDS[k]: v for k, v in args.items() if k in _FIELDS}


def _json_rows(path: Path, shown: str, findings: Findings) -> list[tuple[int, dict[str, Any]]]:
    try:
        data = json.loads(read_text(path))
    except json.JSONDecodeError as exc:
        findings.error(f"{shown}, line {exc.lineno}", f"is not valid JSON ({exc.msg}); fix the file")
        return []
    rows = data if isinstance(data, list) else []
    return [(i, row) for i, row in enumerate(rows, 1) if isinstance(row, dict)]


def _csv_rows(path: Path, delimiter: str) -> list[tuple[int, dict[str, Any]]]:
    rows = []
    for number, row in enumerate(csv.DictReader(io.StringIO(read_text(path))), 2):
        for key in ("context", "retrieval_context"):
            if row.get(key):
                row[key] = row[key].split(delimiter)  # DeepEval's list columns
        rows.append((number, {k: v for k, v in row.items() if v not in (None, "")}))
    return rows
