"""Every command's options and help text: one meaning per short flag, help that reads as prose."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import typer

from cobalt_lib.cli import app, load_commands

COBALT = str(Path(sys.executable).parent / "cobalt")


def test_each_short_flag_means_one_thing_in_every_command() -> None:
    load_commands()  # each command's module registers it on first use: all of them, to read them all
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
    words = " ".join(text.replace("│", " ").split())
    assert "FORMAT" in text and "csv, markdown, json, junit, baseline, every-eval-ever or inspect" in words
    assert "--junit-items-fail" in text and "<bool>" not in text


def _commands() -> dict[str, list[str]]:
    """Every top-level command of the typer app, with a group's subcommands."""
    load_commands()
    root = typer.main.get_command(app)
    return {name: list(getattr(command, "commands", {}) or []) for name, command in root.commands.items()}


def test_help_lists_the_commands_in_their_deliberate_order() -> None:
    from cobalt_lib.cli._app import COMMAND_ORDER

    assert sorted(_commands()) == sorted(COMMAND_ORDER), "a new command takes its place in COMMAND_ORDER"
    text = help_text()
    listed = [line.split()[1] for line in text.splitlines() if line.startswith("│ ") and line[2:3].isalpha()]
    assert listed == list(COMMAND_ORDER)


def test_the_docs_command_table_lists_every_command_and_subcommand() -> None:
    import re

    page = (Path(__file__).parents[2] / "docs" / "cli.md").read_text(encoding="utf-8")
    table = page[page.index("| command | what it does |"):page.index("`cobalt --help` lists them in this order.")]
    rows = re.findall(r"^\| \[`cobalt ([^`]+)`\]\(#([\w-]+)\)", table, re.M)
    documented = {words.split()[0]: [w for w in re.split(r"[\s\\|]+", words)[1:] if w] for words, _ in rows}
    assert documented == _commands()
    from cobalt_lib.cli._app import COMMAND_ORDER

    assert [words.split()[0] for words, _ in rows] == list(COMMAND_ORDER)  # in the order `cobalt --help` has
    anchors = {re.sub(r"[^\w\- ]", "", heading).strip().lower().replace(" ", "-")
               for heading in re.findall(r"^#+ (.+)$", page, re.M)}
    assert {anchor for _, anchor in rows} <= anchors
