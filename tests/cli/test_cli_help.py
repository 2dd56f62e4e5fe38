"""Every command's options and help text: one meaning per short flag, help that reads as prose."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import typer

from cobalt_lib.cli import app

COBALT = str(Path(sys.executable).parent / "cobalt")


def test_each_short_flag_means_one_thing_in_every_command() -> None:
    root = typer.main.get_command(app)
    meanings: dict[str, set[str]] = {}
    commands = getattr(root, "commands", {})
    assert {"run", "export", "history", "show"} <= set(commands)
    for name, command in commands.items():
        for param in (p for p in command.params if p.param_type_name == "option"):
            longs = [o for o in [*param.opts, *param.secondary_opts] if o.startswith("--")]
            for short in (o for o in param.opts if not o.startswith("--")):
                meanings.setdefault(short, set()).add(longs[0] if longs else f"{name} {short}")
    assert meanings["-f"] == {"--filter"} and meanings["-e"] == {"--experiment"}
    assert {flag: longs for flag, longs in meanings.items() if len(longs) > 1} == {}


def help_text(*command: str) -> str:
    env = {**os.environ, "COLUMNS": "80", "TERMINAL_WIDTH": "80"}
    result = subprocess.run([COBALT, *command, "--help"], capture_output=True, text=True, timeout=60, env=env)
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_run_help_shows_no_python_types_and_splits_no_word() -> None:
    text = help_text("run")
    assert "<bool>" not in text and "list[" not in text and "<int" not in text and "<str>" not in text
    assert "FILE..." in text and "RUN" in text and "TAG" in text
    assert max(len(line) for line in text.splitlines()) <= 80
    words = " ".join(text.split())
    for word in ("discover", "interrupted", "experiments", "no_regression", "baseline", "summaries", "dashboard"):
        assert word in words, word


def test_export_help_names_the_formats_in_the_help_column_not_in_a_folded_metavar() -> None:
    text = help_text("export")
    assert "FORMAT" in text and "csv, markdown, json, junit or baseline" in " ".join(text.split())
    assert "--junit-items-fail" in text and "<bool>" not in text
