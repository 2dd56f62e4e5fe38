"""`cobalt studio` as a person uses it: the console script in a real pseudo-terminal (pexpect), against the
loopback judge. Ten labelled samples; draft, grade with two models, read a disagreement, edit a card in
place, re-grade (only the edit's calls are made), the versions go from 60% to 90% exact, an edit in
$EDITOR, export; the exported grader scores the same in `cobalt grade`, from the cache."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pexpect
import pytest
from fakellm import FakeLLM
from studio_setup import MARK, TRUTH, scripted_grade, studio_project  # noqa: F401  (fixture)

from cobalt_lib import Store, load_config

pytestmark = pytest.mark.slow  # the studio as a process in a terminal

BIN = Path(sys.executable).parent
PROMPT = "studio>"
PASTE_ON = "\x1b[?2004h"
_ESCAPES = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b[()][A-Z0-9]|\r")

#: $EDITOR for the test: rewrites the Tone card's spec in the file it is given.
EDITOR = """import pathlib, sys
path = pathlib.Path(sys.argv[1])
path.write_text(path.read_text().replace("The answer is polite.", "The answer is polite and short."))
"""


def _spawn(root: Path, editor: Path) -> pexpect.spawn:
    # COLUMNS and LINES as the pty's own size: an inherited COLUMNS (a test runner's) would win over it
    env = {**os.environ, "PROMPT_TOOLKIT_NO_CPR": "1", "NO_COLOR": "1", "TERM": "xterm", "COLUMNS": "220",
           "LINES": "60", "EDITOR": f"{sys.executable} {editor}"}
    return pexpect.spawn(str(BIN / "cobalt"), ["studio", "labelled.jsonl", "--model", "openai/a", "--model",
                                               "openai/b"], cwd=str(root), env=env, encoding="utf-8",
                         dimensions=(60, 220), timeout=60)


class Screen:
    """What the terminal showed since the last command, without the escape sequences."""

    def __init__(self, child: pexpect.spawn) -> None:
        self.child = child

    def command(self, line: str) -> str:
        self.child.sendline(line)
        return self.prompt()

    def prompt(self) -> str:
        """Everything up to the next studio prompt (prompt_toolkit turns bracketed paste on as each prompt
        starts: the marker that the command's output is complete)."""
        self.child.expect_exact(PASTE_ON)
        shown = _ESCAPES.sub("", self.child.before or "")
        self.child.expect_exact(PROMPT)
        return shown


def test_studio_session_in_a_terminal(studio_root: Path, llm: FakeLLM, tmp_path: Path) -> None:
    editor = tmp_path / "editor.py"
    editor.write_text(EDITOR, encoding="utf-8")
    child = _spawn(studio_root, editor)
    screen = Screen(child)
    try:
        opening = screen.prompt()
        assert "10 samples" in opening and "10 labelled (-3: 2, -2: 1, -1: 1, +0: 1, +1: 2, +2: 2, +3: 1)" in opening
        assert "models: openai/a, openai/b" in opening and "No grader yet" in opening

        drafted = screen.command("draft")
        assert "drafted by openai/gpt-4o-mini from 10 samples" in drafted and llm.count() == 1
        assert "  3    - The date is written out." in drafted and "  2  # Format" in drafted

        graded = screen.command("grade")
        assert llm.count() == 21  # 10 samples x 2 models, after the draft
        assert "10/10" in graded  # the live progress, finished
        assert "versions (openai/a): v1: 60% exact, within one 70%, MAE 0.70" in graded
        assert "4 samples with a disagreement" in graded

        shown = screen.command("dis")
        d7 = next(line for line in shown.splitlines() if line.strip().startswith("d7"))
        assert "What is the date for d7?" in d7 and "-3" in d7
        assert "-1: a gives d7 -1" in d7 and "-1: b gives d7 -1" in d7  # both models, side by side

        child.sendline("edit 3")
        child.expect_exact("line 3> ")
        child.expect_exact("The date is written out.")  # the line, ready to edit in place
        child.send("\x15")  # Ctrl-U: clear it
        edited = screen.command(f"The date is written as {MARK} (YYYY-MM-DD).")
        assert "new version #" in edited and f"  3    - The date is written as {MARK} (YYYY-MM-DD)." in edited

        llm.requests.clear()
        regraded = screen.command("grade")
        assert llm.count() == 20 and all(MARK in r["body"]["messages"][1]["content"] for r in llm.requests)
        assert "20 new calls (0 from the cache)" in regraded
        assert "v2: 90% exact, within one 100%, MAE 0.10; v1: 60%, 70%, 0.70" in regraded

        versions = screen.command("versions")
        for model in ("openai/a", "openai/b", "panel"):
            assert f"{model}: v2: 90% exact, within one 100%, MAE 0.10; v1: 60%, 70%, 0.70" in versions

        in_editor = screen.command("edit")
        assert "new version #" in in_editor and "- The answer is polite and short." in in_editor
        back = screen.command("use 2")
        assert "now at v2" in back

        llm.requests.clear()
        exported = screen.command("export")
        assert ": graders/dates.py" in exported and "Samples (10, 10 labelled): graders/dates.samples.jsonl" in exported
        assert 'Gate on it: calibrated("graders/dates.py", min_kappa=0.7)' in exported
        child.sendline("quit")
        child.expect(pexpect.EOF)
    finally:
        child.close(force=True)
    assert child.exitstatus == 0 and llm.count() == 0

    done = subprocess.run([str(BIN / "cobalt"), "grade", "--input", "graders/dates.samples.jsonl", "--grader",
                           "graders/dates.py", "--model", "openai/a", "--model", "openai/b", "--json"],
                          cwd=studio_root, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert llm.count() == 0 and all(r["cached"] for r in data["results"])  # the studio paid for these already
    assert [r["score"] for r in data["results"] if r["model"] == "openai/b"] == [scripted_grade(k, True)
                                                                                 for k in TRUTH]
    assert data["calibration"]["openai/a"]["exact_match_rate"] == 0.9
    studio_run = Store.for_config(load_config(studio_root)).get_run(
        json.loads(subprocess.run([str(BIN / "cobalt"), "grader", "versions", "dates", "--input", "labelled.jsonl",
                                   "--json"], cwd=studio_root, capture_output=True, text=True,
                                  timeout=60).stdout)[1]["run_id"])
    assert studio_run is not None and data["grader_hash"] == studio_run["config"]["grading"]["grader"]["hash"]
