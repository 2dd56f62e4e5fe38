"""The examples run as a user runs them."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from fakellm import FakeLLM

from cobalt_lib import Store, read_results

EXAMPLES = Path(__file__).parent.parent / "examples"


def _run(script: str, cwd: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.endswith(("_API_KEY", "_BASE_URL"))}
    return subprocess.run([sys.executable, str(cwd / "examples" / script), *args], cwd=cwd, env={**clean, **env},
                          capture_output=True, text=True, timeout=120)


def _copy_examples(project: Path) -> None:
    shutil.copytree(EXAMPLES, project / "examples")


def test_offline_example_runs_end_to_end(project: Path) -> None:
    _copy_examples(project)
    result = _run("offline_qa.py", project)
    assert result.returncode == 0, result.stderr
    results_line = next(line for line in result.stdout.splitlines() if line.startswith("results:"))
    report = read_results(results_line.split(":", 1)[1].strip())
    assert report.name == "capitals-offline" and report.summary.total_runs == 12
    assert report.summary.scores["exact"].avg == 0.75 and report.summary.scores["mentions"].avg == 10 / 12
    assert "gate PASS: mentions >= 0.7" in result.stdout
    assert Store(project / ".cobalt" / "cobalt.duckdb").runs()[0]["run_id"] == report.id


def test_llm_example_without_a_key_names_the_variable(project: Path) -> None:
    _copy_examples(project)
    result = _run("llm_judge.py", project)
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [
        "error: Evaluator 'relevance' uses the openai provider but OPENAI_API_KEY is not set; set "
        "OPENAI_API_KEY in the environment (or point [judge] base_url at a local server)."]


def test_llm_example_against_an_openai_compatible_server(project: Path, llm: FakeLLM) -> None:
    _copy_examples(project)
    result = _run("llm_judge.py", project, OPENAI_BASE_URL=llm.openai_url)
    assert result.returncode == 0, result.stderr
    assert "relevance: mean 0.80 over 6 scores (0 judge errors)" in result.stdout
    assert llm.count("chat") == 6


def test_conversations_example_runs_its_scripted_chats_offline(project: Path) -> None:
    _copy_examples(project)
    result = _run("conversations.py", project)
    assert result.returncode == 0, result.stderr
    assert "  assistant: The refund for order 1234 reaches your account within 5 working days." in result.stdout
    assert "  polite: 0.67 (turn 1 1.00, turn 2 1.00, turn 3 0.00)" in result.stdout
    assert "lost-parcel" not in result.stdout  # the simulated user's chat needs a model: --simulate


def test_conversations_example_simulates_a_user_and_replays_it_from_the_cache(project: Path, llm: FakeLLM) -> None:
    import json
    import re

    from fakellm import Reply, text

    def respond(kind: str, body: dict[str, object]) -> Reply:
        prompt = str(next(m["content"] for m in body["messages"] if m["role"] == "user"))  # type: ignore[attr-defined]
        if "role-playing a user" in prompt:
            k = len(re.findall(r"^assistant: ", prompt, flags=re.MULTILINE))
            lines = ["Hello, my parcel is late.", "It is order 9012. Where is my parcel?"]
            return text(json.dumps({"message": lines[k] if k < 2 else "", "done": k >= 2}))
        if "stays in the role" in prompt:
            n = prompt.count("\nassistant: ")
            return text(json.dumps({"verdicts": [{"turn": i + 1, "adheres": True, "reason": "polite"}
                                                 for i in range(n)]}))
        return text(json.dumps({"score": 1.0, "reason": "the user learnt where the parcel is"}))

    llm.respond = respond
    _copy_examples(project)
    first = _run("conversations.py", project, "--simulate", OPENAI_BASE_URL=llm.openai_url)
    assert first.returncode == 0, first.stderr
    assert "  assistant: Order 9012 is at the local depot and arrives tomorrow." in first.stdout
    assert "  simulated user: 3 turns, 3 model calls, 0 from the cache" in first.stdout
    calls = llm.count("chat")
    again = _run("conversations.py", project, "--simulate", OPENAI_BASE_URL=llm.openai_url)
    assert again.returncode == 0, again.stderr
    assert "  simulated user: 3 turns, 0 model calls, 3 from the cache" in again.stdout
    assert llm.count("chat") == calls  # the user replayed and the judge's answers cached: no request at all


def test_variants_example_runs_every_variant_in_one_group(project: Path) -> None:
    _copy_examples(project)
    result = _run("variants_sweep.py", project)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].endswith("4 variants against model=small,prompt=terse")
    assert lines[1:] == [
        "model=small,prompt=terse   mentions 0.58 (baseline)  exact 0.58 (baseline)  cost/item $0.0001 frontier  "
        "passed",
        "model=small,prompt=polite  mentions 0.58 (no significant change)  exact 0.00 (worse)  cost/item $0.0001  "
        "passed",
        "model=large,prompt=terse   mentions 0.92 (better)  exact 0.92 (better)  cost/item $0.0010 frontier  passed",
        "model=large,prompt=polite  mentions 0.92 (better)  exact 0.00 (worse)  cost/item $0.0010  passed"]
    runs = Store(project / ".cobalt" / "cobalt.duckdb").runs()
    assert len(runs) == 4 and len({r["group_id"] for r in runs}) == 1
    shown = subprocess.run([str(Path(sys.executable).parent / "cobalt"), "compare", "--group", "latest", "--json"],
                           cwd=project, capture_output=True, text=True, timeout=120)
    assert shown.returncode == 0, shown.stderr
    assert '"baseline": "model=small,prompt=terse"' in shown.stdout
