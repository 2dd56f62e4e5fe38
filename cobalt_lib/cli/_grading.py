"""The grading commands, one adapter over `cobalt_lib.grading`: `cobalt grade` (a grader over labelled
samples across models, with its calibration), `cobalt calibrate` (any evaluator against its human labels),
`cobalt labels export|import` (labels as JSONL, graders' in the seed's sample shape) and `cobalt grader
draft|show|edit|versions|export` (the studio's steps as plain commands for scripts and CI). The studio's
interactive prompt is `_studio.py`."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from .._numbers import fixed
from ._app import Group, _App, app
from ._common import console, print_json, project_config, warn

if TYPE_CHECKING:
    from ..grading._grade import GradeOutcome
    from ..grading._grader_versions import Exported, GraderVersion
    from ..grading.graders._deck import Grader


# --------------------------------------------------------------------------------------------- cobalt grade


@app.command()
def grade(
    input: Annotated[Path, typer.Option("--input", "-i", metavar="SAMPLES.jsonl",
                                        help="JSONL of {userMessage, assistantResponse, id?, score?, metadata?}.")],
    grader: Annotated[Path, typer.Option("--grader", "-g", metavar="GRADER.py",
                                         help="A Python file holding the grader (a variable named `grader`).")],
    model: Annotated[list[str], typer.Option("--model", metavar="PROVIDER/NAME",
                                             help="A judge model, e.g. openai/gpt-4o; repeat for several.")],
    iterations: Annotated[int, typer.Option(min=1, help="Gradings of each sample by each model.")] = 1,
    concurrency: Annotated[int | None, typer.Option(min=1, help="Gradings in flight (default: config's).")] = None,
    output: Annotated[Path | None, typer.Option("--output", "-o", help="Where to write the results JSONL.")] = None,
    tag: Annotated[list[str] | None, typer.Option("--tag", help="A tag for the grading run; repeatable.")] = None,
    dagster: Annotated[bool, typer.Option("--dagster/--no-dagster",
                                          help="Also record the run in the project's Dagster history.")] = True,
    json_: Annotated[bool, typer.Option("--json", help="Print the results and calibration as JSON.")] = False,
) -> None:
    """Grade every sample with every model; with ground-truth scores, show how far to trust the grader.

    Calibration per model and for the panel (the median of the models): exact and within-one rates,
    mean absolute error, signed bias, quadratic weighted kappa with a bootstrap interval, Spearman,
    confusion matrix, self-consistency across iterations, coverage and the disagreements, and a
    verdict. The run is stored like any run: `cobalt history`, `show`, `compare` and `export` see it.
    Exit codes: 0 graded, 1 a model gave no usable answer (the stored run FAILED), 2 bad usage or input.
    """
    from ..grading._grade import GradeOptions
    from ..grading._grade import grade as run_grade

    config = project_config()
    options = GradeOptions(input=input, grader=grader, models=model, iterations=iterations, concurrency=concurrency,
                           output=output, dagster=dagster, tags=tag or [])
    outcome = run_grade(config, options)
    if json_:
        print_json(outcome.payload())
    else:
        _print_grading(outcome)
    warn(outcome.warnings)
    if not outcome.passed:
        typer.echo(f"error: grading run {outcome.run_id} FAILED: {'; '.join(outcome.failures)}", err=True)
        raise typer.Exit(1)


def _print_grading(outcome: GradeOutcome) -> None:
    from .._numbers import count
    from ..grading._render_calibration import print_calibration

    out = console()
    cal = outcome.calibration
    graded = sum(r.score is not None for r in outcome.results)
    out.print(f"Graded {count(cal.samples, 'sample')} x {count(len(cal.models), 'model')} x "
              f"{count(cal.iterations, 'iteration')} with "
              f"{outcome.grader} #{outcome.grader_hash[:12]}: {graded} of {len(outcome.results)} answers usable.")
    print_calibration(out, cal, previous=_previous_lines(outcome))
    out.print(f"Results: {outcome.results_path}")
    out.print(f"Run id: {outcome.run_id}  (cobalt export {outcome.run_id} --format markdown)")


def _previous_lines(outcome: GradeOutcome) -> list[str]:
    prev = outcome.previous
    if prev is None:
        return []
    rubric = "same rubric" if prev.same_rubric else f"rubric #{prev.grader_hash[:12]}"
    lines = []
    for model, c in outcome.calibration.models.items():
        before = prev.weighted_kappa.get(model)
        if before is not None and c.weighted_kappa is not None:
            lines.append(f"{model}: kappa {fixed(c.weighted_kappa, 2)}, was {fixed(before, 2)} in grading run "
                         f"{prev.run_id} ({rubric}); compare them: cobalt compare {prev.run_id} {outcome.run_id}")
    return lines


# --------------------------------------------------------------------------------------------- cobalt calibrate


@app.command()
def calibrate(
    experiment: Annotated[str, typer.Argument(metavar="EXPERIMENT", help="The experiment whose labels to use.")],
    evaluator: Annotated[str, typer.Option("--evaluator", metavar="NAME", help="The evaluator to calibrate.")],
    run: Annotated[str | None, typer.Option("--run", metavar="RUN",
                                            help="The run whose verdicts to use (default: the newest completed "
                                                 "one with the evaluator).")] = None,
    json_: Annotated[bool, typer.Option("--json", help="Print the calibration as JSON.")] = False,
) -> None:
    """How far an evaluator agrees with the people who labelled its items, with the figures its scale needs.

    -3..3 (graders): exact, within one step, MAE, bias, weighted kappa. pass/fail: accuracy, precision,
    recall, F1, Cohen's kappa. 0..1: Spearman, kappa over five bins, MAE, bias. Each with its 95%
    interval, the confusion matrix, the disagreements (with the judge's reason and the person's note) and
    the verdict. The calibration is stored, keyed by the evaluator's prompt hash and model, for the
    `calibrated()` gate. Labels come from the pages (`cobalt serve`) or `cobalt labels import`.
    """
    from ..grading._calibrate import calibrate_evaluator

    outcome = calibrate_evaluator(project_config(), experiment, evaluator, run=run)
    cal, prev = outcome.calibration, outcome.previous
    if json_:
        print_json({**cal.model_dump(mode="json"),
                    "previous": prev.model_dump(mode="json") if prev else None, "warnings": outcome.warnings})
    else:
        from ..grading._render_judge_calibration import print_judge_calibration
        from ..render._units import decimal

        line = None
        if prev is not None:
            prompt = "same prompt" if prev.same_prompt else f"prompt #{prev.prompt_hash[:12]}"
            line = (f"previous calibration (run {prev.run_id}, {prompt}): {cal.kappa_name} {decimal(prev.kappa)} "
                    f"-> {decimal(cal.kappa)}")
        print_judge_calibration(console(), cal, line)
    warn(outcome.warnings)


# --------------------------------------------------------------------------------------------- cobalt labels


labels = _App(name="labels", cls=Group, no_args_is_help=True, rich_markup_mode="markdown",
              help="Move human labels in and out of the store as JSONL.")
app.add_typer(labels, name="labels")


@labels.command("export")
def labels_export(
    experiment: Annotated[str, typer.Argument(metavar="EXPERIMENT", help="The experiment whose labels to export.")],
    evaluator: Annotated[str | None, typer.Option("--evaluator", metavar="NAME",
                                                  help="Only this evaluator's labels.")] = None,
    output: Annotated[Path | None, typer.Option("--output", "-o", metavar="FILE.jsonl",
                                                help="Write here (default: stdout).")] = None,
) -> None:
    """Write the experiment's current labels, one JSON object a line.

    Each line has experiment, evaluator, item_id, value, note, who and set_at. A grader's labels also
    carry the seed's sample fields (id, userMessage, assistantResponse, score), so the file is a samples
    file for `cobalt grade --input` too.
    """
    from ..grading._labels_file import export_lines, write_export

    lines = export_lines(project_config(), experiment, evaluator)
    text = write_export(lines, output)
    if output is None:
        sys.stdout.write(text)
    else:
        typer.echo(f"Wrote {len(lines)} label{'s' if len(lines) != 1 else ''} to {output}", err=True)


@labels.command("import")
def labels_import(
    file: Annotated[Path, typer.Argument(metavar="FILE.jsonl", help="Labels, one JSON object a line.")],
    experiment: Annotated[str | None, typer.Option("--experiment", metavar="NAME",
                                                   help="For lines without an experiment.")] = None,
    evaluator: Annotated[str | None, typer.Option("--evaluator", metavar="NAME",
                                                  help="For lines without an evaluator.")] = None,
    who: Annotated[str | None, typer.Option("--who", help="Who labelled, for lines that do not say.")] = None,
) -> None:
    """Add labels from a JSONL file (as `export` writes, or the seed's samples with --experiment and --evaluator).

    Every line is checked first: a bad line (not JSON, an unknown evaluator, a value off the evaluator's
    scale) is named with what to fix, nothing is imported and the exit code is 2. The newest label of an
    item wins; earlier ones stay in the store's history.
    """
    from ..grading._labels_file import import_labels

    done = import_labels(project_config(), file, experiment=experiment, evaluator=evaluator, who=who)
    for key, n in done.per_evaluator.items():
        typer.echo(f"{key}: {n} label{'s' if n != 1 else ''}")
    typer.echo(f"Imported {done.written} label{'s' if done.written != 1 else ''} from {file}")
    warn(done.warnings)


# --------------------------------------------------------------------------------------------- cobalt grader


grader_app = _App(name="grader", cls=Group, no_args_is_help=True, add_completion=False,
                  rich_markup_mode="markdown",
                  help="Draft, read, edit, compare and export graders (the steps of `cobalt studio`).")
app.add_typer(grader_app, name="grader")


@grader_app.command("draft")
def grader_draft(
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


@grader_app.command("show")
def grader_show(grader: Annotated[Path, typer.Argument(metavar="GRADER.py", help="A grader file.")],
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


@grader_app.command("edit")
def grader_edit(
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


@grader_app.command("versions")
def grader_versions(
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
def grader_export(
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
