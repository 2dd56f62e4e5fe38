"""The shape of the code by feature (issue 37, "one home per feature"): how many modules and packages hold
grading, and how much of cobalt_lib a plain `cobalt run` imports, before (a commit) and now (this tree).

    .venv/bin/python benchmarks/structure_figures.py                  # before: 56487ae, after: the work tree
    .venv/bin/python benchmarks/structure_figures.py --before 3d550b3

A module is grading's when its dotted name says so (`grad`, `calibrat`, `label`, `studio`: graders,
calibration, the calibrated gate, labels, the studio, their commands, pages and renderers); a package
is a top-level package of cobalt_lib (`grading`, `cli`, `ops`...). The words also catch
`imports._graders` (the OpenAI Evals importer's graders) and `store._store_labels` (the labels' table),
before and after alike. A variants module's name holds `variant`, `group` or `grid` (run groups and
their grid); a conversations module's `conversation`, `transcript`, `simulat` or `turn` (the per-turn
evaluators among them). "Feature modules" in a run are the modules named for any of the three (the words
of tests/test_run_imports.py, which adds nothing to them but `turn`).

The run: a fresh interpreter runs the `cobalt` console script's code (`cobalt_lib.cli.main`) with
`run` in a temporary project holding one experiment of four items and one exact-match evaluator, and
lists every cobalt module loaded at exit. The "before" tree is `git archive`d into a temporary folder
and put first on `sys.path` (ahead of the editable install).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tarfile
import tempfile
from collections.abc import Iterable
from io import BytesIO
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
GRADING_WORDS = ("grad", "calibrat", "label", "studio")
VARIANT_WORDS = ("variant", "group", "grid")
CONVERSATION_WORDS = ("conversation", "transcript", "simulat", "turn")
#: Each feature: the words naming its modules, and its wing (the package meant to hold it).
FEATURES = {"grading": (GRADING_WORDS, "grading"), "variants": (VARIANT_WORDS, "variants"),
            "conversations": (CONVERSATION_WORDS, "conversations")}
FEATURE_WORDS = (*GRADING_WORDS, *VARIANT_WORDS, *CONVERSATION_WORDS)

EXPERIMENT = '''
from cobalt_lib import Dataset, Evaluator, experiment

data = Dataset([{"input": f"q{i}", "expected_output": f"a{i}"} for i in range(4)])

@experiment("qa", data, evaluators=[Evaluator(name="exact", type="exact-match")])
def agent(ctx):
    return ctx.item["expected_output"]
'''

#: Puts the tree to measure first: the editable install's finder would answer before `sys.path` does.
FIRST = '''
import sys
sys.meta_path = [f for f in sys.meta_path if not getattr(f, "__module__", "").startswith("__editable__")]
sys.path.insert(0, sys.argv[2])
'''

RUN = FIRST + '''
import atexit, json

OUT = sys.argv[1]

def _loaded():
    with open(OUT, "w", encoding="utf-8") as out:
        json.dump(sorted(name for name in sys.modules if name.split(".")[0] == "cobalt_lib"), out)

atexit.register(_loaded)
sys.argv = ["cobalt", "run"]
from cobalt_lib.cli import main
main()
'''


def module_name(path: str) -> str | None:
    """`cobalt_lib/grading/_grade.py` -> `cobalt_lib.grading._grade`; a package's `__init__` is the package."""
    if not path.startswith("cobalt_lib/") or not path.endswith(".py"):
        return None
    parts = path[:-3].split("/")
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules_at(commit: str | None) -> list[str]:
    """Every cobalt_lib module in `commit`'s tree (None: the files on disk now, tracked or not)."""
    if commit is None:
        paths: Iterable[str] = (p.relative_to(ROOT).as_posix() for p in (ROOT / "cobalt_lib").rglob("*.py"))
    else:
        listed = subprocess.run(["git", "ls-tree", "-r", "--name-only", commit, "cobalt_lib"], cwd=ROOT,
                                capture_output=True, text=True, check=True)
        paths = listed.stdout.split()
    return sorted(name for name in map(module_name, paths) if name is not None)


def named(modules: Iterable[str], words: tuple[str, ...]) -> list[str]:
    return [m for m in modules if any(word in m for word in words)]


def packages(modules: Iterable[str]) -> set[str]:
    return {m.split(".")[1] for m in modules if m.count(".") >= 1}


def run_imports(source: Path | None) -> list[str]:
    """The cobalt_lib modules `cobalt run` loads, with `source` first on the path (None: this tree)."""
    with tempfile.TemporaryDirectory() as tmp:
        project = Path(tmp) / "proj"
        (project / "experiments").mkdir(parents=True)
        (project / "experiments" / "qa.cobalt.py").write_text(EXPERIMENT, encoding="utf-8")
        out = Path(tmp) / "modules.json"
        env = {k: v for k, v in os.environ.items() if k not in ("GITHUB_ACTIONS", "GITHUB_STEP_SUMMARY")}
        tree = str(source or ROOT)
        result = subprocess.run([sys.executable, "-c", RUN, str(out), tree], cwd=project, env=env, capture_output=True,
                                text=True, check=False)
        if result.returncode != 0:
            raise SystemExit(f"cobalt run failed:\n{result.stderr}")
        loaded: list[str] = json.loads(out.read_text(encoding="utf-8"))
    where = subprocess.run([sys.executable, "-c", FIRST + "import cobalt_lib; print(cobalt_lib.__file__)", "", tree],
                           capture_output=True, text=True, check=True).stdout.strip()
    if not where.startswith(tree):
        raise SystemExit(f"the run imported cobalt_lib from {where}, not from {tree}")
    return loaded


def archived(commit: str, into: Path) -> Path:
    """`commit`'s cobalt_lib and cobalt_dagster, unpacked under `into`."""
    tar = subprocess.run(["git", "archive", commit, "cobalt_lib", "cobalt_dagster"], cwd=ROOT, capture_output=True,
                         check=True).stdout
    with tarfile.open(fileobj=BytesIO(tar)) as archive:
        archive.extractall(into, filter="data")
    return into


def figures(label: str, modules: list[str], loaded: list[str]) -> None:
    features = named(loaded, FEATURE_WORDS)
    print(f"{label}:")
    for feature, (words, wing) in FEATURES.items():
        mine = named(modules, words)
        held = sorted(packages(mine))
        print(f"  {feature}: {len(mine)} modules in {len(held)} packages ({', '.join(held)}); "
              f"{sum(m.startswith(f'cobalt_lib.{wing}') for m in mine)} in cobalt_lib/{wing}")
    print(f"  cobalt run imports {len(loaded)} of {len(modules)} cobalt_lib modules; "
          f"{len(features)} of them grading, studio, variant or conversation modules:")
    for name in features:
        print(f"    {name}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--before", default="56487ae", help="the commit to measure before (default: 56487ae)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        figures(f"before ({args.before})", modules_at(args.before), run_imports(archived(args.before, Path(tmp))))
    figures("after (this tree)", modules_at(None), run_imports(None))


if __name__ == "__main__":
    main()
