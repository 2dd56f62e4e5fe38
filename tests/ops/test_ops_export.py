"""Exporting a stored run through `cobalt_lib.ops`: format choice, baseline refusal, warnings."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from ops_project import interrupted_qa_run, qa_config, run

from cobalt_lib import ConfigError
from cobalt_lib.ops import export_format, export_run


@pytest.mark.parametrize(("given", "output", "chosen"), [
    ("csv", None, "csv"), (None, Path("out/report.XML"), "junit"), (None, Path("r.md"), "markdown"),
    ("baseline", Path("b.json"), "baseline")])
def test_the_format_is_the_one_given_else_the_files_extension(given: str | None, output: Path | None,
                                                               chosen: str) -> None:
    assert export_format(given, output) == chosen


@pytest.mark.parametrize(("given", "output", "message"), [
    (None, None, "Got no --format; choose one of csv, markdown, json, junit, baseline, every-eval-ever, inspect."),
    (None, Path("r.txt"), "Got no --format and cannot tell one from 'r.txt'; pass --format"),
    ("yaml", None, "Got --format 'yaml'; choose one of")])
def test_a_format_that_cannot_be_told_is_an_error(given: str | None, output: Path | None, message: str) -> None:
    with pytest.raises(ConfigError, match=re.escape(message)):
        export_format(given, output)


def test_export_renders_the_run_and_warns_about_an_unfinished_one(
        project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    config = qa_config(project)
    with pytest.raises(ConfigError, match="There are no stored runs yet"):
        export_run(config, "latest", format="json")
    done = run(config, "qa")
    exported = export_run(config, "latest", output=Path("results.json"))
    assert (exported.run_id, exported.format, exported.warnings) == (done.id, "json", [])
    assert json.loads(exported.text)["id"] == done.id
    baseline = json.loads(export_run(config, done.id, format="baseline").text)
    assert baseline.pop("$identity")["dataset"]["items"] == len(done.items)  # what the means measured
    assert baseline.pop("$items") == [item.item_id for item in done.items]  # over which items
    assert baseline == {"exact": 1.0, "short": 1.0}
    interrupted_qa_run(config, monkeypatch)
    partial = export_run(config, "latest", format="csv", experiment="qa")
    assert partial.warnings == [f"run {partial.run_id} is incomplete: the export holds only its finished items."]
    with pytest.raises(ConfigError, match=re.escape(f"Run {partial.run_id} is incomplete; a baseline must come "
                                                    "from a completed run with scores")):
        export_run(config, "latest", format="baseline")
