"""Third-party evaluator kinds from the `cobalt.evaluators` entry point group, as a user installs them:
a distribution on the path with an entry_points.txt, seen by `cobalt evaluators` and `cobalt run`."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

COBALT = str(Path(sys.executable).parent / "cobalt")

PLUGIN = '''\
from pydantic import Field

from cobalt_lib import EvaluatorKind


def shouting(ctx, min_ratio: float = 0.5, letters_only: bool = True):
    """The share of upper-case letters, passing at `min_ratio`."""
    text = [c for c in str(ctx.output) if c.isalpha() or not letters_only]
    upper = sum(c.isupper() for c in text) / len(text) if text else 0.0
    return {"score": 1.0 if upper >= min_ratio else upper, "reason": f"{upper:.0%} upper case"}


class Polite(EvaluatorKind):
    """1 when the output says please."""

    word: str = Field("please", description="the polite word")

    def score(self, ctx, scoring):
        return self.word in str(ctx.output).lower()
'''

EXPERIMENT = '''\
from cobalt_lib import Dataset, Evaluator, experiment

data = Dataset([{"input": "a"}, {"input": "b"}])


@experiment("loud", data, evaluators=[Evaluator(name="loud", type="shouting", min_ratio=0.9),
                                      Evaluator(name="polite", type="polite")])
def agent(ctx):
    return "HELLO PLEASE" if ctx.item["input"] == "a" else "Hello there"
'''


@pytest.fixture
def plugin_path(tmp_path: Path) -> Path:
    """An installed distribution `cobalt-loud 1.2` with two kinds and one broken entry point."""
    site = tmp_path / "site"
    (site / "cobalt_loud").mkdir(parents=True)
    (site / "cobalt_loud" / "__init__.py").write_text(PLUGIN)
    info = site / "cobalt_loud-1.2.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: cobalt-loud\nVersion: 1.2\n")
    (info / "entry_points.txt").write_text("[cobalt.evaluators]\nshouting = cobalt_loud:shouting\n"
                                           "polite = cobalt_loud:Polite\nbroken = cobalt_loud:missing\n")
    return site


def _cobalt(cwd: Path, site: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(site)}
    return subprocess.run([COBALT, *args], cwd=cwd, capture_output=True, text=True, timeout=120, env=env)


@pytest.mark.slow
def test_cobalt_evaluators_lists_plugin_kinds_with_their_options(project: Path, plugin_path: Path) -> None:
    listed = _cobalt(project, plugin_path, "evaluators", "--json")
    assert listed.returncode == 0, listed.stderr
    kinds = {k["name"]: k for k in json.loads(listed.stdout)}
    assert {"llm-judge", "exact-match", "shouting", "polite"} <= set(kinds)
    shouting = kinds["shouting"]
    assert shouting["description"] == "The share of upper-case letters, passing at `min_ratio`."
    assert shouting["source"] == "plugin cobalt-loud 1.2 (cobalt_loud:shouting)"
    assert [(o["name"], o["type"], o["default"]) for o in shouting["options"]] == [
        ("min_ratio", "float", 0.5), ("letters_only", "bool", True)]
    assert kinds["polite"]["options"][0]["name"] == "word"
    assert ("evaluator plugin 'broken' from cobalt-loud 1.2 (cobalt_loud:missing): AttributeError" in listed.stderr)


@pytest.mark.slow
def test_a_run_uses_plugin_kinds_and_a_broken_plugin_is_named_where_used(project: Path, plugin_path: Path) -> None:
    (project / "experiments").mkdir()
    (project / "experiments" / "loud.cobalt.py").write_text(EXPERIMENT)
    run = _cobalt(project, plugin_path, "run", "--json")
    assert run.returncode == 0, run.stderr
    summary = json.loads(run.stdout)[0]["summary"]["scores"]
    assert summary["loud"]["avg"] == pytest.approx((1.0 + 1 / 10) / 2)
    assert summary["polite"]["avg"] == 0.5
    (project / "experiments" / "loud.cobalt.py").write_text(EXPERIMENT.replace('type="polite"', 'type="broken"'))
    failed = _cobalt(project, plugin_path, "run")
    assert failed.returncode == 2
    assert "has type 'broken', whose plugin failed to load: cobalt-loud 1.2 (cobalt_loud:missing)" in failed.stderr
