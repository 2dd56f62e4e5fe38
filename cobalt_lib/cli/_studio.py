"""`cobalt studio`: the interactive grader studio, a prompt over `grading.Studio`.

A line-oriented session (prompt_toolkit): each command prints what it did and the prompt returns,
so the history of the session stays on screen and a line is edited in place with the prompt's own
editing keys. Every command here is also a plain command (`cobalt grader ...`, `cobalt grade`).
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from ._app import app
from ._common import console, project_config

if TYPE_CHECKING:
    from rich.console import Console

    from ..grading._grade import GradeOutcome
    from ..grading._studio import SampleGrades, Studio
    from ..results._report import ExperimentReport, ItemResult
    from ..run._plan import RunPlan

HELP = """Commands (each is also a plain command, shown on the right):
  draft [NAME]     draft a grader from the labelled samples with the judge model  cobalt grader draft
  grade            grade every sample with every model, with live progress       cobalt grade
  cal              the calibration: figures, verdicts, confusion matrices        cobalt grade
  dis              the disagreements side by side: sample, truth, grades, notes  cobalt grade
  sample ID        one sample in full, with every grade and its notes
  rubric           the grader's numbered lines                                   cobalt grader show
  edit N           edit line N in place (spec, card title or context value)      cobalt grader edit
  edit             edit the whole grader in $EDITOR
  add N            add a spec after line N                                       cobalt grader edit --add
  card N           add a card after line N's card                                cobalt grader edit --card
  delete N         delete line N                                                 cobalt grader edit --delete
  versions         compare the versions: exact, within one, MAE per model        cobalt grader versions
  use N            go back to version N
  models M [M...]  grade with these models (provider/name)
  iterations N     gradings of each sample by each model
  export [FILE] [--overwrite]  write the grader file and its samples            cobalt grader export
  help, quit"""


@app.command()
def studio(
    samples: Annotated[Path | None, typer.Argument(metavar="SAMPLES.jsonl", help="Labelled samples: userMessage, "
                                                   "assistantResponse, score -3..3 (default: those the "
                                                   "grader was last graded on).")] = None,
    grader: Annotated[Path | None, typer.Option("--grader", "-g", metavar="GRADER.py",
                                                help="Start from this grader instead of a draft.")] = None,
    model: Annotated[list[str] | None, typer.Option("--model", metavar="PROVIDER/NAME",
                                                    help="A model to grade with; repeat for several "
                                                    "(default: [judge]).")] = None,
    iterations: Annotated[int, typer.Option(min=1, help="Gradings of each sample by each model.")] = 1,
    experiment: Annotated[str | None, typer.Option(
        "--experiment", "-e", metavar="NAME", help="Start from the labels people set on an experiment's grader "
        "evaluator (with --evaluator) instead of a samples file.")] = None,
    evaluator: Annotated[str | None, typer.Option("--evaluator", metavar="NAME",
                                                  help="With --experiment: the evaluator whose labels.")] = None,
) -> None:
    """The grader studio: draft a grader from labelled samples, grade it, read the disagreements, edit, re-grade,
    compare the versions and export it. Type `help` in the session for its commands."""
    from .._errors import ConfigError
    from ..grading._studio import Studio

    config = project_config()
    if (experiment is None) != (evaluator is None):
        raise ConfigError("--experiment and --evaluator go together: the labels of one evaluator of one experiment.")
    if experiment is not None and samples is not None:
        raise ConfigError("Give a samples file or --experiment with --evaluator, not both.")
    if experiment is not None and evaluator is not None:
        from ..grading._labels_file import samples_from_labels

        samples = samples_from_labels(config, experiment, evaluator)
    source = samples or _last_samples(config, grader)
    if source is None:
        raise ConfigError("Give the labelled samples: cobalt studio SAMPLES.jsonl (`cobalt labels export` writes "
                          "them from the labels set in the pages).")
    session = Studio(config, source, grader=grader, models=model, iterations=iterations)
    Repl(session, console()).run()


def _last_samples(config: Any, grader: Path | None) -> Path | None:
    """The samples the grader's newest version was graded on, when there is one."""
    if grader is None:
        return None
    from ..grading._grader_versions import grader_versions
    from ..grading.graders._files import load_grader

    versions = grader_versions(config, load_grader(grader, config.root).name)
    found = versions[-1].input if versions else None
    return Path(found) if found and Path(found).is_file() else None


class Prompt:
    """Lines from the person: prompt_toolkit on a terminal (history, completion, in-place editing),
    plain lines from a pipe (`cobalt studio samples.jsonl < script`)."""

    def __init__(self) -> None:
        self.session: Any = None
        if sys.stdin.isatty() and sys.stdout.isatty():
            from prompt_toolkit import PromptSession
            from prompt_toolkit.completion import WordCompleter

            words = [line.split()[0] for line in HELP.splitlines()[1:] if line.strip()] + ["quit"]
            self.session = PromptSession(completer=WordCompleter(words), complete_while_typing=False,
                                         reserve_space_for_menu=0)

    def ask(self, message: str, default: str = "", *, history: bool = True) -> str:
        """One line; EOFError at the end of input (Ctrl-D), KeyboardInterrupt on Ctrl-C."""
        if self.session is None:
            print(message, end="", flush=True)
            line = sys.stdin.readline()
            if not line:
                raise EOFError
            print(line.rstrip("\n"), flush=True)  # echoed: a piped session's output reads as a transcript
            return line.rstrip("\n") or default
        if history:
            return str(self.session.prompt(message, default=default))
        from prompt_toolkit import prompt

        return str(prompt(message, default=default))


class Progress:
    """Live progress of a grading: samples x iterations graded (every model scores each)."""

    def __init__(self, out: Console) -> None:
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

        self.bar = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                            console=out, transient=False)
        self.task: Any = None

    def on_start(self, plan: RunPlan) -> None:
        self.bar.start()
        models = len(plan.evaluators)
        self.task = self.bar.add_task(f"grading with {models} model{'s' if models != 1 else ''}",
                                      total=plan.total_items * plan.runs)

    def on_item(self, item: ItemResult) -> None:
        self.bar.advance(self.task)

    def on_finish(self, report: ExperimentReport) -> None:
        self.bar.stop()


class Repl:
    """The session's loop: read a command, call the studio, print the answer; errors never end it."""

    def __init__(self, studio: Studio, out: Console, prompt: Prompt | None = None) -> None:
        self.studio, self.out = studio, out
        self.prompt = prompt or Prompt()
        self.commands: dict[str, Callable[[list[str]], None]] = {
            "draft": self.draft, "grade": self.grade, "cal": self.calibration, "dis": self.disagreements,
            "sample": self.sample, "rubric": self.rubric, "edit": self.edit, "add": self.add, "card": self.card,
            "delete": self.delete, "versions": self.versions, "use": self.use, "models": self.models,
            "iterations": self.iterations, "export": self.export, "help": lambda args: self.say(HELP)}

    def say(self, text: str) -> None:
        self.out.print(text, markup=False, highlight=False)

    def run(self) -> None:
        from .._errors import CobaltError

        self.banner()
        while True:
            try:
                line = self.prompt.ask("studio> ")
            except KeyboardInterrupt:
                continue
            except EOFError:
                break
            words = shlex.split(line) if line.strip() else []
            if not words:
                continue
            if words[0] in ("quit", "exit", "q"):
                break
            command = self.commands.get(words[0])
            if command is None:
                self.say(f"unknown command {words[0]!r}; `help` lists them")
                continue
            try:
                command(words[1:])
            except CobaltError as exc:
                self.say(f"error: {exc}")
            except KeyboardInterrupt:
                self.say("interrupted; what finished is kept")
            except EOFError:  # the input ended inside a command's own question
                break
        self.say("bye")

    def banner(self) -> None:
        from collections import Counter

        s = self.studio
        labels = Counter(x.score for x in s.samples if x.score is not None)
        spread = ", ".join(f"{score:+d}: {n}" for score, n in sorted(labels.items()))
        self.say(f"cobalt studio: {len(s.samples)} samples from {s.samples_path}, {sum(labels.values())} labelled "
                 f"({spread})")
        self.say(f"models: {', '.join(s.models)}; iterations: {s.iterations}")
        if s.current is None:
            self.say("No grader yet: `draft` writes one from the samples with the judge model. `help` lists the "
                     "commands.")
        else:
            self.say(f"grader {s.current.name} #{s.current.short_hash} ({s.current.source}). `grade` grades it; "
                     "`help` lists the commands.")

    # -- commands -------------------------------------------------------------------------------

    def draft(self, args: list[str]) -> None:
        from ..render._units import count, money

        self.say("drafting a grader from the labelled samples...")
        drafted = self.studio.draft(name=args[0] if args else None)
        cost = f", {money(drafted.cost_usd)}" if drafted.cost_usd is not None else ""
        self.say(f"drafted by {drafted.judge_model} from {count(drafted.samples_shown, 'sample')} "
                 f"({drafted.tokens} tokens{cost}):")
        self.rubric([])

    def grade(self, args: list[str]) -> None:
        from ..grading._render_calibration import rich_table, summary_table

        outcome = self.studio.grade(Progress(self.out))
        cal = outcome.calibration
        calls = sum(not r.cached for r in outcome.results)
        self.say(f"graded {self.studio.require().name} #{outcome.grader_hash[:12]}: {len(outcome.results)} gradings, "
                 f"{calls} new calls ({len(outcome.results) - calls} from the cache); grading run {outcome.run_id}")
        self.out.print(rich_table(summary_table(cal)))
        for warning in outcome.warnings:
            self.say(f"warning: {warning}")
        if not outcome.passed:
            self.say(f"grading run {outcome.run_id} FAILED: {'; '.join(outcome.failures)}")
        self.say(self._versions_line(outcome))
        disagreeing = len(self.studio.sample_grades())
        self.say(f"{disagreeing} sample{'s' if disagreeing != 1 else ''} with a disagreement: `dis` shows them; "
                 "`cal` the whole calibration.")

    def _versions_line(self, outcome: GradeOutcome) -> str:
        from ..grading._grader_versions import comparison

        found = self.studio.versions()
        model = next(iter(outcome.calibration.models))
        return f"versions ({model}): {comparison(found, model)}" if found else ""

    def calibration(self, args: list[str]) -> None:
        from ..grading._render_calibration import print_calibration

        outcome = self._outcome()
        print_calibration(self.out, outcome.calibration)

    def _outcome(self) -> GradeOutcome:
        from .._errors import ConfigError

        outcome = self.studio.outcome
        if outcome is None:
            raise ConfigError("The current version is not graded yet; `grade` it first.")
        return outcome

    def disagreements(self, args: list[str]) -> None:
        rows = self.studio.sample_grades()
        if not rows:
            self.say("no disagreement: every grade equals its label")
            return
        self.out.print(_side_by_side(rows, self.studio.models, full=False))
        self.say("`sample ID` shows one in full; `rubric` and `edit N` to sharpen the criteria.")

    def sample(self, args: list[str]) -> None:
        row = self.studio.sample(_one(args, "sample ID"))
        self.say(f"sample {row.id} (line {row.number}), truth {_signed(row.truth)}")
        self.say(f"user message:\n{row.user_message}\nassistant response:\n{row.assistant_response}")
        self.out.print(_side_by_side([row], self.studio.models, full=True))

    def rubric(self, args: list[str]) -> None:
        current = self.studio.require()
        self.say(f"{current.name} #{current.short_hash}")
        for ln in self.studio.lines():
            marker = {"spec": "-", "card": "#", "context": "@"}[ln.kind]
            self.say(f"{ln.number:>3}  {'  ' * ln.depth}{marker} {ln.text}")

    def edit(self, args: list[str]) -> None:
        from ..grading.graders._outline import editable_text

        if not args:
            self._in_editor()
            return
        number = _number(args[0])
        old = editable_text(self.studio.require(), number)
        new = self.prompt.ask(f"line {number}> ", default=old, history=False)
        self._changed(self.studio.edit("set", number, new))

    def add(self, args: list[str]) -> None:
        number = _number(_one(args, "N"))
        self._changed(self.studio.edit("add", number, self.prompt.ask("new spec> ", history=False)))

    def card(self, args: list[str]) -> None:
        number = _number(_one(args, "N"))
        title = self.prompt.ask("card title> ", history=False)
        spec = self.prompt.ask("its first spec> ", history=False)
        self._changed(self.studio.edit("card", number, title, spec or None))

    def delete(self, args: list[str]) -> None:
        self._changed(self.studio.edit("delete", _number(_one(args, "N"))))

    def _in_editor(self) -> None:
        from .._errors import CobaltError
        from ..grading.graders._source import grader_source

        current = self.studio.require()
        editor = os.environ.get("VISUAL") or os.environ.get("EDITOR") or "vi"
        directory = self.studio.directory(current.name)
        handle, name = tempfile.mkstemp(prefix="editing-", suffix=".py", dir=directory)
        path = Path(name)
        try:
            with os.fdopen(handle, "w", encoding="utf-8") as fh:
                fh.write(grader_source(current))
            while True:
                # EDITOR may carry arguments ("code --wait"), split as a shell would
                done = subprocess.run([*shlex.split(editor), str(path)], check=False)
                if done.returncode != 0:
                    self.say(f"{editor} exited with {done.returncode}; the grader is unchanged")
                    return
                try:
                    self._changed(self.studio.load_edited(path))
                    return
                except CobaltError as exc:  # a typo must not cost the edit: back to the editor, or give up
                    self.say(f"error: {exc}")
                    if self.prompt.ask("edit it again? [Y/n] ", history=False).strip().lower() in ("n", "no"):
                        self.say("the grader is unchanged")
                        return
        finally:
            path.unlink(missing_ok=True)

    def _changed(self, change: Any) -> None:
        current = self.studio.require()
        if not change.changed:
            self.say(f"unchanged: still #{current.short_hash}")
            return
        again = " (graded before: re-grading it comes from the cache)" if change.graded_before else ""
        self.say(f"new version #{current.short_hash}{again}; `grade` grades it")
        self.rubric([])

    def versions(self, args: list[str]) -> None:
        from ._grading import print_versions

        print_versions(self.studio.versions())

    def use(self, args: list[str]) -> None:
        number = _number(_one(args, "N").lstrip("v"))
        current = self.studio.use(number)
        self.say(f"now at v{number} #{current.short_hash}")

    def models(self, args: list[str]) -> None:
        from .._errors import ConfigError
        from ..grading.graders._samples import route_model

        if not args:
            raise ConfigError("Give one or more models, e.g. `models openai/gpt-4o anthropic/claude-sonnet-4-5`.")
        for spec in args:
            route_model(spec, self.studio.config.judge.provider)
        self.studio.models = list(dict.fromkeys(args))
        self.say(f"models: {', '.join(self.studio.models)}")

    def iterations(self, args: list[str]) -> None:
        from .._errors import ConfigError

        n = _number(_one(args, "N"))
        if n < 1:
            raise ConfigError("iterations must be 1 or more.")
        self.studio.iterations = n
        self.say(f"iterations: {n}")

    def export(self, args: list[str]) -> None:
        from ._grading import print_exported

        paths = [a for a in args if a != "--overwrite"]
        output = Path(paths[0]) if paths else None
        print_exported(self.studio.export(output, overwrite="--overwrite" in args))


def _one(args: list[str], what: str) -> str:
    from .._errors import ConfigError

    if not args:
        raise ConfigError(f"Give {what}.")
    return args[0]


def _number(text: str) -> int:
    from .._errors import ConfigError

    try:
        return int(text)
    except ValueError:
        raise ConfigError(f"{text!r} is not a line number; `rubric` numbers the lines.") from None


def _signed(value: int | None) -> str:
    return "–" if value is None else f"{value:+d}"


def _clip(text: str, limit: int) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def _side_by_side(rows: list[SampleGrades], models: list[str], *, full: bool) -> Any:
    """Sample, truth and each model's grades with their notes, one column per model."""
    from rich import box
    from rich.table import Table

    heads = ["id", "truth", *models] if full else ["id", "sample", "truth", *models]
    table = Table(*heads, box=box.SIMPLE_HEAD, show_edge=False)
    for column in table.columns[1:]:
        column.overflow = "fold"
    for row in rows:
        sample = [] if full else [f"{_clip(row.user_message, 60)} → {_clip(row.assistant_response, 80)}"]
        cells = []
        for model in models:
            grades = [g for g in row.grades if g.model == model]
            cells.append("\n".join(
                f"{'' if len(grades) == 1 else f'#{g.iteration} '}"
                f"{'error' if g.grade is None else f'{g.grade:+d}'}: "
                f"{g.notes if full else _clip(g.notes or g.error or '', 90)}" for g in grades))
        table.add_row(row.id, *sample, _signed(row.truth), *cells)
    return table
