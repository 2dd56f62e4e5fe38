"""`CobaltComponent`: a cobalt project's experiments in an existing Dagster project, from a `defs.yaml`.

    dg scaffold defs cobalt_dagster.CobaltComponent cobalt_evals --project-dir path/to/cobalt_project

writes `defs/cobalt_evals/defs.yaml`:

    type: cobalt_dagster.CobaltComponent
    attributes:
      project_dir: ../../../../path/to/cobalt_project    # relative to this file's folder, or absolute
      translation:                                       # optional: the host project's conventions
        key: "evals/{{ experiment }}/{{ stage }}"
        group_name: evals

The component's definitions are `build_definitions(project_dir)` without the executor: a component's
definitions are merged into the host project's, whose executor (Dagster's default, or the project's
own) then runs cobalt's jobs as it runs the others.
"""

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated

import dagster as dg
from dagster.components.utils.translation import TranslationFnResolver
from pydantic import BaseModel, Field, field_validator

from cobalt_lib import ConfigError, Experiment, load_config, load_experiments

from ._definitions import build_definitions
from ._translator import CobaltTranslator, TranslatedCobaltTranslator, TranslationFn


class CobaltScaffoldParams(BaseModel):
    """`dg scaffold defs cobalt_dagster.CobaltComponent PATH --project-dir DIR`."""

    project_dir: str | None = Field(
        default=None,
        description="The cobalt project (the folder holding cobalt.toml), relative to the working directory "
                    "or absolute; default: the working directory.")

    @field_validator("project_dir")
    @classmethod
    def _a_directory(cls, given: str | None) -> str | None:
        """Checked before `dg` creates the component's folder, so a typo leaves nothing behind."""
        if given is not None and not Path(given).expanduser().is_dir():
            raise ValueError(f"--project-dir {given!r} names {Path(given).expanduser().resolve()}, which is not a "
                             "directory; pass the folder of your cobalt project (the one holding cobalt.toml)")
        return given


class CobaltScaffolder(dg.Scaffolder[CobaltScaffoldParams]):
    """Writes a `defs.yaml` whose `project_dir` is the given folder, relative to the `defs.yaml`'s own folder
    (so the Dagster project can move with the cobalt project beside it)."""

    @classmethod
    def get_scaffold_params(cls) -> type[CobaltScaffoldParams]:
        return CobaltScaffoldParams

    def scaffold(self, request: dg.ScaffoldRequest[CobaltScaffoldParams]) -> None:
        project = Path(request.params.project_dir or ".").expanduser().resolve()
        dg.scaffold_component(request, {"project_dir": _relative_or_absolute(project, request.target_path)})


def _relative_or_absolute(path: Path, start: Path) -> str:
    """`path` relative to `start` (POSIX separators), or absolute when there is no relative path (another drive)."""
    try:
        return Path(os.path.relpath(path, start.resolve())).as_posix()
    except ValueError:
        return str(path)


@dg.scaffold_with(CobaltScaffolder)
@dataclass
class CobaltComponent(dg.Component, dg.Resolvable):
    """A cobalt project's experiments as assets, gate checks, jobs, schedules and sensors.

    Per experiment: its assets, gate checks, job and schedule; for the project: its sensors and the
    resource `cobalt`.

    `project_dir` is the cobalt project's folder, relative to this `defs.yaml`'s folder or absolute.
    `experiments` keeps only the experiments of those names (default: every experiment of the project).
    `translation` changes each asset's spec as dagster-dbt's and dagster-sling's `translation` do (`key`,
    `key_prefix`, `group_name`, `owners`, `tags`, `metadata`...), with `{{ experiment }}` and `{{ stage }}`
    in its templates; the gate checks follow their `aggregates` asset.
    """

    project_dir: Annotated[str, dg.Resolver.default(
        description="The cobalt project's folder (holding cobalt.toml), relative to this defs.yaml's folder "
                    "or absolute.")]
    experiments: Annotated[list[str] | None, dg.Resolver.default(
        description="Only the experiments of these names (default: every experiment of the project).")] = None
    translation: Annotated[TranslationFn | None, TranslationFnResolver(
        template_vars_for_translation_fn=lambda data: data)] = None

    def build_defs(self, context: dg.ComponentLoadContext) -> dg.Definitions:
        where = _defs_file(context)
        project = self.resolve_project_dir(where)
        found = self.select(load_experiments(load_config(project)), where, project)
        # fork_steps=False: the host's executor may not be Dagster's default (its jobs' run config says nothing of it).
        defs = build_definitions(project, experiments=found, translator=self.translator(), fork_steps=False)
        # No executor: the host project's executor runs cobalt's jobs (a second one would clash with it on merge,
        # and the component's would silently become the executor of the host's own jobs).
        return dg.Definitions(assets=defs.assets, asset_checks=defs.asset_checks, jobs=defs.jobs,
                              schedules=defs.schedules, sensors=defs.sensors, resources=defs.resources,
                              loggers=defs.loggers, metadata=defs.metadata)

    def translator(self) -> CobaltTranslator:
        """The translator of this component: `CobaltTranslator`'s specs through `translation` when given.
        Override it (returning your own `CobaltTranslator` subclass) to translate in Python."""
        return TranslatedCobaltTranslator(CobaltTranslator(), self.translation) if self.translation \
            else CobaltTranslator()

    def resolve_project_dir(self, where: Path) -> Path:
        """`project_dir` made absolute against the folder of `where` (the `defs.yaml`); an error unless it is a
        directory."""
        project = (where.parent / Path(self.project_dir).expanduser()).resolve()
        if not project.is_dir():
            raise ConfigError(f"{where}: project_dir {self.project_dir!r} names {project}, which is "
                              "not a directory; set project_dir to your cobalt project's folder (the one holding "
                              "cobalt.toml), relative to this defs.yaml's folder or absolute.")
        return project

    def select(self, found: list[Experiment], where: Path, project: Path) -> list[Experiment]:
        """The experiments `experiments` names (all when unset); an error for a name the project lacks, or none."""
        names = [e.name for e in found]
        if not found:
            raise ConfigError(f"{where}: project_dir {self.project_dir!r} names {project}, where cobalt finds no "
                              "experiment; set project_dir to your cobalt project's folder (the one holding "
                              "cobalt.toml and whose test_dir holds your experiments).")
        unknown = [n for n in self.experiments or [] if n not in names]
        if unknown:
            raise ConfigError(f"{where}: experiments names {', '.join(map(repr, unknown))}, which the cobalt project "
                              f"at {project} does not declare; it declares {', '.join(map(repr, sorted(names)))}.")
        return [e for e in found if self.experiments is None or e.name in self.experiments]


def _defs_file(context: dg.ComponentLoadContext) -> Path:
    """The component's `defs.yaml` (or `defs.yml`, `component.py`): where its relative paths start."""
    folder = context.component_path.file_path
    if folder.is_file():
        return folder
    names = ("defs.yaml", "defs.yml", "component.py")
    return next((folder / n for n in names if (folder / n).is_file()), folder / "defs.yaml")
