"""The grader studio's session: samples, the grader's versions, gradings, edits and export, without a terminal.

`cobalt studio` is a thin terminal over this class; every step is also a plain command (`cobalt grader
draft`, `cobalt grade`, `cobalt grader edit`, `cobalt grader versions`, `cobalt grader export`).
Each version of the grader is kept as a builder file named by its content hash under
`.cobalt/studio/<grader>/`, so a version is never overwritten, a grading run always points at the
file that holds its rubric, and going back to a version re-grades from the cache.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field

from .._errors import ConfigError
from .._files import write_atomically
from ..config._config import Config
from ..run._session import Observer
from ._grade import GradeOptions, GradeOutcome, grade
from ._grader_draft import Drafted, default_model, draft_grader
from ._grader_versions import Exported, GraderVersion, export_grader, grader_versions
from .graders._deck import Grader
from .graders._draft import file_stem
from .graders._files import load_grader
from .graders._outline import Line, add_card, add_spec, delete_line, outline, set_line
from .graders._samples import Sample, load_samples, route_model
from .graders._source import grader_source

Edit = Literal["set", "add", "card", "delete"]


class Change(BaseModel):
    """What an edit did: the rubric before and after, and whether the new one was graded before."""

    before: str
    after: str
    changed: bool
    #: The new rubric already has a grading run on these samples: re-grading it costs no call.
    graded_before: bool = False


class ShownGrade(BaseModel):
    model: str
    iteration: int
    grade: int | None = None
    notes: str = ""
    error: str | None = None


class SampleGrades(BaseModel):
    """One sample beside its label and every model's grades and notes: the studio's disagreement view."""

    number: int
    id: str
    user_message: str
    assistant_response: str
    truth: int | None
    grades: list[ShownGrade] = Field(default_factory=list)
    #: The largest |grade - truth| among the usable grades (0: every model agreed).
    largest: int = 0


def _as_text(value: object) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)


class Studio:
    """One person refining one grader against one labelled samples file."""

    def __init__(self, config: Config, samples: Path, *, grader: Path | None = None, models: list[str] | None = None,
                 iterations: int = 1) -> None:
        if iterations < 1:
            raise ConfigError(f"iterations must be 1 or more, got {iterations}.")
        self.config = config
        self.samples_path = samples.resolve()
        self.samples: list[Sample] = load_samples(samples)
        self.models: list[str] = list(dict.fromkeys(models or [default_model(config)]))
        for model in self.models:
            route_model(model, config.judge.provider)  # a bad model is said now, not at the first grading
        self.iterations = iterations
        self.current: Grader | None = None
        self.outcomes: dict[str, GradeOutcome] = {}
        if grader is not None:
            self.current = self.keep(load_grader(grader, config.root))

    # -- versions -------------------------------------------------------------------------------

    def directory(self, name: str) -> Path:
        """Where the versions of grader `name` are kept (its name made safe as a folder name)."""
        return self.config.output_path / "studio" / file_stem(name)

    def keep(self, grader: Grader) -> Grader:
        """The grader saved as its version file (named by its hash: never overwritten), as loaded from it."""
        file = self.directory(grader.name) / f"{grader.short_hash}.py"
        if not file.is_file():
            file.parent.mkdir(parents=True, exist_ok=True)
            write_atomically(file, grader_source(grader))
        return dataclasses.replace(grader, source=str(file))

    def require(self) -> Grader:
        if self.current is None:
            raise ConfigError("There is no grader yet: draft one from the samples (`draft`), or start the studio "
                              "with --grader FILE.")
        return self.current

    def versions(self) -> list[GraderVersion]:
        """The current grader's versions graded on these samples, oldest first."""
        return grader_versions(self.config, self.require().name, self.samples_path)

    def use(self, number: int) -> Grader:
        """Go back to version `number` (its file), to edit from it or export it."""
        from ._grader_versions import version_grader

        found = next((v for v in self.versions() if v.number == number), None)
        if found is None:
            raise ConfigError(f"There is no v{number}; `versions` lists them.")
        self.current = self.keep(version_grader(self.config, found))
        return self.current

    # -- the loop -------------------------------------------------------------------------------

    def draft(self, *, name: str | None = None, guidance: str | None = None, model: str | None = None) -> Drafted:
        """A grader drafted from the labelled samples by the judge model; it becomes the current version."""
        drafted = draft_grader(self.config, self.samples, name=name, model=model, guidance=guidance)
        self.current = self.keep(drafted.grader)
        return drafted

    def grade(self, observer: Observer | None = None, *, concurrency: int | None = None) -> GradeOutcome:
        """Every sample with every model, `iterations` times, stored as a grading run (cached calls cost nothing)."""
        current = self.require()
        assert current.source is not None
        options = GradeOptions(input=self.samples_path, grader=Path(current.source), models=self.models,
                               iterations=self.iterations, concurrency=concurrency)
        outcome = grade(self.config, options, observer)
        self.outcomes[current.hash] = outcome
        return outcome

    @property
    def outcome(self) -> GradeOutcome | None:
        """The grading of the current version in this session, if it was graded."""
        return self.outcomes.get(self.current.hash) if self.current is not None else None

    def lines(self) -> list[Line]:
        return outline(self.require())

    def edit(self, how: Edit, number: int, text: str | None = None, spec: str | None = None) -> Change:
        """Set, add after, add a card after, or delete line `number`; the result is the current version."""
        current = self.require()
        if how == "delete":
            changed = delete_line(current, number)
        elif how == "set":
            changed = set_line(current, number, text or "")
        elif how == "add":
            changed = add_spec(current, number, text or "")
        else:
            changed = add_card(current, number, text or "", spec)
        return self.replace(changed)

    def replace(self, grader: Grader) -> Change:
        """`grader` (an edit, or the file after $EDITOR) becomes the current version."""
        before = self.require()
        if grader.name != before.name:
            raise ConfigError(f"The edited grader is named {grader.name!r}, not {before.name!r}; keep the name (a "
                              "new name starts a new grader: export it, then open it with --grader).")
        self.current = self.keep(grader)
        graded = any(v.grader_hash == grader.hash for v in self.versions())
        return Change(before=before.hash, after=grader.hash, changed=before.hash != grader.hash, graded_before=graded)

    def load_edited(self, path: Path) -> Change:
        """The grader in `path` (the version file as $EDITOR left it) as the current version."""
        return self.replace(load_grader(path))

    # -- reading the grading --------------------------------------------------------------------

    def sample_grades(self, only_disagreements: bool = True) -> list[SampleGrades]:
        """Each sample with its label and the current version's grades (largest disagreement first)."""
        outcome = self.outcome
        if outcome is None:
            raise ConfigError("The current version is not graded yet; `grade` it first.")
        by_id: dict[str, list[ShownGrade]] = {}
        for r in outcome.results:
            by_id.setdefault(r.id, []).append(ShownGrade(model=r.model, iteration=r.iteration, grade=r.score,
                                                         notes=r.output.notes if r.output else "", error=r.error))
        rows = []
        for number, s in enumerate(self.samples, 1):
            grades = by_id.get(s.id, [])
            off = [abs(g.grade - s.score) for g in grades if g.grade is not None and s.score is not None]
            rows.append(SampleGrades(number=number, id=s.id, user_message=_as_text(s.user_message),
                                     assistant_response=_as_text(s.assistant_response), truth=s.score,
                                     grades=grades, largest=max(off, default=0)))
        if only_disagreements:
            rows = [r for r in rows if r.largest > 0]
        return sorted(rows, key=lambda r: -r.largest)

    def sample(self, key: str) -> SampleGrades:
        """One sample, by id or by its number in the file, with every grade of the current version."""
        rows = self.sample_grades(only_disagreements=False)
        found = next((r for r in rows if r.id == key), None) or next(
            (r for r in rows if key.isdigit() and r.number == int(key)), None)
        if found is None:
            raise ConfigError(f"No sample has the id or number {key!r}; ids are {', '.join(r.id for r in rows[:8])}...")
        return found

    def export(self, output: Path | None = None, samples_output: Path | None = None,
               overwrite: bool = False) -> Exported:
        """The current version as a grader file and the samples beside it (`graders/<name>.py` by default)."""
        return export_grader(self.config, self.require(), self.samples, output=output,
                             samples_output=samples_output, overwrite=overwrite)
