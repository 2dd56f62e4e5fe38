"""What a plain `cobalt run` imports: the run's command and use cases and the engine, no feature it does not use.

The command line registers each command when it is used (`cobalt_lib.cli._app.LAZY_COMMANDS`), `ops` and
`gates` import their names on use, so `cobalt run` for a one-evaluator experiment loads no grader, no
calibration, no labels or studio use case, no run group, grid or transcript renderer, no simulated user: of
the variants and conversations only what the run loop itself needs. A new eager import of a feature module
fails here, naming it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from slowdown import scaled

EXPERIMENT = '''
from cobalt_lib import Dataset, Evaluator, experiment

data = Dataset([{"input": f"q{i}", "expected_output": f"a{i}"} for i in range(3)])

@experiment("qa", data, evaluators=[Evaluator(name="exact", type="exact-match")])
def agent(ctx):
    return ctx.item["expected_output"]
'''

#: The `cobalt` console script, run in-process, with every cobalt module loaded listed at exit.
RUN = '''
import atexit, json, sys

OUT = sys.argv[1]

def _loaded():
    with open(OUT, "w", encoding="utf-8") as out:
        json.dump(sorted(name for name in sys.modules if name.split(".")[0] in ("cobalt_lib", "cobalt_dagster")), out)

atexit.register(_loaded)
sys.argv = ["cobalt", "run"]
from cobalt_lib.cli import main
main()
'''

#: Words that name a feature's modules: grading (graders, calibration, labels, the studio), variants (and their
#: run groups and grids), conversations (and their transcripts and simulated user), a Dagster run's shards (and
#: their exchange and partials).
FEATURE_WORDS = ("grad", "calibrat", "label", "studio", "variant", "group", "grid", "conversation", "transcript",
                 "simulat", "shard", "exchange", "partials")

#: The feature modules a plain run does load, each because the run loop itself needs it (the engine's part of
#: variants and conversations; their wings, `cobalt_lib.variants` and the conversations' renderers, stay out):
ALLOWED = {
    # a run's plan pairs items with their variant (none) and the experiment's declaration takes `variants=`
    "cobalt_lib.experiments._variants", "cobalt_lib.run._variant",
    # every item is a conversation of one or more turns: the run loop reads its spec (`conversations._spec`,
    # not the simulated user) and an item's result holds its transcript (empty for a one-turn item)
    "cobalt_lib.conversations", "cobalt_lib.conversations._spec", "cobalt_lib.run._conversation",
    "cobalt_lib.results._conversation",
    # the store is one class over all its tables (labels and variants among them), opened by every run
    "cobalt_lib.store._store_labels", "cobalt_lib.store._store_variants",
}


def run_imports(project: Path) -> list[str]:
    """The cobalt modules loaded by `cobalt run` in `project`, from a fresh interpreter."""
    out = project / "modules.json"
    clean = {k: v for k, v in os.environ.items() if k not in ("GITHUB_ACTIONS", "GITHUB_STEP_SUMMARY")}
    result = subprocess.run([sys.executable, "-c", RUN, str(out)], cwd=project, capture_output=True, text=True,
                            timeout=scaled(120), env=clean, check=False)
    assert result.returncode == 0, result.stderr
    assert "exact" in result.stdout  # the run ran, and scored
    names: list[str] = json.loads(out.read_text(encoding="utf-8"))
    return names


def feature_modules(names: list[str]) -> list[str]:
    return [name for name in names if any(word in name for word in FEATURE_WORDS)]


@pytest.mark.slow
def test_a_plain_run_imports_no_feature_it_does_not_use(project: Path) -> None:
    (project / "experiments").mkdir()
    (project / "experiments" / "qa.cobalt.py").write_text(EXPERIMENT, encoding="utf-8")
    loaded = run_imports(project)
    assert "cobalt_lib.cli._run" in loaded and "cobalt_lib.ops._run" in loaded  # it listed what the run loaded
    unexpected = sorted(set(feature_modules(loaded)) - ALLOWED)
    assert unexpected == [], f"`cobalt run` imports feature modules it does not use: {unexpected}"
    commands = [name for name in loaded if name.startswith("cobalt_lib.cli.")]
    assert commands == ["cobalt_lib.cli._app", "cobalt_lib.cli._common", "cobalt_lib.cli._run"]  # run's alone


def test_the_feature_check_names_grading_variant_and_conversation_modules() -> None:
    grading = ["cobalt_lib.grading._grade", "cobalt_lib.grading.calibration._judge", "cobalt_lib.cli._studio",
               "cobalt_lib.cli._grading", "cobalt_lib.grading.graders._deck", "cobalt_lib.pages._grading"]
    variants = ["cobalt_lib.variants", "cobalt_lib.variants._reporter", "cobalt_lib.run._group", "cobalt_lib.cli._grid",
                "cobalt_lib.pages._groups", "cobalt_lib.mcp._variant_tools"]
    conversations = ["cobalt_lib.conversations._render", "cobalt_lib.conversations._simulator",
                     "cobalt_lib.render._transcript"]
    shards = ["cobalt_lib.run._shard", "cobalt_lib.store._exchange", "cobalt_lib.run._partials"]
    features = [*grading, *variants, *conversations, *shards]
    assert feature_modules([*features, "cobalt_lib.ops._run", "cobalt_lib.store._store"]) == features
