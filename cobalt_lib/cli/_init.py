"""`cobalt init`: a config file, an offline example experiment, and `.cobalt/` in .gitignore."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from ._app import app

CONFIG_TEMPLATE = '''\
# cobalt configuration: every key is optional (docs/configuration.md lists them all).
# Top-level keys go here, above the tables: in TOML a key written below a [table] line
# belongs to that table, so `timeout = 60` appended at the end of this file would be `ci.timeout`.
test_dir = "experiments"
test_match = ["**/*.cobalt.py", "**/*_experiment.py"]
output_dir = ".cobalt"
concurrency = 5
timeout = 30

# Tables: each key below belongs to the [table] above it; add top-level keys above [judge].
[judge]
provider = "openai"        # openai | anthropic | openrouter; the key comes from OPENAI_API_KEY etc.
model = "gpt-4o-mini"

[cache]
enabled = true
ttl = "7d"

[ci]
# Any failed or timed-out agent call, eval-error or duplicate item id fails the run (exit 1).
# To let some pass, set the largest share of attempts that may fail, e.g. 0.05 for 5%:
max_error_rate = 0
'''

EXAMPLE_TEMPLATE = '''\
"""An example experiment that runs offline: `cobalt run`."""

from cobalt_lib import Dataset, Evaluator, experiment, threshold

dataset = Dataset([
    {"input": "2 + 2", "expected_output": "4"},
    {"input": "3 * 5", "expected_output": "15"},
    {"input": "10 - 7", "expected_output": "3"},
    {"input": "9 / 3", "expected_output": "3"},
])


def is_number(ctx):
    """1 when the output parses as a number."""
    try:
        float(ctx.output)
        return 1.0
    except (TypeError, ValueError):
        return {"score": 0.0, "reason": f"not a number: {ctx.output!r}"}


@experiment(
    "example",
    dataset,
    evaluators=[
        Evaluator(name="correct", type="exact-match", field="expected_output"),
        Evaluator(name="numeric", type="function", fn=is_number),
    ],
    assertions=[threshold("correct", 0.75)],
)
def calculator(ctx):
    """Replace this with a call to your agent."""
    value = eval(ctx.input, {"__builtins__": {}})  # a toy agent: the expressions above only
    return {"output": f"{value:g}", "metadata": {"model": "python-eval"}}
'''


def _write(path: Path, text: str, done: list[str], skipped: list[str]) -> None:
    if path.exists():
        skipped.append(str(path))
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    done.append(str(path))


@app.command()
def init(
    directory: Annotated[Path, typer.Argument(help="Project directory (default: the current one).")] = Path("."),
    example: Annotated[bool, typer.Option(
        "--example", help="Write experiments/example.cobalt.py even when the project already has a config.")] = False,
) -> None:
    """Set up a project: cobalt.toml, experiments/example.cobalt.py and `.cobalt/` in .gitignore.

    Never overwrites a file; running it again only says what it skipped. In a project that already
    has a config, the example experiment is written only with --example (so a deleted one stays deleted).

    Example: `cobalt init && cobalt run`
    """
    from ..config._config import CONFIG_FILES, find_project_root

    root = directory.resolve()
    root.mkdir(parents=True, exist_ok=True)
    done: list[str] = []
    skipped: list[str] = []
    existing = next((root / name for name in CONFIG_FILES if (root / name).is_file() and
                     find_project_root(root)[1] == root / name), None)
    if existing is not None:
        skipped.append(f"{existing} (configuration already present)")
    else:
        outer = find_project_root(root.parent)[1]
        _write(root / "cobalt.toml", CONFIG_TEMPLATE, done, skipped)
        if outer is not None:  # a nested project is legal but rarely meant: say which config now wins
            typer.echo(f"note: {root} is inside the cobalt project of {outer}; commands run from here on "
                       f"use {root / 'cobalt.toml'} and results under {root / '.cobalt'}")
    example_path = root / "experiments" / "example.cobalt.py"
    if existing is None or example:
        _write(example_path, EXAMPLE_TEMPLATE, done, skipped)
    elif not example_path.exists():  # the user may have deleted it on purpose: never bring it back unasked
        skipped.append(f"{example_path} (the project already exists; `cobalt init --example` writes it)")
    else:
        skipped.append(str(example_path))
    _ignore_output(root / ".gitignore", done, skipped)
    for path in done:
        typer.echo(f"created  {path}")
    for path in skipped:
        typer.echo(f"skipped  {path}")
    typer.echo("next: cobalt run")


def _ignore_output(gitignore: Path, done: list[str], skipped: list[str]) -> None:
    lines = gitignore.read_text(encoding="utf-8").splitlines() if gitignore.exists() else []
    if any(line.strip().rstrip("/") in (".cobalt", "/.cobalt") for line in lines):
        skipped.append(f"{gitignore} (already ignores .cobalt/)")
        return
    prefix = "" if not lines or lines[-1] == "" else "\n"
    with gitignore.open("a", encoding="utf-8") as fh:
        fh.write(f"{prefix}# cobalt results, cache and store\n.cobalt/\n")
    done.append(f"{gitignore} (added .cobalt/)")
