"""Renderings of one run for other tools: CSV, Markdown, JSON (the results file) and JUnit XML."""

from __future__ import annotations

import csv
import io
import json
import re
import xml.etree.ElementTree as ET
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .._numbers import UNKNOWN, duration, raw, score, threshold
from ..results._direction import lower_is_better
from ..results._report import Evaluation, ExperimentReport, ItemResult
from ._every_eval_ever import to_every_eval_ever
from ._inspect_log import to_inspect_log
from ._markdown import report_markdown

CSV_COLUMNS = ("index", "run_index", "input", "output", "expected_output", "status", "evaluator", "score", "reason",
               "latency_ms")
_NOT_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def _text(value: Any) -> str:
    if value is None:
        return ""
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)


def expected_output(item: ItemResult) -> Any:
    """The item's `expected_output` field, None when it has none."""
    return item.item.get("expected_output")


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
        base = [item.index, item.run_index, _text(item.input), _text(item.output), _text(expected_output(item)),
                item.status]
        latency = raw(item.latency_ms, 3)
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
        return UNKNOWN
    return "ERR" if ev.status != "ok" or ev.score is None else score(ev.score)


def to_markdown(report: ExperimentReport) -> str:
    """The run summary (as in GitHub step summaries) plus a table of every item."""
    names = evaluator_names(report)
    header = ["#", "run", "status", "input", "output", "expected output", *names, "latency"]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for item in report.items:
        latency = duration(item.latency_ms)
        output = item.output if item.status == "ok" else item.error
        cells = [str(item.index), str(item.run_index), item.status, _md_cell(item.input), _md_cell(output),
                 _md_cell(expected_output(item)), *(_md_score(item.evaluations.get(n)) for n in names), latency]
        lines.append("| " + " | ".join(cells) + " |")
    return (report_markdown(report) + _grading_markdown(report) + _per_item_markdown(report, names)
            + "\n#### Items\n\n" + "\n".join(lines) + "\n")


def _grading_markdown(report: ExperimentReport) -> str:
    """A grading run (`cobalt grade`): its calibration tables."""
    from ..grading._render_calibration import calibration_markdown
    from ..grading.calibration._models import Calibration
    from ..grading.calibration._stored import grading_config

    grading = grading_config(report.config)
    return "" if grading is None else "\n" + calibration_markdown(Calibration.model_validate(grading["calibration"]))


def _per_item_markdown(report: ExperimentReport, names: list[str]) -> str:
    """With runs > 1: each item's mean ± spread and passes per evaluator, across its runs."""
    if not report.summary.per_item:
        return ""
    header = ["#", "runs", *names]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for spread in report.summary.per_item:
        cells = [str(spread.index), str(spread.runs)]
        for name in names:
            st = spread.evaluators.get(name)
            if st is None or st.avg is None:
                cells.append(UNKNOWN)
                continue
            passes = "" if st.pass_rate is None else f" · {round(st.pass_rate * spread.runs)}/{spread.runs} passed"
            cells.append(f"{score(st.avg)} ± {score(st.stddev or 0)}{passes}")
        lines.append("| " + " | ".join(cells) + " |")
    return "\n#### Per item across runs (mean ± stddev)\n\n" + "\n".join(lines) + "\n"


def to_json(report: ExperimentReport) -> str:
    """The report's JSON, exactly as the results file holds it."""
    return report.model_dump_json(indent=2) + "\n"


def _case_outcome(item: ItemResult, ev: Evaluation | None, name: str) -> tuple[str, str] | None:
    """(`failure` | `error`, message) when the item did not pass this evaluator, None when it did.

    An item is judged by the evaluator's own pass mark (`passed`), never by a gate: gates apply to
    run statistics such as the mean, and get their own test cases (`_gate_suite`).
    """
    if item.status != "ok":
        return "failure", f"the agent call {item.status}: {item.error or 'no output'}"
    if ev is None:
        return "error", "the evaluator did not score this item"
    if ev.status != "ok" or ev.score is None:
        return "error", f"eval-error: {ev.error or 'no score'}"
    if ev.passed is False:
        side = "above" if lower_is_better(name) else "below"  # `passed` was set in the evaluator's direction
        return "failure", f"score {score(ev.score)} is {side} the evaluator's pass mark" + (
            f": {ev.reason}" if ev.reason else "")
    return None


def _errors_failed_the_run(report: ExperimentReport) -> bool:
    """The run failed its error-rate gate (`[ci] max_error_rate` or the experiment's, named `error rate <= ...`):
    then its errored items are what failed it."""
    return any(not a.passed and (a.gate or a.name).startswith("error rate") for a in report.assertions)


def _reported_outcome(item: ItemResult, ev: Evaluation | None, name: str,
                      errors_failed: bool) -> tuple[str, str] | None:
    """The default: an item case fails only when the item made the run fail, so that JUnit's failure
    count is 0 exactly when the run passed (exit 0). A low score never fails a run by itself (the gates
    on the statistics do), so it is reported, not failed; an errored item (agent call failed or timed
    out, eval-error) fails only when an error-rate gate failed the run."""
    outcome = _case_outcome(item, ev, name)
    if outcome is None or not errors_failed or not (item.status != "ok" or ev is None or ev.status != "ok"):
        return None
    return "failure", outcome[1]


def pass_marks(report: ExperimentReport) -> dict[str, Any]:
    """Each evaluator's pass mark, as the run's config recorded it."""
    return {e["name"]: e.get("threshold") for e in report.config.get("evaluators") or []
            if isinstance(e, dict) and isinstance(e.get("name"), str)}


def _case_details(item: ItemResult, ev: Evaluation | None, pass_mark: Any) -> tuple[dict[str, str], str]:
    """A test case's <properties> (status, score, pass mark, passed) and <system-out> (the reason or error)."""
    status = item.status if item.status != "ok" or ev is None else ev.status
    properties: dict[str, str] = {"status": status}
    if ev is not None and ev.score is not None:
        properties["score"] = raw(ev.score, 6, trim=True)
    if pass_mark is not None:
        properties["threshold"] = threshold(pass_mark)
    if ev is not None and ev.passed is not None:
        properties["passed"] = "true" if ev.passed else "false"
    if item.status != "ok":
        text = f"the agent call {item.status}: {item.error or 'no output'}"
    elif ev is None:
        text = "the evaluator did not score this item"
    else:
        text = ev.reason or ev.error or ""
    return properties, text


def _xml(text: str) -> str:
    """`text` without the characters XML 1.0 cannot carry (control codes, lone surrogates)."""
    return _NOT_XML.sub("?", text)


def _add_case(suite: ET.Element, classname: str, name: str, seconds: float,
              outcome: tuple[str, str] | None) -> ET.Element:
    """One <testcase>, with a <failure> or <error> child when `outcome` says it failed."""
    case = ET.SubElement(suite, "testcase", classname=_xml(classname), name=_xml(name), time=raw(seconds, 3))
    if outcome is not None:
        kind, message = outcome[0], _xml(outcome[1])
        ET.SubElement(case, kind, message=message, type=kind).text = message
    return case


def _add_details(case: ET.Element, properties: dict[str, str], text: str) -> None:
    """<properties> first, then <system-out>, after any <failure> (the order JUnit's schema allows)."""
    props = ET.Element("properties")
    for key, value in properties.items():
        ET.SubElement(props, "property", name=f"cobalt.{key}", value=_xml(value))
    case.insert(0, props)
    if text:
        ET.SubElement(case, "system-out").text = _xml(text)


def _item_suite(report: ExperimentReport, items_fail: bool) -> ET.Element:
    """One case per item x evaluator; `items_fail`: every item below its pass mark or errored fails."""
    suite = ET.Element("testsuite", name=_xml(report.name), timestamp=report.timestamp,
                       time=raw(report.summary.total_duration_ms / 1000, 3))
    errors_failed, marks = _errors_failed_the_run(report), pass_marks(report)
    for item in report.items:
        for name in evaluator_names(report):
            ev = item.evaluations.get(name)
            label = f"item {item.index} / {name}" + (f" (run {item.run_index})" if item.run_index else "")
            outcome = _case_outcome(item, ev, name) if items_fail else _reported_outcome(item, ev, name, errors_failed)
            case = _add_case(suite, report.name, label, (item.latency_ms or 0) / 1000, outcome)
            _add_details(case, *_case_details(item, ev, marks.get(name)))
    return suite


def _gate_suite(report: ExperimentReport) -> ET.Element:
    """One test case per quality gate, failed exactly when the run's gate failed (what exits 1), and an
    error case when the run did not complete."""
    name = f"{report.name} / gates"
    suite = ET.Element("testsuite", name=_xml(name), timestamp=report.timestamp, time="0.000")
    if report.status != "completed":  # an unfinished run never passes, whatever its gates said
        _add_case(suite, name, "run completed", 0.0, ("error", f"run {report.id} is {report.status}: only its "
                                                      "finished items were judged"))
    for gate in report.assertions:
        _add_case(suite, name, gate.name, 0.0, None if gate.passed else ("failure", gate.message or "gate failed"))
    return suite


def _count(suite: ET.Element) -> None:
    """Set tests, failures and errors on a suite from its cases."""
    cases = list(suite.iter("testcase"))
    suite.set("tests", str(len(cases)))
    suite.set("failures", str(sum(c.find("failure") is not None for c in cases)))
    suite.set("errors", str(sum(c.find("error") is not None for c in cases)))


def to_junit(report: ExperimentReport, *, items_fail: bool = False) -> str:
    """A testsuite of item x evaluator cases and, when the run has gates, a testsuite `<name> / gates`
    with one case per gate, failed exactly when the gate failed.

    By default failures and errors are 0 exactly when the run passed: item cases carry their score,
    pass mark and reason, and fail only when the item made the run fail (`_reported_outcome`).
    `items_fail=True` fails every item case below its pass mark or errored, whatever the gates said.
    """
    suites = ET.Element("testsuites", name="cobalt")
    suites.append(_item_suite(report, items_fail))
    if report.assertions or report.status != "completed":
        suites.append(_gate_suite(report))
    for suite in suites:
        _count(suite)
    for key in ("tests", "failures", "errors"):
        suites.set(key, str(sum(int(suite.get(key, "0")) for suite in suites)))
    ET.indent(suites)
    return '<?xml version="1.0" encoding="utf-8"?>\n' + ET.tostring(suites, encoding="unicode") + "\n"


def to_baseline(report: ExperimentReport) -> str:
    """The run's evaluator means as a `no_regression` baseline file."""
    return report.baseline_text()


RENDERERS: dict[str, Callable[[ExperimentReport], str]] = {
    "csv": to_csv, "markdown": to_markdown, "json": to_json, "junit": to_junit, "baseline": to_baseline,
    "every-eval-ever": to_every_eval_ever, "inspect": to_inspect_log,
}
#: The format a file name implies when `--format` is not given (`-o results.xml` is JUnit).
FORMATS_BY_SUFFIX = {".csv": "csv", ".md": "markdown", ".markdown": "markdown", ".json": "json", ".xml": "junit"}


def format_for(path: Path) -> str | None:
    """The export format `path`'s extension implies, None when it implies none."""
    return FORMATS_BY_SUFFIX.get(path.suffix.lower())
