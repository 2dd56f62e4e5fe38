"""`cobalt collect` as a user starts it: off loopback it makes and prints a token, refuses a request without
it, stores what the SDK's exporter sends with it, and stops on Ctrl-C saying how many spans it stored."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from production_traces import one_export, run_agent
from slowdown import scaled

from cobalt_lib.store import Store

COBALT = str(Path(sys.executable).parent / "cobalt")


@pytest.mark.slow
def test_collect_off_loopback_prints_its_token_and_stores_what_carries_it(project: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "COBALT_COLLECT_TOKEN"}
    server = subprocess.Popen([COBALT, "collect", "--host", "0.0.0.0", "--port", "0"], cwd=project, env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, stdin=subprocess.DEVNULL)
    try:
        assert server.stderr is not None
        told = server.stderr.readline()
        token = (project / ".cobalt" / "collect-token").read_text().strip()
        assert (project / ".cobalt" / "collect-token").stat().st_mode & 0o777 == 0o600
        assert told.startswith(f"cobalt collect: exporters must send 'Authorization: Bearer {token}'"), told
        found = re.search(r"at (http://\S+)/v1/traces", server.stderr.readline())
        assert found is not None
        url = found[1]
        body, _ = one_export()
        refused = httpx.post(f"{url}/v1/traces", content=body, headers={"Content-Type": "application/x-protobuf"})
        assert refused.status_code == 401
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(OTLPSpanExporter(
            endpoint=f"{url}/v1/traces", headers={"Authorization": f"Bearer {token}"})))
        trace_id = run_agent(provider)
        provider.shutdown()
    finally:
        server.send_signal(signal.SIGINT)
        code = server.wait(timeout=scaled(30))
    assert code == 0
    assert server.stderr.read().strip() == "cobalt collect: 4 spans stored."
    stored = Store(project / ".cobalt" / "cobalt.duckdb").trace_list()
    assert [t["trace_id"] for t in stored] == [trace_id]
