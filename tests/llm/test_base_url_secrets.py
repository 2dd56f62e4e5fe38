"""Credentials in a judge's `base_url` (`user:password@`, `?api-key=`) are never printed or stored, and
the judge runs without the openai and anthropic SDKs: `cobalt run` and a script in fresh processes."""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
from pathlib import Path
from urllib.parse import quote

import pytest
from conftest import TEST_KEY
from fakellm import FakeLLM, Reply, answer

from cobalt_lib import Store

COBALT = str(Path(sys.executable).parent / "cobalt")
PASSWORD = "pw/SECRET-userinfo-31415"
QUERY_KEY = "SECRET-query-key-27182"

JUDGED = '''
from cobalt_lib import Dataset, Evaluator, experiment

experiment("judged", Dataset([{"input": f"q{i}"} for i in range(3)]), lambda ctx: "an answer",
           evaluators=[Evaluator(name="judge", prompt="Rate {{output}} for {{input}}")])
'''


def _run(root: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    dropped = ("DAGSTER_HOME", "COBALT_DAGSTER_RECORD", "GITHUB_ACTIONS")
    clean = {k: v for k, v in os.environ.items() if k not in dropped}
    return subprocess.run(args, cwd=root, capture_output=True, text=True, timeout=180, env={**clean, **env})


@pytest.mark.slow
def test_credentials_in_base_url_are_never_printed_or_stored(project: Path, llm: FakeLLM) -> None:
    base_url = f"http://svc:{quote(PASSWORD, safe='')}@127.0.0.1:{llm.port}/v1?api-key={QUERY_KEY}"
    secrets = [PASSWORD, quote(PASSWORD, safe=""), QUERY_KEY, TEST_KEY,
               base64.b64encode(f"svc:{PASSWORD}".encode()).decode()]
    # The base_url lives in the environment, not in a project file, so every file under the project must lack it.
    (project / "cobalt.toml").write_text('[judge]\nmodel = "gpt-4o-mini"\nmax_retries = 1\nretry_max_seconds = 20\n')
    (project / "experiments").mkdir()
    (project / "experiments" / "judged.cobalt.py").write_text(JUDGED)
    echo = {"error": {"message": f"no deployment at {base_url} for Bearer {TEST_KEY} (Basic {secrets[-1]})"}}
    printed = ""
    for record in ("off", "inline"):  # inline: the run goes through Dagster's event log too
        llm.script(Reply(status=404, body=echo), answer(0.7), answer(0.7))
        result = _run(project, COBALT, "run", COBALT_DAGSTER_RECORD=record, OPENAI_BASE_URL=base_url,
                      OPENAI_API_KEY=TEST_KEY)
        # the 404 is one item's eval-error, which fails the run by default ([ci] max_error_rate = 0)
        assert result.returncode == 1, result.stderr
        printed += result.stdout + result.stderr
    headers = llm.requests[0]["headers"]
    assert headers["authorization"] == f"Basic {secrets[-1]}"  # the user info was sent, as Basic auth only
    assert (project / ".cobalt" / "dagster").is_dir()  # Dagster's storage is among the files searched
    leaks = [(s, "stdout/stderr") for s in secrets if s in printed]
    for path in (p for p in project.rglob("*") if p.is_file()):
        data = path.read_bytes()
        leaks += [(s, str(path.relative_to(project))) for s in secrets if s.encode() in data]
    assert leaks == []
    store = Store(project / ".cobalt" / "cobalt.duckdb")  # DuckDB may compress text: ask it too
    rows = json.dumps([r for run in store.runs() for r in store.rows("scores", run["run_id"])], default=str)
    assert not [s for s in secrets if s in rows]
    errors = [json.loads(p.read_text())["items"][0]["evaluations"]["judge"]["error"]
              for p in (project / ".cobalt" / "results").glob("*.json")]
    assert len(errors) == 2 and all(
        f"HTTP 404: no deployment at http://svc:***@127.0.0.1:{llm.port}/v1?api-key=*** for Bearer ***" in e
        for e in errors), errors


BLOCKED = '''
import sys
sys.modules["openai"] = None  # `import openai` now raises ImportError, as when the SDK is not installed
sys.modules["anthropic"] = None
import cobalt_lib
from cobalt_lib import Dataset, Evaluator, experiment, load_config

judged = experiment("no-sdk", Dataset([{"input": "q"}]), lambda ctx: "a",
                    evaluators=[Evaluator(name="openai", prompt="{{output}}"),
                                Evaluator(name="anthropic", prompt="{{output}}", provider="anthropic")])
report = judged.run(config=load_config())
print(sorted((name, e.status, e.score) for name, e in report.items[0].evaluations.items()))
print(sys.modules["openai"], sys.modules["anthropic"])
'''


@pytest.mark.slow
def test_a_judged_experiment_runs_without_the_sdks(project: Path, llm: FakeLLM) -> None:
    (project / "cobalt.toml").write_text(f'[judge]\nbase_url = "{llm.openai_url}"\n')
    result = _run(project, sys.executable, "-c", BLOCKED, OPENAI_API_KEY=TEST_KEY, ANTHROPIC_API_KEY=TEST_KEY,
                  ANTHROPIC_BASE_URL=llm.anthropic_url)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == ["[('anthropic', 'ok', 0.8), ('openai', 'ok', 0.8)]", "None None"]
    assert (llm.count("chat"), llm.count("messages")) == (1, 1)
