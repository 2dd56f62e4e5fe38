"""The project the page tests share: three runs of `support-bot` made with the CLI, the judge being the
loopback LLM server."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from fakellm import FakeLLM, answer

from cobalt_lib import load_config
from cobalt_lib.pages import PagesServer

COBALT = str(Path(sys.executable).parent / "cobalt")
KEY = "sk-test-pages-0123456789"
#: What the agent says when it refuses: untrusted text that must show as text, never run.
REFUSAL = "Sorry, I cannot help <script>window.__xss = 1</script>"
JUDGE_REFUSAL = "The answer refuses the question <script>window.__xss = 2</script>"
#: What the judge answers for item 4: prose, not `{score, reason}`.
JUDGE_PROSE = "I would rate this answer quite highly."

EXPERIMENT = '''
import os
from cobalt_lib import Dataset, Evaluator, experiment, threshold

N = int(os.environ.get("PAGES_ITEMS", "8"))
VERSION = os.environ.get("AGENT_VERSION", "v1")
data = Dataset([{"input": f"question {i}", "expected_output": f"answer {i}"} for i in range(N)])

@experiment("support-bot", data, tags=["support"],
            evaluators=[Evaluator(name="exact", type="exact-match"),
                        Evaluator(name="helpful", prompt="Question: {{input}} Answer: {{output}} Is it helpful?")],
            assertions=[threshold("exact", 0.86)])
def agent(ctx):
    i = ctx.index
    if i == 7:
        raise RuntimeError("the tool timed out <b>upstream</b>")
    if VERSION == "v2" and i == 2:
        return REFUSAL
    if VERSION == "v1" and i == 6:
        return "answer six, probably"
    return f"answer {i}"
'''.replace("REFUSAL", repr(REFUSAL))


@dataclass
class Served:
    root: Path
    url: str
    #: Run ids, oldest first: v1 (tag baseline), v2 (tag candidate, one item more), v2 again (tag nightly).
    runs: list[str]
    #: The user's session (`/?session=...` sets its cookie): label writes need it.
    session: str = ""

    def go(self, page: Any, path: str) -> Any:
        page.goto(self.url + path)
        return page


def _judge(kind: str, body: dict[str, Any]) -> Any:
    prompt = " ".join(str(m.get("content", "")) for m in body.get("messages") or [])
    if "question 4" in prompt:  # not the JSON asked for, twice: an eval-error
        return JUDGE_PROSE
    if "Sorry" in prompt:
        return answer(0.1, JUDGE_REFUSAL)
    return answer(0.9, "Answers the question directly.")


def cobalt(root: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if k not in ("GITHUB_ACTIONS", "GITHUB_STEP_SUMMARY")}
    return subprocess.run([COBALT, *args], cwd=root, capture_output=True, text=True, timeout=120,
                          env={**clean, "OPENAI_API_KEY": KEY, **env}, stdin=subprocess.DEVNULL)


def make_project(root: Path, llm: FakeLLM) -> list[str]:
    (root / "experiments").mkdir(parents=True)
    (root / "experiments" / "support.cobalt.py").write_text(EXPERIMENT, encoding="utf-8")
    (root / "cobalt.toml").write_text(
        f'[judge]\nprovider = "openai"\nmodel = "gpt-4o-mini"\nbase_url = "{llm.openai_url}"\n'
        # the runs carry a failed agent call and an eval-error on purpose: the pages must show them
        "max_retries = 1\ntimeout = 5\n\n[ci]\nmax_error_rate = 0.5\n", encoding="utf-8")
    runs = []
    # The first run is recorded in Dagster as the command ends; the others wait for a record sensor.
    for version, tag, items, record in (("v1", "baseline", "8", "inline"), ("v2", "candidate", "9", "daemon"),
                                        ("v2", "nightly", "9", "daemon")):
        done = cobalt(root, "run", "--json", "--add-tag", tag, AGENT_VERSION=version,
                      PAGES_ITEMS=items, COBALT_DAGSTER_RECORD=record)
        assert done.returncode in (0, 1), done.stderr
        runs.append(json.loads(done.stdout)[0]["id"])
    return runs


# The page tests import this fixture by name (a second conftest.py would shadow the root one's
# `from conftest import ...`).
@pytest.fixture(scope="session")
def served(tmp_path_factory: pytest.TempPathFactory, _llm_server: FakeLLM) -> Iterator[Served]:
    _llm_server.reset()
    _llm_server.respond = _judge
    root = tmp_path_factory.mktemp("pages") / "proj"
    try:
        runs = make_project(root, _llm_server)
    finally:
        _llm_server.reset()  # the judge's script is for these runs alone
    server = PagesServer(load_config(root))
    url = server.start()
    yield Served(root=root, url=url, runs=runs, session=server.login_url.rsplit("=", 1)[1])
    server.stop()
