"""`cobalt show RUN [ITEM]`: one run's items in the terminal, or one item in full."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich import box
from rich.table import Table
from rich.text import Text

from .._numbers import UNKNOWN, duration, score, threshold
from ._app import app
from ._common import console, print_json, project_config, warn

if TYPE_CHECKING:
    from ..ops._show import ShownRun
    from ..results._report import Evaluation, ItemResult


def _value(value: Any) -> str:
    """A string as it is, None as `(none)`, anything else as indented JSON."""
    if value is None:
        return "(none)"
    return value if isinstance(value, str) else json.dumps(value, indent=2, ensure_ascii=False, default=str)


def _block(label: str, value: Any, indent: str = "") -> list[str]:
    """`label:` then the value's lines, indented under it."""
    return [f"{indent}{label}:", *(f"{indent}  {line}" for line in _value(value).splitlines() or [""])]


def _short(value: Any, limit: int = 60) -> str:
    text = " ".join(_value(value).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _score(ev: Evaluation | None) -> str:
    """`0.900`, `0.400 ✗` below the pass mark, `ERR` for an eval-error, `-` when not scored."""
    if ev is None:
        return UNKNOWN
    if ev.status != "ok" or ev.score is None:
        return "ERR"
    return score(ev.score) + (" ✗" if ev.passed is False else "")


def _items_table(shown: ShownRun) -> Table:
    """One row per item (per repeat: `3:1` is item 3's run index 1), flaky items marked `2 of 3 passed`."""
    from ..conversations import transcript_summary
    from ..results._repeats import item_label

    table = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False)
    columns = ["#", "status", *shown.evaluators, *(["repeats"] if shown.flaky else []), "output"]
    for column in columns:
        table.add_column(column, justify="left" if column in ("status", "output", "repeats") else "right",
                         overflow="ellipsis", no_wrap=column in ("output", "repeats"))
    for item in shown.items:
        output = (transcript_summary(item) or item.output) if item.status == "ok" else \
            (item.error or "").split("\n")[0]
        flaky = [shown.flaky.get(item.index, "")] if shown.flaky else []
        table.add_row(item_label(item.index, item.run_index, shown.repeats), item.status,
                      *(_score(item.evaluations.get(name)) for name in shown.evaluators), *flaky,
                      Text(_short(output)))
    return table


def _flaky_line(shown: ShownRun) -> str:
    """`flaky (passed in some repeats, not all): item 3 (2 of 3 passed), item 7 (1 of 3 passed)`."""
    listed = [f"item {index} ({text})" for index, text in shown.flaky.items()]
    return "flaky (passed in some repeats, not all): " + ", ".join(listed[:20]) + (
        f" and {len(listed) - 20} more" if len(listed) > 20 else "")


def _evaluation_lines(name: str, ev: Evaluation, pass_mark: Any) -> list[str]:
    """`exact: 0 FAIL (pass mark 0.5)`, then its reason, error and raw judge answer."""
    shown = "eval-error" if ev.status != "ok" else score(ev.score) if ev.score is not None else "no score"
    parts = [shown, {True: "pass", False: "FAIL", None: ""}[ev.passed],
             "" if pass_mark is None else f"(pass mark {threshold(pass_mark)})"]
    lines = [f"  {name}: " + " ".join(p for p in parts if p)]
    for label, text in (("reason", ev.reason), ("error", ev.error), ("raw judge answer", ev.raw_response)):
        if text:
            lines += _block(label, text, "    ")
    return lines


def _item_text(shown: ShownRun, item: ItemResult) -> str:
    """Everything about one item (x run): input, expected and actual output, every evaluation, the rest."""
    from ..conversations import transcript_lines
    from ..results._repeats import item_label

    latency = duration(item.latency_ms)
    flaky = f" (flaky: {shown.flaky[item.index]})" if item.index in shown.flaky else ""
    lines = [f"item {item_label(item.index, item.run_index, shown.repeats)}{flaky}: {item.status}, {latency}"]
    transcript = transcript_lines(item)  # a conversation: its turns, each with its scores, for its output
    for label, value in (("input", item.input), ("expected output", item.item.get("expected_output")),
                         *([] if transcript else [("output", item.output)])):
        lines += _block(label, value)
    lines += transcript or []
    lines.append("evaluations:" if item.evaluations else "evaluations: none")
    for name, ev in item.evaluations.items():
        lines += _evaluation_lines(name, ev, shown.pass_marks.get(name))
    metadata = {k: v for k, v in item.metadata.items() if not (transcript and k == "conversation")}
    for label, value in (("metadata", metadata), ("error", item.error), ("traceback", item.traceback)):
        if value:
            lines += _block(label, value)
    return "\n".join(lines)


@app.command()
def show(
    run: Annotated[str, typer.Argument(metavar="RUN", help="Run id, unique prefix, `latest` or `previous`.")],
    item: Annotated[str | None, typer.Argument(
        metavar="ITEM", help="An item index (every run of it), or INDEX:RUN_INDEX for one run of it.")] = None,
    experiment: Annotated[str | None, typer.Option(
        "--experiment", "-e", metavar="NAME", help="Resolve latest/previous within this experiment.")] = None,
    failures: Annotated[bool, typer.Option(
        "--failures", help="Only failed, errored or below-pass-mark items.")] = False,
    json_output: Annotated[bool, typer.Option("--json", help="Print the run and its item records as JSON.")
                           ] = False,
    trace: Annotated[bool, typer.Option(
        "--trace", help="With ITEM: the spans its agent call emitted, as a tree with timings, model calls "
                        "(messages, tokens) and tool calls (arguments, results).")] = False,
    identity: Annotated[bool, typer.Option(
        "--identity", help="Print what the run measured with instead of its items: dataset hash and size, each "
        "evaluator's kind, prompt hash, judge model and options, the agent's source and commit, cobalt's "
        "version.")] = False,
) -> None:
    """Read one run's items: a table of them, or everything about ITEM.

    Example: `cobalt show latest --failures`; `cobalt show latest 3`; `cobalt show latest 3 --trace`;
    `cobalt show latest --identity`
    """
    from ..ops._show import show_run

    shown = show_run(project_config(), run, item, experiment=experiment, failures=failures, trace=trace)
    warn(shown.warnings)
    if json_output:
        print_json(shown.model_dump(mode="json", exclude={"warnings"}))
        return
    out = console()
    verdict = "passed" if shown.passed else "FAILED"
    n = len(shown.items)
    scope = ("failed " if failures else "") + ("item" if n == 1 else "items")
    out.print(Text(f"run {shown.run_id} ({shown.experiment}, {shown.status}, {verdict}): {n} {scope}"))
    if identity:
        from ..results._evaluation_identity import identity_lines

        out.print(Text("measured with:\n" + "\n".join(f"  {line}" for line in identity_lines(shown.identity))))
        return
    if item is None:
        if shown.items:
            out.print(_items_table(shown))
        if shown.flaky:
            out.print(Text(_flaky_line(shown), style="yellow"))
        return
    for record in shown.items:
        out.print(Text("\n" + _item_text(shown, record)))
        if trace:
            from ..traces._text import trace_lines

            out.print(Text("\n".join(trace_lines(shown.traces.get(f"{record.index}:{record.run_index}", [])))))
