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


def _run(script: str, cwd: Path, **env: str) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.endswith(("_API_KEY", "_BASE_URL"))}
    return subprocess.run([sys.executable, str(cwd / "examples" / script)], cwd=cwd, env={**clean, **env},
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
