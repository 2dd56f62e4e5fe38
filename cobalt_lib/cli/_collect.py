"""`cobalt collect` (the OTLP/HTTP trace receiver) and `cobalt traces import|list|show|add` (docs/monitors.md)."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from ..render import money
from ._app import Group, _App, app
from ._common import project_config

if TYPE_CHECKING:
    from ..monitor import ProductionTrace

#: The variable holding `cobalt collect`'s token, and its file under the output directory otherwise.
TOKEN_VARIABLE = "COBALT_COLLECT_TOKEN"
TOKEN_FILE = "collect-token"


@app.command()
def collect(
    port: Annotated[int, typer.Option("--port", "-p", min=0, max=65535, help="Port (0: any free port).")] = 4318,
    host: Annotated[str, typer.Option("--host", help="Address; anything but loopback needs a bearer token: "
                                      f"${TOKEN_VARIABLE}, else one made and printed at the first start.")]
    = "127.0.0.1",
) -> None:
    """Receive OpenTelemetry traces over OTLP/HTTP (POST /v1/traces, protobuf or JSON, gzip) into the store.

    Example: `cobalt collect`, then `OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:4318` in the agent's process.
    """
    from ..mcp._http_guard import host_names
    from ..monitor import Collector, Ingest, needs_token, serve

    config = project_config()
    token = _token(config.output_path) if needs_token(host) else None
    collector = Collector(Ingest.for_config(config), host, port, token=token, hosts=host_names(host),
                          max_body_bytes=config.monitor.max_body_bytes)
    serve(collector)


def start_collector(config: Any, port: int = 4318) -> Any:
    """`cobalt serve`'s receiver on 127.0.0.1:`port`, in a thread; None (said on stderr) when the port is
    taken (a `cobalt collect` or an OpenTelemetry Collector already listens there)."""
    from ..monitor import Collector, Ingest

    try:
        collector = Collector(Ingest.for_config(config), "127.0.0.1", port,
                              max_body_bytes=config.monitor.max_body_bytes)
    except OSError as exc:
        print(f"cobalt: not receiving OTLP traces: 127.0.0.1:{port} is taken ({exc.strerror}); `cobalt collect "
              "--port N` receives them elsewhere.", file=sys.stderr)
        return None
    collector.start()
    return collector


def _token(directory: Path) -> str:
    from ..ops._session import check_secret, owner_only_secret

    given = os.environ.get(TOKEN_VARIABLE, "")
    if given:
        check_secret(given, TOKEN_VARIABLE, "unset it and the token file is used")
        return given
    token, made = owner_only_secret(directory / TOKEN_FILE, TOKEN_VARIABLE)
    if made:
        print(f"cobalt collect: exporters must send 'Authorization: Bearer {token}' (kept in "
              f"{directory / TOKEN_FILE}, readable by you alone; shown this once)", file=sys.stderr)
    else:
        print(f"cobalt collect: exporters must send 'Authorization: Bearer <the token in {directory / TOKEN_FILE}>'",
              file=sys.stderr)
    return token


traces = _App(name="traces", cls=Group, no_args_is_help=True, rich_markup_mode="markdown",
              help="Production traces: import the Collector's files, list and read them, add one to a dataset.")
app.add_typer(traces, name="traces")


@traces.command("import")
def import_(file: Annotated[Path, typer.Argument(help="A file the OpenTelemetry Collector's file exporter "
                                                 "wrote (JSON lines; .gz too).", exists=True, dir_okay=False)]) -> None:
    """Store the spans of an OpenTelemetry Collector file-exporter file."""
    from ..monitor import Ingest

    stored = Ingest.for_config(project_config()).import_file(file)
    print(f"Stored {stored:,} spans from {file}.")


@traces.command("list")
def list_(
    service: Annotated[str | None, typer.Option("--service", help="Only this service.name's traces.")] = None,
    span: Annotated[str | None, typer.Option("--span", help="Only traces holding a span of this name.")] = None,
    limit: Annotated[int, typer.Option("--limit", "-n", min=1, help="At most this many, newest first.")] = 20,
) -> None:
    """The stored production traces, newest first, with their input and output in short."""
    from ..monitor import read_trace
    from ..store import Store

    config = project_config()
    store = Store.for_config(config)
    listed = store.trace_list(service=service, span=span, limit=limit)
    spans = store.trace_spans_of([t["trace_id"] for t in listed])
    if not listed:
        print("No production traces stored yet; see docs/monitors.md to send some.")
    for row in listed:
        trace = read_trace(row["trace_id"], spans.get(row["trace_id"], []), service=row["service"])
        print(f"{row['trace_id']}  {row['service'] or '-':<16} {row['spans']:>4} spans  "
              f"{_short(trace.input)!s:<40}  -> {_short(trace.output)}")


@traces.command("show")
def show(trace_id: Annotated[str, typer.Argument(help="The trace id (hex).")],
         as_json: Annotated[bool, typer.Option("--json", help="As JSON.")] = False) -> None:
    """One production trace: its input, output, conversation, tool calls, model, tokens and cost."""
    trace = _trace(trace_id)
    if as_json:
        print(json.dumps(trace_json(trace), ensure_ascii=False, indent=2, default=str))
        return
    print(f"trace {trace.trace_id}  service {trace.service or '-'}  {len(trace.spans)} spans")
    print(f"input:  {trace.input}")
    print(f"output: {trace.output}")
    for call in trace.tool_calls:
        print(f"tool:   {call.name}({json.dumps(call.arguments, default=str)}) -> {_short(call.result)}")
    for key, value in trace.usage.items():
        print(f"{key}: {value}")


@traces.command("add")
def add(trace_id: Annotated[str, typer.Argument(help="The trace id (hex).")],
        dataset: Annotated[str, typer.Option("--to", help="The JSONL dataset file to append the item to, or the "
                                             "name of a stored dataset to add it to as a new version.")],
        expected: Annotated[str | None, typer.Option("--expected", help="The item's expected output.")] = None) -> None:
    """Add a production trace to a dataset as an item (its input, or its conversation), so the next
    experiment tests it."""
    from ..monitor import add_trace

    added = add_trace(project_config(), trace_id, dataset, expected=expected)
    if added.version is None or added.added:
        print(f"Added item {added.item['id']} to {added.where}.")
    else:
        print(f"Item {added.item['id']} is already in {added.where}; no new version.")


def _trace(trace_id: str) -> ProductionTrace:
    from ..monitor import load_trace

    return load_trace(project_config(), trace_id)


def trace_json(trace: ProductionTrace) -> dict[str, Any]:
    return {"trace_id": trace.trace_id, "service": trace.service, "input": trace.input, "output": trace.output,
            "conversation": trace.conversation, "usage": trace.usage, "failed": trace.failed,
            "tool_calls": [{"name": c.name, "arguments": c.arguments, "result": c.result} for c in trace.tool_calls]}


def _short(value: Any, width: int = 60) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    text = " ".join(text.split())
    return text if len(text) <= width else text[:width - 1] + "…"


monitors = _App(name="monitor", cls=Group, no_args_is_help=True, rich_markup_mode="markdown",
                help="Score a monitor's windows of production traces and check them for drift.")
app.add_typer(monitors, name="monitor")


@monitors.command("score")
def score(name: Annotated[str, typer.Argument(help="The monitor's name, as `monitor(...)` declares it.")],
          windows: Annotated[list[str], typer.Argument(help="Windows: UTC days YYYY-MM-DD (hours YYYY-MM-DDTHH).")],
          alert: Annotated[bool, typer.Option("--alert/--no-alert", help="Send drift ERRORs to the webhooks.")]
          = True) -> None:
    """Score each window as a run (again: it replaces the window's run), then check it for drift."""
    from ..monitor import drift_checks, score_window, send_alerts

    config = project_config()
    watch = _monitor(config, name)
    for key in windows:
        result = score_window(watch, key, config)
        print(f"{key}: {result.status}, {result.traces} traces, judge {money(result.spent_usd)}, run {result.run_id}"
              + (f"\n  {result.note}" if result.note else ""))
        checks = drift_checks(watch, key, config)
        for check in checks:
            print(f"  {'ok' if check.passed else check.severity} {check.evaluator}: {check.description}")
        for warning in send_alerts(checks, list(config.webhooks)) if alert else []:
            print(f"  {warning}", file=sys.stderr)


def _monitor(config: Any, name: str) -> Any:
    from .._errors import ConfigError
    from ..experiments import load_experiments
    from ..monitor import MONITORS

    load_experiments(config)
    if name not in MONITORS:
        known = ", ".join(sorted(MONITORS)) or "none"
        raise ConfigError(f"No monitor {name!r} is declared in the project's experiment files (declared: {known}).")
    return MONITORS[name]
