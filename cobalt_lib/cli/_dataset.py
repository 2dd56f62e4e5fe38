"""`cobalt dataset push|add|list|show|diff|export`: versioned datasets in the store (docs/datasets.md)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from ._app import Group, _App, app
from ._common import print_json, project_config

if TYPE_CHECKING:
    from ..store import Store

datasets = _App(name="dataset", cls=Group, no_args_is_help=True, rich_markup_mode="markdown",
                help="Versioned datasets in the store: push files, grow them from runs and labels, diff versions.")
app.add_typer(datasets, name="dataset")

_JSON = typer.Option("--json", help="Print JSON.")


def _store() -> Store:
    from ..store import Store

    return Store.for_config(project_config())


@datasets.command("push")
def push(
    name: Annotated[str, typer.Argument(metavar="NAME", help="The dataset's name.")],
    file: Annotated[Path, typer.Argument(metavar="FILE", help="A .jsonl, .json or .csv dataset file.")],
    split: Annotated[str | None, typer.Option("--split", metavar="FIELD|NAME", help=(
        "A field every item has (each item goes in the split it names), or a split name: the file's items "
        "replace that split of the latest version."))] = None,
    note: Annotated[str | None, typer.Option("--note", help="A note kept with the version.")] = None,
    as_json: Annotated[bool, _JSON] = False,
) -> None:
    """Store FILE's items as the next version of NAME; unchanged content makes no new version."""
    from ..datasets import push_dataset, push_text

    outcome = push_dataset(_store(), name, file, split=split, note=note)
    print_json(outcome.model_dump(mode="json")) if as_json else sys.stdout.write(push_text(outcome))


@datasets.command("add")
def add(
    name: Annotated[str, typer.Argument(metavar="NAME", help="The dataset to add to (made when new).")],
    from_run: Annotated[str | None, typer.Option("--from-run", metavar="RUN",
                                                 help="A run id, a prefix of one, or `latest`.")] = None,
    items: Annotated[str | None, typer.Option("--items", metavar="3,7",
                                              help="The run's item indices to add.")] = None,
    from_labels: Annotated[str | None, typer.Option("--from-labels", metavar="EXPERIMENT", help=(
        "Add the experiment's items labelled as failing."))] = None,
    evaluator: Annotated[str | None, typer.Option("--evaluator", metavar="NAME",
                                                  help="With --from-labels: that evaluator's labels only.")] = None,
    at_most: Annotated[float, typer.Option("--at-most", help=(
        "With --from-labels: labels at or below this value count as failing (fail is 0)."))] = 0.0,
    split: Annotated[str | None, typer.Option("--split", metavar="NAME", help="Put the added items in this split.")
                     ] = None,
    as_json: Annotated[bool, _JSON] = False,
) -> None:
    """Add a run's items, or the items labelled as failing, to NAME as a new version; each keeps its origin."""
    from .._errors import ConfigError
    from ..datasets import add_from_labels, add_from_run, push_text

    if (from_run is None) == (from_labels is None):
        raise ConfigError("Give one of --from-run RUN --items 3,7 or --from-labels EXPERIMENT.")
    store = _store()
    if from_run is not None:
        outcome = add_from_run(store, name, from_run, _indices(items), split=split)
    else:
        assert from_labels is not None
        outcome = add_from_labels(store, name, from_labels, evaluator=evaluator, at_most=at_most, split=split)
    print_json(outcome.model_dump(mode="json")) if as_json else sys.stdout.write(push_text(outcome))


def _indices(text: str | None) -> list[int]:
    from .._errors import ConfigError

    parts = [p.strip() for p in (text or "").split(",") if p.strip()]
    if not parts or not all(p.isdigit() for p in parts):
        raise ConfigError(f"--items {text or ''!r}: give item indices separated by commas, such as --items 3,7.")
    return [int(p) for p in parts]


@datasets.command("list")
def list_(
    name: Annotated[str | None, typer.Argument(metavar="[NAME]", help="One dataset's versions.")] = None,
    as_json: Annotated[bool, _JSON] = False,
) -> None:
    """Every stored version, oldest first."""
    from ..datasets import list_versions, versions_text

    versions = list_versions(_store(), name)
    if as_json:
        print_json([v.model_dump(mode="json") for v in versions])
    else:
        sys.stdout.write(versions_text(versions))


@datasets.command("show")
def show(
    ref: Annotated[str, typer.Argument(metavar="NAME[@V][:SPLIT]", help="A dataset, a version, a split.")],
    limit: Annotated[int, typer.Option("--limit", help="Items shown.")] = 5,
    as_json: Annotated[bool, _JSON] = False,
) -> None:
    """A version (the latest without @V) and its first items."""
    from ..datasets import show_version, shown_text

    shown = show_version(_store(), ref, limit=max(0, limit))
    print_json(shown.model_dump(mode="json")) if as_json else sys.stdout.write(shown_text(shown))


@datasets.command("diff")
def diff(
    a: Annotated[str, typer.Argument(metavar="NAME@A", help="The older version.")],
    b: Annotated[str, typer.Argument(metavar="NAME@B", help="The newer version.")],
    as_json: Annotated[bool, _JSON] = False,
) -> None:
    """The items added, removed and changed from A to B, by item identity (`id`, else content)."""
    from ..datasets import diff_text, diff_versions

    found = diff_versions(_store(), a, b)
    if as_json:
        print_json({**found.model_dump(mode="json"), "counts": found.counts()})
    else:
        sys.stdout.write(diff_text(found))


@datasets.command("export")
def export(
    ref: Annotated[str, typer.Argument(metavar="NAME[@V][:SPLIT]", help="A dataset, a version, a split.")],
    output: Annotated[Path | None, typer.Option("--output", "-o", metavar="FILE.jsonl",
                                                help="Write here (default: stdout).")] = None,
) -> None:
    """The version's items as JSONL, in order (the latest without @V)."""
    from ..datasets import export_version

    text = export_version(_store(), ref)
    if output is None:
        sys.stdout.write(text)
    else:
        output.write_text(text, encoding="utf-8")
        typer.echo(f"Wrote {text.count(chr(10))} items to {output}", err=True)
