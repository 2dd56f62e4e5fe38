"""Dataset: inline items, files, URLs, transformations and clear errors for bad input."""

from __future__ import annotations

import functools
import json
import threading
from collections.abc import Iterator
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from cobalt_lib import Dataset
from cobalt_lib._errors import DatasetError

ITEMS = [{"input": "Capital of France?", "expected_output": "Paris"},
         {"input": "2 + 2", "expected_output": "4"},
         {"input": "Largest ocean?", "expected_output": "Pacific"}]
CSV_TEXT = "input,expected_output\nCapital of France?,Paris\n2 + 2,4\nLargest ocean?,Pacific\n"


def write_formats(directory: Path) -> None:
    """The same three items as .json (array and object), .jsonl and .csv (plain and with a BOM)."""
    (directory / "array.json").write_text(json.dumps(ITEMS), encoding="utf-8")
    (directory / "object.json").write_text(json.dumps({"items": ITEMS}), encoding="utf-8")
    (directory / "data.jsonl").write_text("".join(json.dumps(i) + "\n" for i in ITEMS), encoding="utf-8")
    (directory / "data.csv").write_text(CSV_TEXT, encoding="utf-8")
    (directory / "bom.csv").write_text(CSV_TEXT, encoding="utf-8-sig")


class _QuietHandler(SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def served(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """A real HTTP server on 127.0.0.1 serving the dataset files; yields its base URL."""
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"):
        monkeypatch.delenv(name, raising=False)
    root = tmp_path / "www"
    root.mkdir()
    write_formats(root)
    server = ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_QuietHandler, directory=str(root)))
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()
    thread.join()


@pytest.fixture
def files(project: Path) -> Path:
    write_formats(project)
    return project


# -- inline items and access ----------------------------------------------------------------------

def test_inline_items_keep_order_and_values() -> None:
    ds = Dataset(items=ITEMS)
    assert len(ds) == 3
    assert list(ds) == ITEMS
    assert ds.items == ITEMS


def test_indexing_by_int_and_negative_int() -> None:
    ds = Dataset(ITEMS)
    assert ds[0] == ITEMS[0]
    assert ds[-1] == ITEMS[2]
    with pytest.raises(IndexError):
        ds[3]


def test_indexing_by_slice_returns_dataset() -> None:
    part = Dataset(ITEMS)[1:]
    assert isinstance(part, Dataset)
    assert part.items == ITEMS[1:]


def test_items_are_copies_so_the_dataset_cannot_be_changed_through_them() -> None:
    ds = Dataset(ITEMS)
    ds[0]["input"] = "changed"
    next(iter(ds))["input"] = "changed"
    ds.items[0]["input"] = "changed"
    assert ds[0]["input"] == "Capital of France?"


def test_non_object_item_is_an_error() -> None:
    with pytest.raises(DatasetError, match=r"item 1 .*str, not an object"):
        Dataset([{"input": "ok"}, "just a string"])


def test_empty_dataset() -> None:
    ds = Dataset()
    assert len(ds) == 0
    assert list(ds) == []


# -- transformations ------------------------------------------------------------------------------

def test_map_returns_new_dataset_and_leaves_original() -> None:
    ds = Dataset(ITEMS)
    upper = ds.map(lambda r: {**r, "input": r["input"].upper()})
    assert upper[0]["input"] == "CAPITAL OF FRANCE?"
    assert ds[0]["input"] == "Capital of France?"


def test_map_returning_non_object_is_an_error() -> None:
    with pytest.raises(DatasetError, match="not an object"):
        Dataset(ITEMS).map(lambda r: r["input"])


def test_filter_keeps_matching_items_in_order() -> None:
    kept = Dataset(ITEMS).filter(lambda r: r["expected_output"] != "4")
    assert [r["expected_output"] for r in kept] == ["Paris", "Pacific"]


def test_slice() -> None:
    ds = Dataset([{"i": i} for i in range(10)])
    assert [r["i"] for r in ds.slice(2, 5)] == [2, 3, 4]
    assert [r["i"] for r in ds.slice(8)] == [8, 9]


def test_sample_same_seed_same_items() -> None:
    ds = Dataset([{"i": i} for i in range(100)])
    assert ds.sample(10, seed=1).items == ds.sample(10, seed=1).items
    assert len(ds.sample(10, seed=1)) == 10


def test_sample_different_seed_differs() -> None:
    ds = Dataset([{"i": i} for i in range(100)])
    assert ds.sample(10, seed=1).items != ds.sample(10, seed=2).items


def test_sample_keeps_original_order_without_duplicates() -> None:
    picked = [r["i"] for r in Dataset([{"i": i} for i in range(100)]).sample(20, seed=7)]
    assert picked == sorted(picked)
    assert len(set(picked)) == 20


@pytest.mark.parametrize("n", [3, 4, 100])
def test_sample_n_at_least_len_returns_all(n: int) -> None:
    assert Dataset(ITEMS).sample(n, seed=3).items == ITEMS


def test_sample_negative_n_is_an_error() -> None:
    with pytest.raises(DatasetError, match="n must be zero or more"):
        Dataset(ITEMS).sample(-1)


def test_chained_transformations() -> None:
    ds = Dataset([{"i": i} for i in range(50)]).map(lambda r: {"i": r["i"] * 2}).sample(10, seed=1).slice(0, 3)
    assert len(ds) == 3
    assert all(r["i"] % 2 == 0 for r in ds)


# -- files ----------------------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["array.json", "object.json", "data.jsonl", "data.csv"])
def test_from_file_reads_each_format(files: Path, name: str) -> None:
    ds = Dataset.from_file(name)
    assert ds.items == ITEMS
    assert ds.source == name


def test_csv_with_bom_has_clean_first_column(files: Path) -> None:
    assert (files / "bom.csv").read_bytes().startswith(b"\xef\xbb\xbf")
    ds = Dataset.from_file(files / "bom.csv")
    assert list(ds[0]) == ["input", "expected_output"]
    assert ds.items == ITEMS


def test_csv_quoted_fields_with_commas_and_newlines(project: Path) -> None:
    (project / "q.csv").write_text('input,expected_output\n"a, b","line1\nline2"\n', encoding="utf-8")
    assert Dataset.from_file("q.csv").items == [{"input": "a, b", "expected_output": "line1\nline2"}]


def test_jsonl_skips_blank_lines_and_handles_crlf(project: Path) -> None:
    (project / "d.jsonl").write_text('{"a": 1}\r\n\r\n{"a": 2}\r\n', encoding="utf-8", newline="")
    assert Dataset.from_file("d.jsonl").items == [{"a": 1}, {"a": 2}]


def test_jsonl_keeps_unicode_line_separator_inside_a_string(project: Path) -> None:
    line = json.dumps({"input": "a\u2028b\x85c"}, ensure_ascii=False)
    (project / "d.jsonl").write_text(line + "\n" + '{"input": "next"}\n', encoding="utf-8")
    assert [r["input"] for r in Dataset.from_file("d.jsonl")] == ["a\u2028b\x85c", "next"]


def test_explicit_format_overrides_extension(project: Path) -> None:
    (project / "data.txt").write_text('{"a": 1}\n', encoding="utf-8")
    assert Dataset.from_file("data.txt", format="jsonl").items == [{"a": 1}]


def test_malformed_jsonl_line_names_file_and_line(project: Path) -> None:
    (project / "bad.jsonl").write_text('{"a": 1}\n{"a": 2}\n{"a": \n', encoding="utf-8")
    with pytest.raises(DatasetError, match=r"bad\.jsonl, line 3: invalid JSON"):
        Dataset.from_file("bad.jsonl")


def test_every_bad_line_of_a_dataset_is_named_at_once(project: Path) -> None:
    (project / "bad.jsonl").write_text('{"a": 1}\n{"a": \n[1]\n{"a": 2}\n"x"\n', encoding="utf-8")
    with pytest.raises(DatasetError) as raised:
        Dataset.from_file("bad.jsonl")
    assert str(raised.value).splitlines() == [
        "3 bad lines in bad.jsonl:",
        "bad.jsonl, line 2: invalid JSON (Expecting value at column 7); each line must be one JSON object.",
        "bad.jsonl, line 3: expected a JSON object, got list.",
        "bad.jsonl, line 5: expected a JSON object, got str."]
    (project / "bad.csv").write_text('input,expected_output\nq,a\nq,a,extra\nq\n', encoding="utf-8")
    with pytest.raises(DatasetError) as raised:
        Dataset.from_file("bad.csv")
    assert str(raised.value).splitlines() == [
        "2 bad lines in bad.csv:",
        "bad.csv, line 3: 3 fields where the header has 2; quote fields that contain commas.",
        "bad.csv, line 4: 1 fields where the header has 2; quote fields that contain commas."]
    (project / "many.jsonl").write_text("{oops\n" * 25, encoding="utf-8")
    with pytest.raises(DatasetError) as raised:
        Dataset.from_file("many.jsonl")
    said = str(raised.value).splitlines()
    assert said[0] == "25 bad lines in many.jsonl:" and len(said) == 22  # the count, 20 lines, the rest counted
    assert said[20].startswith("many.jsonl, line 20: invalid JSON") and said[21] == "... and 5 more bad lines"


def test_jsonl_line_that_is_not_an_object_names_line(project: Path) -> None:
    (project / "d.jsonl").write_text('{"a": 1}\n[1, 2]\n', encoding="utf-8")
    with pytest.raises(DatasetError, match=r"d\.jsonl, line 2: expected a JSON object, got list"):
        Dataset.from_file("d.jsonl")


def test_csv_row_with_wrong_field_count_names_file_and_line(project: Path) -> None:
    (project / "bad.csv").write_text("input,expected_output\na,b\nc,d,e\n", encoding="utf-8")
    with pytest.raises(DatasetError, match=r"bad\.csv, line 3: 3 fields where the header has 2"):
        Dataset.from_file("bad.csv")


def test_csv_bad_multiline_row_names_the_line_it_starts_on(project: Path) -> None:
    (project / "bad.csv").write_text('input,out\na,b\n"x\ny",1,2\n', encoding="utf-8")
    with pytest.raises(DatasetError, match=r"bad\.csv, line 3: 3 fields"):
        Dataset.from_file("bad.csv")


@pytest.mark.parametrize("header", ["a,,b", "a,a", ""])
def test_csv_header_needs_unique_non_empty_names(project: Path, header: str) -> None:
    (project / "h.csv").write_text(f"{header}\n1,2,3\n", encoding="utf-8")
    with pytest.raises(DatasetError, match=r"h\.csv, line 1: the header row needs unique, non-empty"):
        Dataset.from_file("h.csv")


def test_invalid_json_file_names_file_and_line(project: Path) -> None:
    (project / "bad.json").write_text('[\n  {"a": 1},\n  {"a": }\n]\n', encoding="utf-8")
    with pytest.raises(DatasetError, match=r"bad\.json, line 3: invalid JSON"):
        Dataset.from_file("bad.json")


def test_json_array_with_non_object_item(project: Path) -> None:
    (project / "d.json").write_text('[{"a": 1}, 5]', encoding="utf-8")
    with pytest.raises(DatasetError, match=r"d\.json: item 1 is a int, not an object"):
        Dataset.from_file("d.json")


def test_json_object_without_items(project: Path) -> None:
    (project / "d.json").write_text('{"rows": []}', encoding="utf-8")
    with pytest.raises(DatasetError, match="needs an 'items' array"):
        Dataset.from_file("d.json")


def test_unsupported_extension_is_a_clear_error(project: Path) -> None:
    (project / "data.xlsx").write_text("x", encoding="utf-8")
    with pytest.raises(DatasetError, match=r"unsupported format '\.xlsx'; use one of \.json, \.jsonl, \.csv"):
        Dataset.from_file("data.xlsx")


def test_missing_file_is_a_clear_error(project: Path) -> None:
    with pytest.raises(DatasetError, match=r"Dataset file nope\.jsonl does not exist"):
        Dataset.from_file("nope.jsonl")


def test_non_utf8_file_is_a_clear_error(project: Path) -> None:
    (project / "latin.csv").write_bytes("name\ncaf\xe9\n".encode("latin-1"))
    with pytest.raises(DatasetError, match=r"latin\.csv is not UTF-8"):
        Dataset.from_file("latin.csv")


# -- URLs -----------------------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["array.json", "object.json", "data.jsonl", "data.csv", "bom.csv"])
def test_from_url_reads_each_format(served: str, name: str) -> None:
    ds = Dataset.from_url(f"{served}/{name}")
    assert ds.items == ITEMS
    assert ds.source == f"{served}/{name}"


@pytest.mark.parametrize("suffix", ["?v=2", "#top", "?v=2#top"])
def test_from_url_ignores_query_and_fragment_for_format(served: str, suffix: str) -> None:
    assert Dataset.from_url(f"{served}/data.jsonl{suffix}").items == ITEMS


def test_from_url_404_is_dataset_error(served: str) -> None:
    with pytest.raises(DatasetError, match="HTTP 404"):
        Dataset.from_url(f"{served}/missing.json")


def test_from_url_rejects_other_schemes() -> None:
    with pytest.raises(DatasetError, match="must start with http:// or https://"):
        Dataset.from_url("ftp://example.com/data.json")


def test_from_url_malformed_line_names_url_and_line(served: str, tmp_path: Path) -> None:
    (tmp_path / "www" / "bad.jsonl").write_text('{"a": 1}\nnot json\n', encoding="utf-8")
    with pytest.raises(DatasetError, match=r"bad\.jsonl, line 2: invalid JSON"):
        Dataset.from_url(f"{served}/bad.jsonl")


def test_sample_is_reproducible_by_default() -> None:
    data = Dataset([{"i": i} for i in range(100)])
    assert list(data.sample(10)) == list(data.sample(10)) == list(data.sample(10, seed=0))
    assert list(data.sample(10, seed=1)) != list(data.sample(10))


@pytest.mark.slow
def test_a_relative_path_is_also_found_beside_the_calling_file(tmp_path: Path, monkeypatch) -> None:
    import subprocess
    import sys

    folder = tmp_path / "experiments"
    folder.mkdir()
    (folder / "qa.jsonl").write_text('{"input": "a"}\n{"input": "b"}\n')
    (folder / "exp.py").write_text("from cobalt_lib import Dataset\nprint(len(Dataset.from_file('qa.jsonl')))\n")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    result = subprocess.run([sys.executable, str(folder / "exp.py")], cwd=elsewhere, capture_output=True, text=True)
    assert result.stdout.strip() == "2", result.stderr
    monkeypatch.chdir(elsewhere)
    with pytest.raises(DatasetError, match=r"neither in .*elsewhere nor beside the calling file"):
        Dataset.from_file("missing.jsonl")


def test_a_name_without_extension_asks_for_format(tmp_path: Path) -> None:
    (tmp_path / "data").write_text('{"input": 1}\n')
    with pytest.raises(DatasetError, match=r"Cannot tell the format of dataset .*data from its name; pass format="):
        Dataset.from_file(tmp_path / "data")
    assert len(Dataset.from_file(tmp_path / "data", format="jsonl")) == 1


# -- checks carried by items ------------------------------------------------------------------------

GOOD_CHECK = {"type": "contains", "value": "Paris"}
BAD_CHECK = {"type": "contains", "valu": "Paris"}
BAD_MESSAGE = r"check 1 \(contains\) has no option 'valu'; did you mean 'value'\?"


def test_item_checks_in_jsonl_are_validated_naming_file_and_line(project: Path) -> None:
    path = project / "qa.jsonl"
    lines = [{"input": "a", "checks": [GOOD_CHECK]}, {"input": "b"}, {"input": "c", "checks": [GOOD_CHECK, BAD_CHECK]}]
    path.write_text("\n".join(json.dumps(line) for line in lines[:2]) + "\n\n" + json.dumps(lines[2]) + "\n")
    from cobalt_lib import EvaluatorError

    with pytest.raises(EvaluatorError, match=r"qa\.jsonl, line 4: check 2 \(contains\) has no option 'valu'"):
        Dataset.from_file(path)
    path.write_text("\n".join(json.dumps(line) for line in lines[:2]) + "\n")
    assert Dataset.from_file(path)[0]["checks"] == [GOOD_CHECK]


@pytest.mark.parametrize("wrapped", [False, True], ids=["array", "object"])
def test_item_checks_in_a_json_file_name_the_line_the_item_starts_on(project: Path, wrapped: bool) -> None:
    items = [{"input": "a", "checks": [GOOD_CHECK]}, {"input": "b"}, {"input": "c", "checks": [BAD_CHECK]}]
    text = json.dumps({"name": "qa", "items": items} if wrapped else items, indent=2)
    expected_line = text.splitlines().index('      "input": "c",' if wrapped else '    "input": "c",')  # 0-based
    (project / "qa.json").write_text(text)
    from cobalt_lib import EvaluatorError

    with pytest.raises(EvaluatorError, match=rf"qa\.json, line {expected_line}: {BAD_MESSAGE}"):
        Dataset.from_file(project / "qa.json")


def test_item_checks_in_a_csv_column_are_json_text(project: Path) -> None:
    from cobalt_lib import EvaluatorError

    path = project / "qa.csv"
    good = json.dumps([GOOD_CHECK]).replace('"', '""')
    path.write_text(f'input,checks\na,"{good}"\nb,\nc,"[{{""type"": ""regx""}}]"\n')
    with pytest.raises(EvaluatorError, match=r"qa\.csv, line 4: check 1 has unknown type 'regx'; did you mean"):
        Dataset.from_file(path)
    path.write_text(f'input,checks\na,"{good}"\nb,\nc,not json\n')
    with pytest.raises(EvaluatorError, match=r"qa\.csv, line 4: the checks are not valid JSON"):
        Dataset.from_file(path)
    path.write_text(f'input,checks\na,"{good}"\nb,\n')
    data = Dataset.from_file(path)
    assert data[0]["checks"] == [GOOD_CHECK] and data[1] == {"input": "b"}


@pytest.mark.parametrize("name", ["deep.jsonl", "deep.json"])
def test_a_value_nested_5000_levels_names_the_data_file_and_line(tmp_path: Path, name: str) -> None:
    deep = '{"input": ' + "[" * 5000 + "]" * 5000 + "}"
    path = tmp_path / name
    path.write_text('{"input": "ok"}\n' + deep + "\n" if name.endswith("l") else f'[{{"input": "ok"}},\n{deep}]')
    with pytest.raises(DatasetError) as raised:
        Dataset.from_file(path)
    where = f"{path}, line 2" if name.endswith("l") else str(path)
    assert str(raised.value).startswith(f"{where}: a value is nested deeper than Python can read")
