"""`cobalt store status` and `cobalt store sync`: rows on their way into the store, and rows it refused."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from ._app import Group, _App, app
from ._common import print_json, project_config

if TYPE_CHECKING:
    from ..ops._journal import JournalStatus

store_app = _App(name="store", help="The results store (docs/store.md): its state, what waits to go in, its "
                 "schema, and copying a history between stores.", cls=Group,
                 no_args_is_help=True, rich_markup_mode="markdown")
app.add_typer(store_app, name="store")


def _show(status: JournalStatus) -> None:
    if status.unreachable:
        typer.echo(f"store: {status.backend} {status.store}: {status.unreachable}")
    else:
        typer.echo(f"store: {status.backend} {status.store}, schema version {status.schema_version or '-'}, "
                   f"{status.runs} run(s)")
    if status.empty():
        typer.echo(f"Nothing waits for the results store {status.store}.")
        return
    for waiting in status.waiting:
        who = "its process is still writing it" if waiting.live else "the next cobalt command puts it in"
        typer.echo(f"waiting: {waiting.segments} batch(es) in {waiting.directory} ({who})")
    for aside in status.aside:
        typer.echo(f"set aside: {aside.rows} row(s) of {aside.table} of run {aside.run_id} in {aside.path}: "
                   f"{aside.errors[0]}")
    if status.aside:
        typer.echo("`cobalt store sync` puts the rows set aside back into the store.")


@store_app.command()
def status(
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """List the rows waiting to go into the store (journals of ended runs) and the rows it refused.

    Example: `cobalt store status`
    """
    from ..ops._journal import journal_status

    found = journal_status(project_config())
    if as_json:
        print_json(found.model_dump(mode="json"))
    else:
        _show(found)


@store_app.command()
def sync(
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """Put into the store every row waiting for it, and the rows it refused before (written anew). Exits 1
    when some rows are still kept out.

    Example: `cobalt store sync`
    """
    from ..ops._journal import sync_journals

    found = sync_journals(project_config())
    if as_json:
        print_json(found.model_dump(mode="json"))
    else:
        typer.echo(f"{found.restored} row(s) put into the results store {found.store}.")
        if not found.empty():
            _show(found)
    if found.aside or any(not w.live for w in found.waiting):
        raise typer.Exit(1)


@store_app.command()
def migrate() -> None:
    """Upgrade the store's schema to this cobalt's, in one transaction (a team store is never upgraded
    behind its users' backs: every cobalt writing it must then be this version or newer).

    Example: `cobalt store migrate`
    """
    from ..ops._store_copy import migrate_store

    done = migrate_store(project_config())
    if done.before == done.after:
        typer.echo(f"The results store {done.store} already has schema version {done.after}.")
    else:
        typer.echo(f"The results store {done.store} now has schema version {done.after} (was "
                   f"{done.before if done.before is not None else 'empty'}).")


@store_app.command()
def copy(
    to: Annotated[str, typer.Option("--to", help="The store to copy into: a postgresql:// URL or a DuckDB file.")],
    source: Annotated[str | None, typer.Option(
        "--from", help="The store to copy from (default: the project's).")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """Copy a history (every run with its items, scores, spans, identities and batches; labels and
    calibrations) into another store. Run it again to resume or to bring new runs: nothing is doubled.

    Example: `cobalt store copy --to postgresql://me@db.internal:5432/evals`
    """
    from ..ops._store_copy import copy_store

    done = copy_store(project_config(), to, source)
    if as_json:
        print_json(done.model_dump(mode="json"))
        return
    typer.echo(f"Copied {done.runs} run(s) ({done.rows} rows), {done.labels} label(s), {done.calibrations} "
               f"calibration(s) and {done.dataset_versions} dataset version(s) from {done.source} to {done.target}; "
               f"{done.skipped} run(s) were there already.")
