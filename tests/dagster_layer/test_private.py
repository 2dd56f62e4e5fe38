"""The private Dagster calls (cobalt_dagster/_private.py), the only ones cobalt makes, against the
installed Dagster, which the pin in pyproject.toml bounds: raising the pin means this file passing on
the new minor."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import dagster as dg
import pytest
from packaging.requirements import Requirement
from packaging.version import Version

from cobalt_dagster._private import (
    NO_COMPUTE_LOGS,
    execute_created_run,
    heartbeat_code_servers_every,
    open_instance,
    refresh_workspace_every,
    served_job_origin,
    watch_code_servers_every,
)

ROOT = Path(__file__).resolve().parents[2]


def _pin(name: str) -> Requirement:
    deps = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    return next(r for r in map(Requirement, deps) if r.name == name)


def test_the_installed_dagster_is_within_a_pin_with_a_ceiling() -> None:
    pin = _pin("dagster")
    assert Version(dg.__version__) in pin.specifier
    assert sorted(str(s) for s in pin.specifier) == ["<1.14", ">=1.13"]
    assert _pin("dagster-webserver").specifier == pin.specifier


def test_no_other_module_names_a_private_dagster_module() -> None:
    private = re.compile(r"\bdagster\._")
    naming = sorted(str(p.relative_to(ROOT)) for package in ("cobalt_dagster", "cobalt_lib")
                    for p in (ROOT / package).rglob("*.py") if private.search(p.read_text(encoding="utf-8")))
    assert naming == ["cobalt_dagster/_private.py"]


@pytest.mark.slow
def test_an_instance_opened_with_overrides_captures_no_compute_logs(tmp_path: Path) -> None:
    (tmp_path / "dagster.yaml").write_text("telemetry:\n  enabled: false\n")
    with open_instance(tmp_path, NO_COMPUTE_LOGS) as instance:
        assert type(instance.compute_log_manager).__name__ == "NoOpComputeLogManager"
    with open_instance(tmp_path, None) as instance:
        assert type(instance.compute_log_manager).__name__ == "LocalComputeLogManager"


def test_the_origin_of_a_served_job_names_its_code_location(tmp_path: Path) -> None:
    origin = served_job_origin("module", "cobalt_dagster.definitions", str(tmp_path), "__repository__", "x_eval")
    assert origin is not None and origin.job_name == "x_eval"
    assert origin.repository_origin.get_label() == "__repository__@cobalt_dagster.definitions"
    workspace = tmp_path / "workspace.yaml"
    workspace.write_text("load_from: []\n")
    assert served_job_origin("workspace", str(workspace), str(tmp_path), "__repository__", "x_eval") is None


@pytest.mark.slow
def test_a_run_created_on_the_instance_executes_in_process(tmp_path: Path) -> None:
    @dg.asset
    def answer() -> int:
        return 42

    job = dg.Definitions(assets=[answer], jobs=[dg.define_asset_job("answer_job")]).resolve_job_def("answer_job")
    (tmp_path / "dagster.yaml").write_text("telemetry:\n  enabled: false\n")
    with open_instance(tmp_path, NO_COMPUTE_LOGS) as instance:
        created = instance.create_run_for_job(job, run_config={"execution": {"config": {"in_process": {}}}},
                                              tags={"cobalt/test": "yes"})
        execute_created_run(job, created, instance)
        run = instance.get_run_by_id(created.run_id)
        assert run is not None and run.status == dg.DagsterRunStatus.SUCCESS and run.tags["cobalt/test"] == "yes"
        assert instance.get_latest_materialization_event(dg.AssetKey("answer")) is not None


def test_the_intervals_cobalt_serve_retunes_are_dagsters_own_constants() -> None:
    """Each setter refuses a Dagster without its constant; set here as `cobalt serve`'s processes set them."""
    from importlib import import_module

    constants = [("dagster._grpc.server_watcher", "WATCH_INTERVAL", watch_code_servers_every),
                 ("dagster._daemon.controller", "RELOAD_WORKSPACE_INTERVAL", refresh_workspace_every),
                 ("dagster._grpc.client", "CLIENT_HEARTBEAT_INTERVAL", heartbeat_code_servers_every)]
    for module_name, name, setter in constants:
        module = import_module(module_name)
        default = getattr(module, name)
        try:
            setter(7)
            assert getattr(module, name) == 7
        finally:
            setattr(module, name, default)
