"""The studio's steps as plain commands, as a script or CI runs them: `cobalt grader draft`, `show`, `edit`,
`cobalt grade`, `cobalt grader versions` and `export`; the studio driven from a pipe; bad input exits 2."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from fakellm import FakeLLM
from studio_setup import MARK, studio_project  # noqa: F401  (the `studio_root` fixture)

from cobalt_lib import load_grader

COBALT = str(Path(sys.executable).parent / "cobalt")

pytestmark = pytest.mark.slow  # the commands as processes


def _cobalt(root: Path, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([COBALT, *args], cwd=root, capture_output=True, text=True, timeout=120, input=stdin)


def _grade(root: Path) -> None:
    done = _cobalt(root, "grade", "--input", "labelled.jsonl", "--grader", "graders/dates.py", "--model", "openai/a",
                   "--model", "openai/b")
    assert done.returncode == 0, done.stderr


def test_every_studio_step_is_a_plain_command(studio_root: Path, llm: FakeLLM) -> None:
    drafted = _cobalt(studio_root, "grader", "draft", "labelled.jsonl", "--json")
    assert drafted.returncode == 0, drafted.stderr
    info = json.loads(drafted.stdout)
    assert info["grader_path"] == str(studio_root / "graders" / "dates.py") and info["samples_shown"] == 10
    assert llm.count() == 1
    v1 = load_grader(studio_root / "graders" / "dates.py")

    shown = _cobalt(studio_root, "grader", "show", "graders/dates.py")
    assert shown.stdout.splitlines()[1:4] == ["  1  - Grade whether the answer gives the date the user asked for.",
                                              "  2  # Format", "  3    - The date is written out."]
    _grade(studio_root)
    edited = _cobalt(studio_root, "grader", "edit", "graders/dates.py", "3", f"The date is written as {MARK}.")
    assert edited.returncode == 0, edited.stderr
    v2 = load_grader(studio_root / "graders" / "dates.py")
    assert v2.cards[0].specs == (f"The date is written as {MARK}.",) and f"#{v1.short_hash} -> #{v2.short_hash}" \
        in edited.stdout
    _grade(studio_root)
    assert llm.count() == 1 + 20 + 20

    versions = _cobalt(studio_root, "grader", "versions", "dates")
    assert "openai/a: v2: 90% exact, within one 100%, MAE 0.10; v1: 60%, 70%, 0.70" in versions.stdout
    assert "panel: v2: 90% exact, within one 100%, MAE 0.10; v1: 60%, 70%, 0.70" in versions.stdout

    exported = _cobalt(studio_root, "grader", "export", "dates", "--version", "1", "-o", "out/v1.py")
    assert exported.returncode == 0, exported.stderr
    assert load_grader(studio_root / "out" / "v1.py").hash == v1.hash  # the file graded as v1, though edited since
    assert "Samples (10, 10 labelled): out/dates.samples.jsonl" in exported.stdout
    assert 'calibrated("out/v1.py", min_kappa=0.7)  (calibrated for openai/a, openai/b)' in exported.stdout
    assert "10 labelled samples: the gate asks for 50 before it trusts a calibration" in exported.stdout

    reopened = _cobalt(studio_root, "studio", "--grader", "graders/dates.py", stdin="versions\nquit\n")
    assert f"10 samples from {studio_root / 'labelled.jsonl'}" in reopened.stdout  # those it was graded on
    assert f"grader dates #{v2.short_hash}" in reopened.stdout and "v2  #" in reopened.stdout


def test_the_studio_reads_commands_from_a_pipe(studio_root: Path, llm: FakeLLM) -> None:
    done = _cobalt(studio_root, "studio", "labelled.jsonl", "--model", "openai/a",
                   stdin="draft\ngrade\nedit 99\nversions\nsample d7\ncal\niterations 2\ngrade\ndis\nquit\n")
    assert done.returncode == 0, done.stderr
    assert "drafted by openai/gpt-4o-mini" in done.stdout
    assert "versions (openai/a): v1: 60% exact, within one 70%, MAE 0.70" in done.stdout
    assert "error: Grader 'dates' has lines 1 to 5; there is no line 99" in done.stdout  # the session goes on
    assert "sample d7 (line 8), truth -3\nuser message:\nWhat is the date for d7?" in done.stdout
    assert "openai/a: confusion, truth (rows) x grade" in done.stdout  # `cal`: the whole calibration
    # the draft, 10 gradings, then with 2 iterations 10 more: iteration 1 came from the cache
    assert llm.count() == 1 + 10 + 10 and "10 new calls (10 from the cache)" in done.stdout
    assert "#1 -1: a gives d7 -1" in done.stdout and "#2 -1: a gives d7 -1" in done.stdout
    assert done.stdout.rstrip().endswith("bye")


def test_bad_input_is_one_line_and_exit_2(studio_root: Path) -> None:
    (studio_root / "hand.py").write_text("from cobalt_lib import grader\n\n# mine\ngrader = grader('h').spec('x')\n")
    refused = _cobalt(studio_root, "grader", "edit", "hand.py", "1", "y")
    assert refused.returncode == 2 and refused.stderr.strip() == (
        "error: hand.py is not in the form cobalt writes, so its comments and code would be lost; pass --output "
        "NEW.py to write the edited grader there.")
    assert _cobalt(studio_root, "grader", "edit", "hand.py", "1", "y", "-o", "new.py").returncode == 0
    assert load_grader(studio_root / "new.py").specs == ("y",)
    missing = _cobalt(studio_root, "studio")
    assert missing.returncode == 2 and missing.stderr.startswith("error: Give the labelled samples: cobalt studio")
    bad = _cobalt(studio_root, "studio", "labelled.jsonl", "--model", "gpt-4o")
    assert bad.returncode == 2 and "must be provider/name" in bad.stderr
    none = _cobalt(studio_root, "grader", "versions", "nothing")
    assert none.returncode == 0 and "No grading run of this grader yet" in none.stdout


#: $EDITOR that breaks the file the first time it is opened and makes a real edit the second time.
TWO_TRIES = """import pathlib, sys
path, tries = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[0]).with_suffix(".tries")
first = not tries.exists()
tries.write_text("1")
text = path.read_text()
fixed = text.replace("grader = ((", "grader = (").replace("polite.", "polite and short.")
path.write_text(text.replace("grader = (", "grader = ((") if first else fixed)
"""


def test_a_broken_edit_in_the_editor_goes_back_to_the_editor(studio_root: Path, llm: FakeLLM, tmp_path: Path) -> None:
    editor = tmp_path / "editor.py"
    editor.write_text(TWO_TRIES, encoding="utf-8")
    done = subprocess.run([COBALT, "studio", "labelled.jsonl", "--model", "openai/a"], cwd=studio_root, text=True,
                          capture_output=True, timeout=120, input="draft\nedit\ny\nquit\n",
                          env={**os.environ, "EDITOR": f"{sys.executable} {editor}"})
    assert done.returncode == 0, done.stderr
    assert "failed to load: SyntaxError: " in " ".join(done.stdout.split())  # said (wrapped), the editor again
    assert "edit it again? [Y/n] y" in done.stdout and "- The answer is polite and short." in done.stdout
    assert not list((studio_root / ".cobalt" / "studio" / "dates").glob("editing-*"))  # no leftover
