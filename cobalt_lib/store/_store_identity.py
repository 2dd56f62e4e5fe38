"""The store's evaluation identities, a part of `Store`: what each run measured with (the `identities` table)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..results._evaluation_identity import EvaluationIdentity


class RunIdentities:
    """`Store`'s identity methods; the SQL stays in the results package, beside the store's own."""

    path: Path

    if TYPE_CHECKING:  # what `Store` brings, for the type checker alone
        def exists(self) -> bool: ...
        def _transaction(self, *, ensure_schema: bool = False) -> AbstractContextManager[Any]: ...
        def query(self, sql: str, params: Sequence[Any] = ()) -> list[dict[str, Any]]: ...

    def keep_identity(self, run_id: str,
                      identity: EvaluationIdentity | Callable[[], EvaluationIdentity]) -> EvaluationIdentity:
        """Store the run's identity unless it has one already, and return the stored one: a resumed run,
        or a shard of a Dagster run, keeps what the run started with. `identity` may be a function: then
        it is worked out only when none is stored (one connection either way)."""
        import json

        with self._transaction(ensure_schema=True) as con:
            found = con.execute("SELECT identity FROM identities WHERE run_id = ?", [run_id]).fetchone()
            if found is not None:
                return EvaluationIdentity.model_validate_json(found[0])
            identity = identity() if callable(identity) else identity
            con.execute("INSERT INTO identities VALUES (?, ?)", [run_id, json.dumps(identity.model_dump(mode="json"))])
        return identity

    def identities_of(self, run_ids: Sequence[str]) -> dict[str, EvaluationIdentity]:
        """`{run_id: identity}` of those of `run_ids` that have one (a run stored before identities has none)."""
        import duckdb

        if not run_ids or not self.exists():
            return {}
        try:
            rows = self.query("SELECT run_id, identity FROM identities WHERE run_id IN (SELECT unnest(?))",
                              [list(run_ids)])
        except duckdb.CatalogException:  # a store from before the table
            return {}
        return {str(r["run_id"]): EvaluationIdentity.model_validate(r["identity"]) for r in rows}
