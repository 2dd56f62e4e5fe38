"""Whose tracer provider collects: a process whose user set their own keeps it (and their exporter still gets
every span) with cobalt's processor added beside; a provider that is not the SDK's is said once. Each in a fresh
Python process, as OpenTelemetry allows one global provider per process."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from traced_agent import per_city_replies

HERE = Path(__file__).resolve().parent

USERS_OWN = '''
import json, sys
sys.path.insert(0, {here!r})
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from traced_agent import sync_agent
from cobalt_lib import Config, Dataset, Store, experiment

exported = InMemorySpanExporter()
mine = TracerProvider()
mine.add_span_processor(SimpleSpanProcessor(exported))
trace.set_tracer_provider(mine)
config = Config(root={root!r})
report = experiment("own", Dataset([{{"input": "weather in Paris"}}, {{"input": "weather in Oslo"}}]),
                    sync_agent({url!r}), concurrency=2).run(config=config)
stored = Store.for_config(config).spans_of(report.id)
print(json.dumps({{"same_provider": trace.get_tracer_provider() is mine,
                  "exported": sorted(s.name for s in exported.get_finished_spans()),
                  "stored": {{str(k): len(v) for k, v in stored.items()}}}}))
'''

FOREIGN = '''
import json
from opentelemetry import trace
from cobalt_lib import Config, Dataset, Store, experiment

class Foreign(trace.NoOpTracerProvider):
    pass

trace.set_tracer_provider(Foreign())
config = Config(root={root!r})
for name in ("a", "b"):
    report = experiment(name, Dataset([{{"input": "q"}}]), lambda ctx: "a").run(config=config)
print(json.dumps({{"stored": len(Store.for_config(config).spans_of(report.id)), "status": report.status}}))
'''


def python(script: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120,
                          stdin=subprocess.DEVNULL)


@pytest.mark.slow
def test_the_users_own_provider_is_kept_and_still_exports_every_span(tmp_path: Path, llm: Any) -> None:
    llm.respond = per_city_replies
    done = python(USERS_OWN.format(here=str(HERE), root=str(tmp_path), url=llm.openai_url))
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout.splitlines()[-1])
    assert seen["same_provider"] is True
    assert seen["exported"] == sorted(["invoke_agent weather", "chat gpt-4o-mini", "execute_tool get_weather",
                                       "chat gpt-4o-mini"] * 2)
    assert seen["stored"] == {"(0, 0)": 4, "(1, 0)": 4}


@pytest.mark.slow
def test_a_provider_that_is_not_the_sdks_is_said_once_and_the_run_goes_on(tmp_path: Path) -> None:
    done = python(FOREIGN.format(root=str(tmp_path)))
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout.splitlines()[-1]) == {"stored": 0, "status": "completed"}
    told = [line for line in done.stderr.splitlines() if "tracer provider" in line]
    assert told == ["cobalt: the process's OpenTelemetry tracer provider is a Foreign, not the OpenTelemetry SDK's "
                    "TracerProvider, so cobalt cannot collect the agent's spans."]


UNTRACED = '''
import json, sys
from cobalt_lib import Config, Dataset, experiment

config = Config(root={root!r})
report = experiment("plain", Dataset([{{"input": "q"}}]), lambda ctx: "a").run(config=config)
print(json.dumps({{"status": report.status, "otel": sorted(m for m in sys.modules if m.startswith("opentelemetry"))}}))
'''


@pytest.mark.slow
def test_a_process_that_never_imports_opentelemetry_runs_without_its_sdk(tmp_path: Path) -> None:
    # Collecting is on by default; with nothing in the process able to emit a span, the SDK is not
    # imported and no provider is set (the import is most of a small run's fixed cost).
    done = python(UNTRACED.format(root=str(tmp_path)))
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout.splitlines()[-1]) == {"status": "completed", "otel": []}
