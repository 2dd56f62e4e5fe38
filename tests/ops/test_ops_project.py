"""The project's config warnings and run requests through `cobalt_lib.ops`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from ops_project import qa_config

from cobalt_lib import ConfigError, load_config
from cobalt_lib.ops import config_warnings, request_experiment


def test_a_shadowed_config_file_is_a_warning_naming_both(project: Path) -> None:
    config = qa_config(project)
    assert config_warnings(load_config(project)) == []
    (project / "cobalt.toml").write_text("concurrency = 2\n")
    (project / "pyproject.toml").write_text("[tool.cobalt]\nconcurrency = 3\n")
    config = load_config(project)
    assert config_warnings(config) == [
        f"{project / 'pyproject.toml'} is ignored: {project / 'cobalt.toml'} comes first and is the "
        "configuration used; merge the two files into one."]


def test_a_run_request_is_a_file_for_the_daemon_and_says_when_none_runs(project: Path) -> None:
    config = qa_config(project)
    with pytest.raises(ConfigError, match="No experiment named 'nope'; known: "):
        request_experiment(config, "nope")
    requested = request_experiment(config, "qa", concurrency=3)
    assert (requested.experiment, requested.daemon_running) == ("qa", False)
    assert requested.warnings == ["no `cobalt serve` daemon is running for this project, so the request waits "
                                  "until `cobalt serve` runs."]
    assert json.loads(Path(requested.path).read_text()) == {"experiment": "qa", "run_id": requested.run_id,
                                                             "concurrency": 3}
