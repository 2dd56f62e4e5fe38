"""`cobalt grader draft|show|edit|versions|export`: the studio's steps as plain commands for scripts and CI."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from ._app import Group, _App, app
from ._common import console, print_json, project_config

if TYPE_CHECKING:
    from ..grading._grader_versions import Exported, GraderVersion
    from ..grading.graders._deck import Grader

grader_app = _App(name="grader", cls=Group, no_args_is_help=True, add_completion=False,
                  rich_markup_mode="markdown",
                  help="Draft, read, edit, compare and export graders (the steps of `cobalt studio`).")
app.add_typer(grader_app, name="grader")


@grader_app.command()
def draft(
    samples: Annotated[Path, typer.Argument(metavar="SAMPLES.jsonl", help="Labelled samples: userMessage, "
                                            "assistantResponse, score -3..3.")],
    output: Annotated[Path | None, typer.Option("--output", "-o", help="The grader file to write "
                                                "(default: graders/<name>.py).")] = None,
    name: Annotated[str | None, typer.Option(help="The grader's name (default: the model's choice).")] = None,
    model: Annotated[str | None, typer.Option(metavar="PROVIDER/NAME", help="The model that drafts "
                                              "(default: [judge]).")] = None,
    guidance: Annotated[str | None, typer.Option(help="What you want graded, in your words.")] = None,
    overwrite: Annotated[bool, typer.Option(help="Replace an existing file.")] = False,
    json_: Annotated[bool, typer.Option("--json", help="Print what was written as JSON.")] = False,
) -> None:
    """Draft a grader from labelled samples with the judge model, written as spec and cards."""
    from ..grading._grader_draft import draft_grader
    from ..grading._grader_versions import export_grader
    from ..grading.graders._samples import load_samples

    config = project_config()
    drafted = draft_grader(config, load_samples(samples), name=name, model=model, guidance=guidance)
    written = export_grader(config, drafted.grader, None, output=output, overwrite=overwrite)
    if json_:
        print_json({**written.model_dump(mode="json"), "judge_model": drafted.judge_model,
                    "samples_shown": drafted.samples_shown, "tokens": drafted.tokens, "cost_usd": drafted.cost_usd})
        return
    _outline(drafted.grader)
    console().print(f"Drafted by {drafted.judge_model} from {drafted.samples_shown} labelled samples: "
                    f"{written.grader_path}\nGrade it: cobalt grade --input {samples} --grader "
                    f"{written.grader_path} --model PROVIDER/NAME")


@grader_app.command()
def show(grader: Annotated[Path, typer.Argument(metavar="GRADER.py", help="A grader file.")],
         json_: Annotated[bool, typer.Option("--json", help="Print the lines as JSON.")] = False) -> None:
    """Print a grader's lines, numbered as `cobalt grader edit` and the studio address them."""
    from ..grading.graders._files import load_grader
    from ..grading.graders._outline import outline

    config = project_config()
    loaded = load_grader(grader, config.root)
    if json_:
        print_json({"grader": loaded.name, "grader_hash": loaded.hash,
                    "lines": [{"number": ln.number, "kind": ln.kind, "depth": ln.depth, "text": ln.text}
                              for ln in outline(loaded)]})
        return
    _outline(loaded)


def _outline(loaded: Grader) -> None:
    from ..grading.graders._outline import outline

    out = console()
    out.print(f"{loaded.name} #{loaded.short_hash}", markup=False)
    for ln in outline(loaded):
        marker = {"spec": "-", "card": "#", "context": "@"}[ln.kind]
        out.print(f"{ln.number:>3}  {'  ' * ln.depth}{marker} {ln.text}", markup=False, highlight=False)


@grader_app.command()
def edit(
    grader: Annotated[Path, typer.Argument(metavar="GRADER.py", help="A grader file.")],
    line: Annotated[int, typer.Argument(metavar="LINE", help="The line's number (`cobalt grader show`).")],
    text: Annotated[str | None, typer.Argument(metavar="TEXT", help="The new text.")] = None,
    add: Annotated[bool, typer.Option("--add", help="Add TEXT as a spec after LINE instead.")] = False,
    card: Annotated[bool, typer.Option("--card", help="Add a card titled TEXT after LINE's card instead.")] = False,
    spec: Annotated[str | None, typer.Option(help="With --card: the new card's first spec.")] = None,
    delete: Annotated[bool, typer.Option("--delete", help="Delete LINE (a card with all it holds).")] = False,
    output: Annotated[Path | None, typer.Option("--output", "-o", help="Write the edited grader here "
                                                "(default: in place).")] = None,
) -> None:
    """Rewrite, add or delete one line of a grader; the file is written back in the builder's form."""
    from .._errors import ConfigError
    from ..grading._grader_versions import export_grader
    from ..grading.graders._files import load_grader
    from ..grading.graders._outline import add_card, add_spec, delete_line, set_line
    from ..grading.graders._source import grader_source

    if sum((add, card, delete)) > 1:
        raise ConfigError("Give one of --add, --card and --delete (none: replace the line's text).")
    if not delete and text is None:
        raise ConfigError("Give the new TEXT (or --delete).")
    config = project_config()
    loaded = load_grader(grader, config.root)
    path = Path(loaded.source or grader)
    if output is None and path.read_text(encoding="utf-8") != grader_source(loaded):
        raise ConfigError(f"{grader} is not in the form cobalt writes, so its comments and code would be lost; "
                          "pass --output NEW.py to write the edited grader there.")
    changed = (delete_line(loaded, line) if delete else add_spec(loaded, line, text or "") if add
               else add_card(loaded, line, text or "", spec) if card else set_line(loaded, line, text or ""))
    written = export_grader(config, changed, None, output=output or path, overwrite=True)
    console().print(f"{written.grader_path}: {loaded.name} #{loaded.short_hash} -> #{changed.short_hash}")


@grader_app.command()
def versions(
    name: Annotated[str, typer.Argument(metavar="GRADER", help="The grader's name, or its file.")],
    input: Annotated[Path | None, typer.Option("--input", "-i", metavar="SAMPLES.jsonl",
                                               help="Only its gradings on this samples file.")] = None,
    json_: Annotated[bool, typer.Option("--json", help="Print the versions as JSON.")] = False,
) -> None:
    """Compare a grader's versions (its rubrics) by their latest grading: exact, within one, MAE per model."""
    from ..grading._grader_versions import grader_versions

    config = project_config()
    found = grader_versions(config, _grader_name(name, config.root), input)
    if json_:
        print_json([v.model_dump(mode="json") for v in found])
        return
    print_versions(found)


def print_versions(found: list[GraderVersion]) -> None:
    from ..grading._grader_versions import comparison

    out = console()
    if not found:
        out.print("No grading run of this grader yet: grade it (cobalt grade, or `grade` in the studio).")
        return
    for v in reversed(found):
        out.print(f"{v.label}  #{v.grader_hash[:12]}  grading run {v.run_id}  ({v.source})", markup=False)
    models = list(dict.fromkeys(m for v in found for m in v.models))
    for model in models:
        out.print(f"{model}: {comparison(found, model)}", markup=False)


def _grader_name(name: str, root: Path) -> str:
    from ..grading.graders._files import load_grader

    return load_grader(name, root).name if name.endswith(".py") else name


@grader_app.command("export")
def export_(
    name: Annotated[str, typer.Argument(metavar="GRADER", help="The grader's name, or its file.")],
    version: Annotated[int | None, typer.Option("--version", min=1, help="The version number (default: the newest).")]
    = None,
    input: Annotated[Path | None, typer.Option("--input", "-i", metavar="SAMPLES.jsonl",
                                               help="Only versions graded on this samples file.")] = None,
    output: Annotated[Path | None, typer.Option("--output", "-o", help="The grader file to write "
                                                "(default: graders/<name>.py).")] = None,
    samples: Annotated[Path | None, typer.Option("--samples", help="Where to write its samples "
                                                 "(default: beside it, <name>.samples.jsonl).")] = None,
    overwrite: Annotated[bool, typer.Option(help="Replace existing files.")] = False,
    json_: Annotated[bool, typer.Option("--json", help="Print what was written as JSON.")] = False,
) -> None:
    """Write a graded version of a grader and the samples it was graded on, ready for `Evaluator(type="grader")`."""
    from ..grading._grader_versions import export_version

    config = project_config()
    written = export_version(config, _grader_name(name, config.root), version, samples=input, output=output,
                             samples_output=samples, overwrite=overwrite)
    if json_:
        print_json(written.model_dump(mode="json"))
        return
    print_exported(written)


def _shown(path: str) -> str:
    """`path` relative to the working directory when inside it, as a user would type it."""
    try:
        return Path(path).relative_to(Path.cwd()).as_posix()
    except ValueError:
        return path


def print_exported(written: Exported) -> None:
    from ..grading.calibration._verdict import MIN_RELIABLE_SAMPLES

    out = console()
    path = _shown(written.grader_path)
    out.print(f"Grader {written.grader} #{written.grader_hash[:12]}: {path}", markup=False)
    if written.samples_path:
        out.print(f"Samples ({written.samples}, {written.labelled} labelled): {_shown(written.samples_path)}",
                  markup=False)
    model = written.calibrated_models[0] if written.calibrated_models else "PROVIDER/NAME"
    vendor, _, bare = model.partition("/")
    out.print(f'Use it: Evaluator(name="{written.grader}", type="grader", grader="{path}", '
              f'provider="{vendor}", model="{bare}")', markup=False)
    if not written.calibrated_models:
        out.print("Not calibrated yet: cobalt grade it against labelled samples before gating on it.")
        return
    out.print(f'Gate on it: calibrated("{path}", min_kappa=0.7)  (calibrated for '
              f"{', '.join(written.calibrated_models)})", markup=False)
    if written.samples_path and written.labelled < MIN_RELIABLE_SAMPLES:
        out.print(f"  {written.labelled} labelled samples: the gate asks for {MIN_RELIABLE_SAMPLES} before it "
                  "trusts a calibration; label more, or pass min_labels=.", markup=False)
