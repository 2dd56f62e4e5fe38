"""The store's tests run on both backends: `make_store` gives a fresh, empty store of the test's backend,
a new DuckDB file or a new database on the session's Postgres server (tests/pg.py), its journal under
the test's own directory.

A fixture of tests/conftest.py (imported there, as `pg_server` is), not of a tests/store/conftest.py: the
tests import helpers with `from conftest import ...`, and a second conftest.py without packages would
take that module name from tests/conftest.py.

The Postgres case is `slow`: the session's server is a process (the fast tier starts none). A test
that only makes sense on one backend says why and asks for `duckdb_store` (or skips the other).
"""

from __future__ import annotations

import secrets
from pathlib import Path
from typing import Any, Protocol

import pytest

from cobalt_lib import Store

BACKENDS = ["duckdb", pytest.param("postgres", marks=pytest.mark.slow)]


class MakeStore(Protocol):
    """`make_store(**settings)`: a fresh, empty store (`now`, `lock_timeout`, `max_value_bytes` as Store takes them)."""

    backend: str

    def __call__(self, **settings: Any) -> Store: ...


class _Maker:
    def __init__(self, backend: str, request: pytest.FixtureRequest, root: Path) -> None:
        self.backend = backend
        self._request = request
        self._root = root

    def __call__(self, **settings: Any) -> Store:
        home = self._root / secrets.token_hex(3)
        if self.backend == "duckdb":
            return Store(home / "cobalt.duckdb", **settings)
        server = self._request.getfixturevalue("pg_server")
        return Store(server.create_database("s_" + secrets.token_hex(4)), home=home, **settings)


def store_maker(backend: str, request: pytest.FixtureRequest, root: Path) -> MakeStore:
    """A maker of fresh stores of `backend` under `root` (for a fixture of a wider scope than a test)."""
    return _Maker(backend, request, root)


@pytest.fixture(params=BACKENDS)
def make_store(request: pytest.FixtureRequest, tmp_path: Path) -> MakeStore:
    """Fresh, empty stores of the test's backend (each call a new one)."""
    return store_maker(request.param, request, tmp_path)


@pytest.fixture(params=BACKENDS)
def store_url(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str | None:
    """For a test that runs experiments in a project: None on DuckDB (the project's `.cobalt/cobalt.duckdb`),
    else a fresh Postgres database's URL, set as COBALT_STORE_URL so every command of the test uses it."""
    if request.param == "duckdb":
        return None
    url: str = request.getfixturevalue("pg_server").create_database("p_" + secrets.token_hex(4))
    monkeypatch.setenv("COBALT_STORE_URL", url)
    return url


def project_store(root: Path) -> Store:
    """The store the project at `root` writes to: COBALT_STORE_URL's (see `store_url`), else its DuckDB file."""
    from cobalt_lib import load_config

    return Store.for_config(load_config(root))
