"""Renderings of one run for other tools: CSV, Markdown, JSON (the results file) and JUnit XML."""

from __future__ import annotations

import csv
import io
import json
import re
import xml.etree.ElementTree as ET
from collections.abc import Callable
from typing import Any

from ._markdown import report_markdown
from ._report import Evaluation, ExperimentReport, ItemResult, split_path

CSV_COLUMNS = ("index", "run_index", "input", "output", "status", "evaluator", "score", "reason", "latency_ms")
_GATE_NAME = re.compile(r"^(?P<path>\S+) >= (?P<value>\S+)$")
_NOT_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def _text(value: Any) -> str:
    if value is None:
        return ""
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)


def evaluator_names(report: ExperimentReport) -> list[str]:
    """Every evaluator of the run, in declaration order."""
    declared = [e.get("name") for e in report.config.get("evaluators") or [] if isinstance(e, dict)]
    names = [*(n for n in declared if isinstance(n, str)), *report.summary.scores]
    names += [n for item in report.items for n in item.evaluations]
    return list(dict.fromkeys(names))


def to_csv(report: ExperimentReport) -> str:
    """One row per item x evaluator; an item without evaluations (it failed) gets one row."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(CSV_COLUMNS)
    for item in report.items:
        base = [item.index, item.run_index, _text(item.input), _text(item.output), item.status]
        latency = "" if item.latency_ms is None else f"{item.latency_ms:.3f}"
        if not item.evaluations:
            writer.writerow([*base, "", "", item.error or "", latency])
        for name, ev in item.evaluations.items():
            score = "" if ev.score is None else repr(ev.score)
            writer.writerow([*base, name, score, ev.reason or ev.error or "", latency])
    return buffer.getvalue()


def _md_cell(value: Any, limit: int = 80) -> str:
    text = " ".join(_text(value).split()).replace("|", "\\|")
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _md_score(ev: Evaluation | None) -> str:
    if ev is None:
        return "–"
    return "ERR" if ev.status != "ok" or ev.score is None else f"{ev.score:.3f}"


def to_markdown(report: ExperimentReport) -> str:
    """The run summary (as in GitHub step summaries) plus a table of every item."""
    names = evaluator_names(report)
    header = ["#", "run", "status", "input", "output", *names, "latency (ms)"]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for item in report.items:
        latency = "–" if item.latency_ms is None else f"{item.latency_ms:.0f}"
        output = item.output if item.status == "ok" else item.error
        cells = [str(item.index), str(item.run_index), item.status, _md_cell(item.input), _md_cell(output),
                 *(_md_score(item.evaluations.get(n)) for n in names), latency]
        lines.append("| " + " | ".join(cells) + " |")
    return report_markdown(report) + "\n#### Items\n\n" + "\n".join(lines) + "\n"


def to_json(report: ExperimentReport) -> str:
    """The report's JSON, exactly as the results file holds it."""
    return report.model_dump_json(indent=2) + "\n"


def gate_values(report: ExperimentReport) -> dict[str, float]:
    """Per evaluator, the strictest `threshold` gate (direction min) on its mean."""
    gates: dict[str, float] = {}
    names = set(evaluator_names(report))

    def add(path: Any, value: Any) -> None:
        if not isinstance(path, str) or not isinstance(value, int | float):
            return
        name, stat = split_path(path)
        if name in names and stat in ("mean", "avg"):
            gates[name] = max(float(value), gates.get(name, float("-inf")))

    for entry in report.config.get("assertions") or []:
        if isinstance(entry, dict) and entry.get("type") == "threshold" and entry.get("direction") == "min":
            add(entry.get("path"), entry.get("value"))
    for verdict in report.assertions:  # reports without the config entries (older runs)
        match = _GATE_NAME.match(verdict.name)
        if match and verdict.expected is not None:
            add(match["path"], verdict.expected)
    return gates


def _case_outcome(item: ItemResult, ev: Evaluation | None, gate: float | None) -> tuple[str, str] | None:
    """(`failure` | `error`, message) for a failed test case, None when it passed."""
    if item.status != "ok":
        return "failure", f"the agent call {item.status}: {item.error or 'no output'}"
    if ev is None:
        return "error", "the evaluator did not score this item"
    if ev.status != "ok" or ev.score is None:
        return "error", f"eval-error: {ev.error or 'no score'}"
    if gate is not None and ev.score < gate:
        return "failure", f"score {ev.score:.4g} is below the gate {gate:g}" + (f": {ev.reason}" if ev.reason else "")
    if gate is None and ev.passed is False:
        return "failure", f"score {ev.score:.4g} is below the evaluator's pass mark" + (
            f": {ev.reason}" if ev.reason else "")
    return None


def _xml(text: str) -> str:
    """`text` without the characters XML 1.0 cannot carry (control codes, lone surrogates)."""
    return _NOT_XML.sub("?", text)


def to_junit(report: ExperimentReport) -> str:
    """One <testcase> per item and evaluator; failed below the gate (or pass mark), <error> on eval-error."""
    names = evaluator_names(report)
    gates = gate_values(report)
    suites = ET.Element("testsuites", name="cobalt")
    suite = ET.SubElement(suites, "testsuite", name=_xml(report.name), timestamp=report.timestamp,
                          time=f"{report.summary.total_duration_ms / 1000:.3f}")
    counts = {"tests": 0, "failure": 0, "error": 0}
    for item in report.items:
        for name in names:
            label = f"item {item.index} / {name}" + (f" (run {item.run_index})" if item.run_index else "")
            case = ET.SubElement(suite, "testcase", classname=_xml(report.name), name=_xml(label),
                                 time=f"{(item.latency_ms or 0) / 1000:.3f}")
            counts["tests"] += 1
            outcome = _case_outcome(item, item.evaluations.get(name), gates.get(name))
            if outcome is not None:
                kind, message = outcome[0], _xml(outcome[1])
                counts[kind] += 1
                ET.SubElement(case, kind, message=message, type=kind).text = message
    suite.set("tests", str(counts["tests"]))
    suite.set("failures", str(counts["failure"]))
    suite.set("errors", str(counts["error"]))
    for key in ("tests", "failures", "errors"):
        suites.set(key, suite.get(key, "0"))
    ET.indent(suites)
    return '<?xml version="1.0" encoding="utf-8"?>\n' + ET.tostring(suites, encoding="unicode") + "\n"


RENDERERS: dict[str, Callable[[ExperimentReport], str]] = {
    "csv": to_csv, "markdown": to_markdown, "json": to_json, "junit": to_junit,
}
