"""`cobalt show RUN ITEM --trace` as a user types it: the span tree of an instrumented agent's item."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from traced_agent import per_city_replies

COBALT = str(Path(sys.executable).parent / "cobalt")
HERE = Path(__file__).resolve().parent

EXPERIMENT = '''
import sys
sys.path.insert(0, {here!r})
from traced_agent import sync_agent
from cobalt_lib import Dataset, Evaluator, experiment

experiment("weather", Dataset([{{"input": "weather in Paris"}}, {{"input": "weather in Oslo"}}]),
           sync_agent({url!r}), evaluators=[Evaluator(name="capped", type="max_model_calls", n=2)], concurrency=2)
'''


def cobalt(project: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("GITHUB_ACTIONS", "GITHUB_STEP_SUMMARY")}
    return subprocess.run([COBALT, *args], cwd=project, capture_output=True, text=True, timeout=120, env=env,
                          stdin=subprocess.DEVNULL)


@pytest.mark.slow
def test_show_trace_prints_the_span_tree_with_model_and_tool_calls(project: Path, llm: Any) -> None:
    llm.respond = per_city_replies
    (project / "experiments").mkdir()
    (project / "experiments" / "weather.cobalt.py").write_text(EXPERIMENT.format(here=str(HERE), url=llm.openai_url))
    ran = cobalt(project, "run", "--ci", "--no-dagster")
    assert ran.returncode == 0, ran.stdout + ran.stderr
    shown = cobalt(project, "show", "latest", "1", "--trace")
    assert (shown.returncode, shown.stderr) == (0, "")
    lines = shown.stdout.split("\ntrace: ", 1)[1].splitlines()
    ms = r"[\d.]+m?s"
    expected = [
        rf"4 spans, 2 model calls \(12 in / 6 out tokens\), 1 tool call, {ms}",
        rf"invoke_agent weather \[agent\] at \+0ms, {ms}",
        rf"  chat gpt-4o-mini \[model gpt-4o-mini\] at \+{ms}, {ms}, 4 in / 3 out tokens",
        r"      user: weather in Oslo",
        r'      assistant: checking Oslo \[tool call get_weather\(\{"city": "Oslo"\}\)\]',
        rf"  execute_tool get_weather \[tool\] at \+{ms}, {ms}",
        r'      arguments: \{"city": "Oslo"\}',
        r'      result: \{"city": "Oslo", "temperature": 24\}',
        rf"  chat gpt-4o-mini \[model gpt-4o-mini\] at \+{ms}, {ms}, 8 in / 3 out tokens",
        r"      user: weather in Oslo",
        r'      tool: \[tool result \{"city": "Oslo", "temperature": 24\}\]',
        r"      assistant: final Oslo",
    ]
    assert len(lines) == len(expected), lines
    for line, pattern in zip(lines, expected, strict=True):
        assert re.fullmatch(pattern, line), (line, pattern)
    as_json = json.loads(cobalt(project, "show", "latest", "1", "--trace", "--json").stdout)
    spans = as_json["traces"]["1:0"]
    assert [s["name"] for s in spans] == ["chat gpt-4o-mini", "execute_tool get_weather", "chat gpt-4o-mini",
                                          "invoke_agent weather"]
    assert spans[1]["attributes"]["gen_ai.tool.call.result"] == '{"city": "Oslo", "temperature": 24}'
    # the item's cost is the model spans': the agent reported none
    assert as_json["items"][0]["metadata"]["input_tokens"] == 12
    no_item = cobalt(project, "show", "latest", "--trace")
    assert no_item.returncode == 2
    assert "--trace shows one item's trace: name the item, e.g. `cobalt show latest 3 --trace`." in no_item.stderr
