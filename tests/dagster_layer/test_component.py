"""`CobaltComponent` in a Dagster project: scaffolded and loaded by Dagster's own component machinery,
and, end to end, in a project made by `create-dagster` and checked by `dg` as a user would."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import dagster as dg
import pytest
import yaml
from dagster.components.core.component_tree import ComponentTreeException
from dagster.components.testing import DefsFolderSandbox, create_defs_folder_sandbox
from pydantic import ValidationError

from cobalt_dagster import CobaltComponent, CobaltTranslator, build_definitions
from cobalt_lib import ConfigError, Experiment
from cobalt_lib.gates import Assertion

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "dagster_project"
BIN = Path(sys.executable).parent
TYPE = "cobalt_dagster.CobaltComponent"
STAGES = ("dataset", "outputs", "scores", "aggregates")
EXPERIMENTS = {"support-bot": "support_bot", "my-summarizer-agent": "my_summarizer_agent"}


def copy_example(dest: Path) -> Path:
    shutil.copytree(EXAMPLE, dest, ignore=shutil.ignore_patterns(".cobalt", "__pycache__"))
    return dest


@pytest.fixture
def sandbox() -> Iterator[DefsFolderSandbox]:
    with create_defs_folder_sandbox() as box:
        yield box


def write_defs(box: DefsFolderSandbox, name: str, attributes: dict[str, Any]) -> Path:
    """`defs/<name>/defs.yaml` naming the component as a user's defs.yaml does."""
    folder = box.defs_folder_path / name
    folder.mkdir()
    (folder / "defs.yaml").write_text(yaml.safe_dump({"type": TYPE, "attributes": attributes}))
    return folder


def asset_names(defs: dg.Definitions) -> set[str]:
    return {key.to_user_string() for key in defs.resolve_all_asset_keys()}


def test_scaffolded_component_loads_every_experiment(sandbox: DefsFolderSandbox, tmp_path: Path) -> None:
    project = copy_example(tmp_path / "support")
    path = sandbox.scaffold_component(component_cls=CobaltComponent, defs_path="evals",
                                      scaffold_params={"project_dir": str(project)})
    written = yaml.safe_load((path / "defs.yaml").read_text())["attributes"]
    assert written == {"project_dir": os.path.relpath(project, path)}  # relative to the defs.yaml's folder

    with sandbox.load_component_and_build_defs(defs_path=path) as (component, defs):
        assert isinstance(component, CobaltComponent)
        assert asset_names(defs) == {f"{n}/{s}" for n in EXPERIMENTS.values() for s in STAGES}
        assert {j.name for j in defs.jobs or []} == {f"{n}_eval" for n in EXPERIMENTS.values()}
        assert {s.name for s in defs.schedules or []} == {"support_bot_schedule"}
        assert set(defs.resources or {}) == {"cobalt"}
        assert defs.resources["cobalt"].project_dir == str(project)  # type: ignore[index]
        # The host project's executor runs cobalt's jobs: the component brings none to clash with it.
        assert defs.executor is None
        host = dg.Definitions.merge(defs, dg.Definitions(executor=dg.multiprocess_executor))
        assert host.executor is dg.multiprocess_executor


def test_experiments_keeps_the_named_ones(sandbox: DefsFolderSandbox) -> None:
    copy_example(sandbox.project_root / "support")
    # Dagster's templates work in project_dir: this one names the Dagster project's root.
    path = write_defs(sandbox, "evals", {"project_dir": "{{ context.project_root }}/support",
                                         "experiments": ["support-bot"]})
    with sandbox.load_component_and_build_defs(defs_path=path) as (_, defs):
        assert asset_names(defs) == {f"support_bot/{s}" for s in STAGES}
        assert {j.name for j in defs.jobs or []} == {"support_bot_eval"}


TRANSLATION = {"key": "evals/{{ experiment }}/{{ stage }}", "group_name": "evals_{{ experiment }}",
               "owners": ["team:ml"], "tags": {"stage": "{{ stage }}"}}


def test_translation_renames_keys_and_groups_and_the_checks_follow(sandbox: DefsFolderSandbox) -> None:
    copy_example(sandbox.project_root / "support")
    path = write_defs(sandbox, "evals", {"project_dir": "{{ context.project_root }}/support",
                                         "translation": TRANSLATION})
    with sandbox.load_component_and_build_defs(defs_path=path) as (_, defs):
        specs = {s.key.to_user_string(): s for s in defs.resolve_all_asset_specs()}
        assert set(specs) == {f"evals/{n}/{s}" for n in EXPERIMENTS.values() for s in STAGES}
        assert {k: (s.group_name, s.owners, s.tags["stage"]) for k, s in specs.items()} == {
            f"evals/{n}/{s}": (f"evals_{n}", ["team:ml"], s) for n in EXPERIMENTS.values() for s in STAGES}
        job = defs.resolve_job_def("support_bot_eval")
        assert {k.to_user_string() for k in job.asset_layer.asset_graph.asset_check_keys} == {
            f"evals/support_bot/aggregates:{c}"
            for c in ("gate_exact_min_0_75", "gate_every_evaluator_scored", "gate_error_rate_max_0")}


def test_a_translator_subclass_names_the_assets_of_build_definitions(tmp_path: Path) -> None:
    class Prefixed(CobaltTranslator):
        def get_asset_spec(self, experiment: Experiment, stage: str) -> dg.AssetSpec:
            spec = super().get_asset_spec(experiment, stage)
            return spec.replace_attributes(key=spec.key.with_prefix("host"), group_name="evals")

        def get_check_spec(self, experiment: Experiment, gate: Assertion) -> dg.AssetCheckSpec:
            spec = super().get_check_spec(experiment, gate)
            return dg.AssetCheckSpec(name=f"quality_{spec.name}", asset=spec.asset_key, blocking=True)

    defs = build_definitions(copy_example(tmp_path / "support"), translator=Prefixed())
    assert asset_names(defs) == {f"host/{n}/{s}" for n in EXPERIMENTS.values() for s in STAGES}
    assert {s.group_name for s in defs.resolve_all_asset_specs()} == {"evals"}
    checks = {k.to_user_string() for k in defs.resolve_job_def("my_summarizer_agent_eval").asset_layer.asset_graph
              .asset_check_keys}
    assert checks == {"host/my_summarizer_agent/aggregates:quality_gate_every_evaluator_scored",
                      "host/my_summarizer_agent/aggregates:quality_gate_error_rate_max_0"}


@pytest.mark.parametrize(("attributes", "message"), [
    ({"project_dir": "../nowhere"},
     "{defs}: project_dir '../nowhere' names {base}/nowhere, which is not a directory; set project_dir to your "
     "cobalt project's folder (the one holding cobalt.toml), relative to this defs.yaml's folder or absolute."),
    ({"project_dir": "{project}", "experiments": ["support-bot", "nope"]},
     "{defs}: experiments names 'nope', which the cobalt project at {project} does not declare; it declares "
     "'my-summarizer-agent', 'support-bot'."),
])
def test_a_bad_attribute_is_one_sentence_naming_the_field(sandbox: DefsFolderSandbox, tmp_path: Path,
                                                          attributes: dict[str, Any], message: str) -> None:
    project = copy_example(tmp_path / "support")
    filled = {k: v.format(project=project) if isinstance(v, str) else v for k, v in attributes.items()}
    path = write_defs(sandbox, "evals", filled)
    with pytest.raises(ComponentTreeException) as raised, sandbox.load_component_and_build_defs(defs_path=path):
        pass
    cause = raised.value.__cause__
    assert isinstance(cause, ConfigError)
    base = sandbox.defs_folder_path.resolve()
    assert str(cause) == message.format(defs=path / "defs.yaml", base=base, project=project)


def test_scaffolding_a_missing_project_dir_leaves_nothing_behind(sandbox: DefsFolderSandbox, tmp_path: Path) -> None:
    missing = tmp_path / "nowhere"
    with pytest.raises(ValidationError) as raised:
        sandbox.scaffold_component(component_cls=CobaltComponent, defs_path="evals",
                                   scaffold_params={"project_dir": str(missing)})
    assert raised.value.errors()[0]["ctx"]["error"].args == (
        f"--project-dir {str(missing)!r} names {missing}, which is not a directory; pass the folder of your cobalt "
        "project (the one holding cobalt.toml)",)
    assert not (sandbox.defs_folder_path / "evals").exists()


def dg_run(*args: str, cwd: Path, env: dict[str, str]) -> str:
    done = subprocess.run([str(BIN / args[0]), *args[1:]], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=120, check=False)
    assert done.returncode == 0, f"{' '.join(args)} exited {done.returncode}:\n{done.stdout}\n{done.stderr}"
    return done.stdout


@pytest.mark.slow
def test_dg_scaffolds_checks_and_lists_the_component(tmp_path: Path) -> None:
    """The user's commands: create-dagster, `dg scaffold defs`, `dg check defs`, `dg list defs`."""
    project = copy_example(tmp_path / "support")
    home = tmp_path / "dagster_home"
    home.mkdir()
    (home / "dagster.yaml").write_text("telemetry:\n  enabled: false\n")
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}", "DAGSTER_HOME": str(home),
           "DAGSTER_DG_UPDATE_CHECK_ENABLED": "0", "NO_COLOR": "1"}
    env.pop("COBALT_PROJECT_DIR", None)
    dg_run("create-dagster", "project", "host", "--no-uv-sync", cwd=tmp_path, env=env)
    host = tmp_path / "host"
    # `uv sync` would install the host project into its environment; `src` on the path stands for that.
    env["PYTHONPATH"] = str(host / "src")

    dg_run("dg", "scaffold", "defs", TYPE, "cobalt_evals", "--project-dir", "../support", cwd=host, env=env)
    defs_yaml = host / "src" / "host" / "defs" / "cobalt_evals" / "defs.yaml"
    assert yaml.safe_load(defs_yaml.read_text()) == {"type": TYPE,
                                                     "attributes": {"project_dir": "../../../../../support"}}

    assert "All definitions loaded successfully" in dg_run("dg", "check", "defs", cwd=host, env=env)
    listed = json.loads(dg_run("dg", "list", "defs", "--json", cwd=host, env=env))
    expected = build_definitions(project)
    assert {a["asset_key"] for a in listed["assets"]} == {f"{n}/{s}" for n in EXPERIMENTS.values() for s in STAGES}
    assert {c["key"] for c in listed["asset_checks"]} == {
        "support_bot/aggregates:gate_exact_min_0_75", "support_bot/aggregates:gate_every_evaluator_scored",
        "support_bot/aggregates:gate_error_rate_max_0", "my_summarizer_agent/aggregates:gate_every_evaluator_scored",
        "my_summarizer_agent/aggregates:gate_error_rate_max_0"}
    assert {j["name"] for j in listed["jobs"]} == {"support_bot_eval", "my_summarizer_agent_eval"}
    assert {s["name"] for s in listed["schedules"]} == {"support_bot_schedule"}
    assert "cobalt_sensor" in {s["name"] for s in listed["sensors"]}
    assert {s["name"] for s in listed["sensors"]} == {s.name for s in expected.sensors or []}
    assert {r["name"] for r in listed["resources"]} == {"cobalt"}
    assert {a["source"] for a in listed["assets"]} == {"src/host/defs/cobalt_evals/defs.yaml:1"}

    # A `translation:` block, as in dagster-dbt's and dagster-sling's components: `dg` shows the new names.
    written = yaml.safe_load(defs_yaml.read_text())
    written["attributes"]["translation"] = TRANSLATION
    defs_yaml.write_text(yaml.safe_dump(written))
    assert "All definitions loaded successfully" in dg_run("dg", "check", "defs", cwd=host, env=env)
    listed = json.loads(dg_run("dg", "list", "defs", "--json", cwd=host, env=env))
    assert {(a["asset_key"], a["group_name"]) for a in listed["assets"]} == {
        (f"evals/{n}/{s}", f"evals_{n}") for n in EXPERIMENTS.values() for s in STAGES}
    assert "evals/support_bot/aggregates:gate_exact_min_0_75" in {c["key"] for c in listed["asset_checks"]}


@pytest.mark.slow
def test_dg_lists_the_component_type(tmp_path: Path) -> None:
    """The entry point registers the component: `dg list components` shows it in any Python environment
    where cobalt is installed."""
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}", "DAGSTER_DG_UPDATE_CHECK_ENABLED": "0"}
    listed = json.loads(dg_run("dg", "list", "components", "--json", cwd=tmp_path, env=env))
    ours = [c for c in listed["items"] if c["key"] == TYPE]
    assert len(ours) == 1
    assert ours[0]["summary"] == "A cobalt project's experiments as assets, gate checks, jobs, schedules and sensors."
