"""The store's messages pass on what DuckDB said, not its advice to a query's author."""

from __future__ import annotations

from pathlib import Path

import duckdb
import pytest

from cobalt_lib.store._tables import duckdb_said


def test_duckdbs_advice_to_a_query_author_is_not_passed_on(tmp_path: Path) -> None:
    rows = tmp_path / "rows.json"
    rows.write_text('{"tokens": "many"}\n')
    with pytest.raises(duckdb.Error) as raised:  # what a journal segment with a bad value gets from DuckDB
        duckdb.connect().execute("SELECT * FROM read_json(?, format='newline_delimited', "
                                 "columns={'tokens': 'BIGINT'})", [str(rows)]).fetchall()
    assert "auto_detect" in str(raised.value)
    said = duckdb_said(raised.value)
    assert said.startswith("Invalid Input Error: JSON transform error in file") and "rows.json" in said
    assert "auto_detect" not in said and "ignore_errors" not in said and "\n" not in said
