"""A plugin shipped as a real package: built and installed by pip from a local directory, then found by
`cobalt evaluators` and `cobalt run` through its `cobalt.evaluators` entry points, loaded lazily."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

COBALT = str(Path(sys.executable).parent / "cobalt")

PYPROJECT = """\
[build-system]
requires = ["setuptools>=77"]
build-backend = "setuptools.build_meta"

[project]
name = "cobalt-tone"
version = "0.3.0"

[project.entry-points."cobalt.evaluators"]
polite = "cobalt_tone:polite"
rude = "cobalt_tone.missing_module:rude"
"""

MODULE = '''\
def polite(ctx, word: str = "please"):
    """1 when the output says the polite word."""
    return {"score": float(word in str(ctx.output).lower()), "reason": f"looked for {word!r}"}
'''

EXPERIMENT = """\
from cobalt_lib import Evaluator, experiment

experiment("tone", [{"input": "a"}, {"input": "b"}], lambda ctx: "Please sit" if ctx.input == "a" else "Sit",
           evaluators=[Evaluator(name="polite", type="TYPE", word="please")])
"""


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The package `cobalt-tone` installed by pip into a directory of its own (added to PYTHONPATH)."""
    root = tmp_path_factory.mktemp("plugin")
    (root / "src" / "cobalt_tone").mkdir(parents=True)
    (root / "src" / "pyproject.toml").write_text(PYPROJECT)
    (root / "src" / "cobalt_tone" / "__init__.py").write_text(MODULE)
    installed = subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-index",
                                "--no-build-isolation", "--target", str(root / "site"), str(root / "src")],
                               capture_output=True, text=True, timeout=120)
    assert installed.returncode == 0, installed.stderr
    return root / "site"


def _cobalt(cwd: Path, site: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(site)}
    return subprocess.run([COBALT, *args], cwd=cwd, capture_output=True, text=True, timeout=120, env=env)


def test_an_installed_plugin_is_listed_with_its_distribution(project: Path, site: Path) -> None:
    listed = _cobalt(project, site, "evaluators", "--json")
    assert listed.returncode == 0, listed.stderr
    polite = next(k for k in json.loads(listed.stdout) if k["name"] == "polite")
    assert polite["source"] == "plugin cobalt-tone 0.3.0 (cobalt_tone:polite)"
    assert polite["description"] == "1 when the output says the polite word."
    assert [(o["name"], o["default"]) for o in polite["options"]] == [("word", "please")]
    assert ("warning: evaluator plugin 'rude' from cobalt-tone 0.3.0 (cobalt_tone.missing_module:rude): "
            "ModuleNotFoundError") in listed.stderr


def test_a_run_loads_only_the_plugin_it_uses_and_a_typo_names_the_installed_kinds(project: Path, site: Path) -> None:
    (project / "experiments").mkdir()
    experiment_file = project / "experiments" / "tone.cobalt.py"
    experiment_file.write_text(EXPERIMENT.replace("TYPE", "politely"))
    typo = _cobalt(project, site, "run")
    assert typo.returncode == 2
    assert "has unknown type 'politely'; did you mean 'polite'? Installed kinds: " in typo.stderr
    assert "polite (from cobalt-tone 0.3.0)" in typo.stderr and "regex" in typo.stderr
    experiment_file.write_text(EXPERIMENT.replace("TYPE", "polite"))
    run = _cobalt(project, site, "run", "--json")
    assert run.returncode == 0, run.stderr
    assert json.loads(run.stdout)[0]["summary"]["scores"]["polite"]["avg"] == 0.5
    assert "rude" not in run.stderr  # the broken entry point was never imported: nothing to warn about
