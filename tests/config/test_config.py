"""Configuration: defaults, the three config files, discovery, clear errors and secrets."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cobalt_lib import define_config
from cobalt_lib._errors import ConfigError
from cobalt_lib.config._config import Config, find_project_root, load_config, parse_duration

SECRET = "sk-test-SECRET-config-0123456789"


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


# -- defaults -------------------------------------------------------------------------------------

def test_defaults_without_a_config_file(project: Path) -> None:
    config = load_config()
    assert config.source is None
    assert config.root == project.resolve()
    assert config.concurrency == 5
    assert config.timeout == 30
    assert config.test_dir == "experiments"
    assert config.test_match == ["**/*.cobalt.py", "**/*_experiment.py"]
    assert config.output_dir == ".cobalt"
    assert config.cache.enabled is True
    assert config.cache.ttl_seconds == 604800
    assert config.judge.provider == "openai"
    assert config.dashboard.port == 4000


def test_find_project_root_without_config_is_the_start_dir(project: Path) -> None:
    assert find_project_root() == (project.resolve(), None)


def test_without_config_the_root_is_the_nearest_directory_holding_experiments_or_a_store(project: Path) -> None:
    deep = project / "experiments" / "qa" / "data"
    deep.mkdir(parents=True)
    assert find_project_root(deep) == (project.resolve(), None)
    (deep.parent / ".cobalt").mkdir()  # a store nearer than experiments/: its directory is the root
    assert find_project_root(deep) == (deep.parent.resolve(), None)
    (project / "experiments" / ".cobalt").mkdir()  # a store an older cobalt left in experiments/ itself
    assert find_project_root(project / "experiments") == (project.resolve(), None)
    named = project / "work" / "experiments"  # a project that happens to be named experiments
    (named / "experiments").mkdir(parents=True)
    assert find_project_root(named / "experiments") == (named.resolve(), None)


@pytest.mark.slow
def test_history_from_a_subdirectory_of_a_project_without_config_sees_its_runs(project: Path) -> None:
    import os
    import subprocess
    import sys

    cobalt = str(Path(sys.executable).parent / "cobalt")
    (project / "experiments").mkdir()
    (project / "experiments" / "qa.cobalt.py").write_text(
        "from cobalt_lib import Evaluator, experiment\n"
        "experiment('qa', [{'input': 'a', 'expected_output': 'a'}], lambda ctx: ctx.input,\n"
        "           evaluators=[Evaluator(name='exact', type='exact-match')])\n")
    env = {k: v for k, v in os.environ.items() if k not in ("GITHUB_ACTIONS", "GITHUB_STEP_SUMMARY")}
    run = subprocess.run([cobalt, "run", "--no-dagster"], cwd=project / "experiments", capture_output=True,
                         text=True, timeout=120, env=env)
    assert run.returncode == 0, run.stderr
    history = subprocess.run([cobalt, "history", "--json"], cwd=project / "experiments", capture_output=True,
                             text=True, timeout=120, env=env)
    assert history.returncode == 0, history.stderr
    assert [e["experiment"] for e in json.loads(history.stdout)] == ["qa"]
    assert (project / ".cobalt" / "cobalt.duckdb").is_file() and not (project / "experiments" / ".cobalt").exists()


def test_output_path_is_relative_to_root(project: Path) -> None:
    write(project / "cobalt.toml", 'output_dir = "out"\n')
    sub = project / "a" / "b"
    sub.mkdir(parents=True)
    assert load_config(sub).output_path == project.resolve() / "out"


# -- the three files ------------------------------------------------------------------------------

def test_cobalt_toml(project: Path) -> None:
    write(project / "cobalt.toml", 'concurrency = 12\ntimeout = 9.5\n[judge]\nmodel = "gpt-4o"\n'
          '[cache]\nttl = "12h"\n[ci.thresholds]\nrelevance = { min = 0.8 }\n')
    config = load_config()
    assert config.source == project.resolve() / "cobalt.toml"
    assert (config.concurrency, config.timeout, config.judge.model) == (12, 9.5, "gpt-4o")
    assert config.cache.ttl_seconds == 43200
    assert config.ci.thresholds["relevance"].min == 0.8


def test_pyproject_tool_cobalt(project: Path) -> None:
    write(project / "pyproject.toml", '[project]\nname = "x"\n[tool.cobalt]\nconcurrency = 3\n'
          '[tool.cobalt.judge]\nprovider = "anthropic"\n')
    config = load_config()
    assert config.source == project.resolve() / "pyproject.toml"
    assert config.concurrency == 3
    assert config.judge.provider == "anthropic"


def test_pyproject_without_tool_cobalt_is_ignored(project: Path) -> None:
    write(project / "pyproject.toml", '[project]\nname = "x"\n[tool.ruff]\nline-length = 100\n')
    sub = project / "sub"
    write(sub / "pyproject.toml", '[project]\nname = "y"\n')
    config = load_config(sub)
    assert config.source is None
    assert config.concurrency == 5


def test_cobalt_config_py(project: Path) -> None:
    write(project / "cobalt.config.py", "from cobalt_lib import define_config\n"
          "config = define_config(concurrency=7, judge={'model': 'gpt-4.1'})\n")
    config = load_config()
    assert config.source == project.resolve() / "cobalt.config.py"
    assert (config.concurrency, config.judge.model) == (7, "gpt-4.1")


def test_cobalt_config_py_without_config_variable(project: Path) -> None:
    write(project / "cobalt.config.py", "settings = {}\n")
    with pytest.raises(ConfigError, match=r"must define `config = define_config\(...\)`"):
        load_config()


def test_cobalt_config_py_that_raises_names_the_file(project: Path) -> None:
    write(project / "cobalt.config.py", "raise RuntimeError('boom')\n")
    with pytest.raises(ConfigError, match=r"cobalt\.config\.py raised RuntimeError: boom"):
        load_config()


def test_cobalt_config_py_with_bad_key_names_the_file(project: Path) -> None:
    write(project / "cobalt.config.py", "from cobalt_lib import define_config\nconfig = define_config(concurency=2)\n")
    with pytest.raises(ConfigError, match=r"cobalt\.config\.py: .*unknown key 'concurency'"):
        load_config()


def test_invalid_toml_names_the_file(project: Path) -> None:
    write(project / "cobalt.toml", "concurrency = \n")
    with pytest.raises(ConfigError, match=r"cobalt\.toml: invalid TOML"):
        load_config()


# -- precedence and discovery ---------------------------------------------------------------------

def test_config_py_wins_over_toml_and_pyproject(project: Path) -> None:
    write(project / "cobalt.config.py", "from cobalt_lib import define_config\nconfig = define_config(concurrency=1)\n")
    write(project / "cobalt.toml", "concurrency = 2\n")
    write(project / "pyproject.toml", "[tool.cobalt]\nconcurrency = 3\n")
    assert load_config().concurrency == 1


def test_toml_wins_over_pyproject(project: Path) -> None:
    write(project / "cobalt.toml", "concurrency = 2\n")
    write(project / "pyproject.toml", "[tool.cobalt]\nconcurrency = 3\n")
    config = load_config()
    assert config.concurrency == 2
    assert config.source.name == "cobalt.toml"


def test_discovery_walks_up_from_a_subdirectory(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write(project / "cobalt.toml", "concurrency = 8\n")
    sub = project / "experiments" / "deep"
    sub.mkdir(parents=True)
    monkeypatch.chdir(sub)
    root, source = find_project_root()
    assert (root, source) == (project.resolve(), project.resolve() / "cobalt.toml")
    config = load_config()
    assert config.root == project.resolve()
    assert config.concurrency == 8


def test_nearest_config_wins_over_a_parent_one(project: Path) -> None:
    write(project / "cobalt.toml", "concurrency = 8\n")
    write(project / "inner" / "pyproject.toml", "[tool.cobalt]\nconcurrency = 4\n")
    config = load_config(project / "inner")
    assert config.root == (project / "inner").resolve()
    assert config.concurrency == 4


# -- bad input ------------------------------------------------------------------------------------

def test_unknown_key_suggests_the_closest(project: Path) -> None:
    write(project / "cobalt.toml", "concurency = 10\n")
    with pytest.raises(ConfigError, match=r"cobalt\.toml: unknown key 'concurency'; did you mean 'concurrency'\?"):
        load_config()


def test_unknown_nested_key_suggests_the_closest(project: Path) -> None:
    write(project / "cobalt.toml", '[judge]\nmodle = "gpt-4o"\n')
    with pytest.raises(ConfigError, match=r"unknown key 'judge\.modle'; did you mean 'model'\?"):
        load_config()


def test_unknown_key_in_a_table_of_tables_suggests_the_closest() -> None:
    with pytest.raises(ConfigError, match=r"unknown key 'ci\.thresholds\.relevance\.minn'; did you mean 'min'\?"):
        define_config(ci={"thresholds": {"relevance": {"minn": 0.8}}})


def test_unknown_key_without_close_match_lists_known_keys() -> None:
    with pytest.raises(ConfigError, match=r"unknown key 'zzzz'; known keys: test_dir, .*concurrency"):
        define_config(zzzz=1)


def test_unknown_key_in_pyproject(project: Path) -> None:
    write(project / "pyproject.toml", "[tool.cobalt]\ntimout = 3\n")
    with pytest.raises(ConfigError, match=r"\[tool\.cobalt\]: unknown key 'timout'; did you mean 'timeout'\?"):
        load_config()


def test_wrong_type_names_the_field(project: Path) -> None:
    write(project / "cobalt.toml", 'concurrency = "many"\n')
    with pytest.raises(ConfigError, match=r"cobalt\.toml: concurrency: .*integer.*'many'"):
        load_config()


def test_wrong_nested_type_names_the_dotted_field() -> None:
    with pytest.raises(ConfigError, match=r"judge\.max_tokens: "):
        define_config(judge={"max_tokens": "lots"})


def test_out_of_range_value_names_the_field() -> None:
    with pytest.raises(ConfigError, match=r"concurrency: .*greater than or equal to 1"):
        define_config(concurrency=0)


def test_bad_provider_names_the_field() -> None:
    with pytest.raises(ConfigError, match=r"judge\.provider: .*'openai', 'anthropic' or 'openrouter'"):
        define_config(judge={"provider": "gemini"})


def test_bad_cache_ttl_names_file_and_field(project: Path) -> None:
    write(project / "cobalt.toml", '[cache]\nttl = "soon"\n')
    with pytest.raises(ConfigError, match=r"cobalt\.toml: cache\.ttl = 'soon' is not a duration"):
        load_config()


@pytest.mark.parametrize("ttl", [True, -5])
def test_cache_ttl_rejects_booleans_and_negatives(ttl: object) -> None:
    with pytest.raises(ConfigError, match=r"cache\.ttl = .* is not a duration"):
        define_config(cache={"ttl": ttl})


# -- secrets --------------------------------------------------------------------------------------

def test_api_key_in_toml_is_rejected_naming_the_env_var(project: Path) -> None:
    write(project / "cobalt.toml", f'[judge]\napi_key = "{SECRET}"\n')
    with pytest.raises(ConfigError, match=r"judge\.api_key must not be stored in a file; set OPENAI_API_KEY") as info:
        load_config()
    assert SECRET not in str(info.value)


def test_api_key_in_toml_names_the_provider_env_var(project: Path) -> None:
    write(project / "cobalt.toml", f'[judge]\nprovider = "anthropic"\napi_key = "{SECRET}"\n')
    with pytest.raises(ConfigError, match="set ANTHROPIC_API_KEY in the environment"):
        load_config()


def test_api_key_in_pyproject_is_rejected(project: Path) -> None:
    write(project / "pyproject.toml", f'[tool.cobalt.judge]\napi_key = "{SECRET}"\n')
    with pytest.raises(ConfigError, match="must not be stored in a file"):
        load_config()


def test_define_config_keeps_api_key_but_never_serialises_it() -> None:
    config = define_config(judge={"api_key": SECRET, "model": "gpt-4o"})
    assert config.judge.api_key is not None
    assert config.judge.api_key.get_secret_value() == SECRET
    assert "api_key" not in config.public_dict()["judge"]
    for text in (json.dumps(config.public_dict()), config.model_dump_json(), str(config.model_dump()),
                 repr(config), str(config)):
        assert SECRET not in text
    assert config.public_dict()["judge"]["model"] == "gpt-4o"


def test_malformed_api_key_is_not_echoed_in_the_error() -> None:
    with pytest.raises(ConfigError, match=r"judge\.api_key: ") as info:
        define_config(judge={"api_key": [SECRET]})
    assert SECRET not in str(info.value)


def test_public_dict_is_json_safe_and_has_no_location_fields(project: Path) -> None:
    data = load_config().public_dict()
    assert json.loads(json.dumps(data)) == data
    assert "root" not in data and "source" not in data
    assert data["cache"] == {"enabled": True, "ttl": "7d"}


def test_define_config_returns_a_config() -> None:
    config = define_config(concurrency=10, webhooks=["https://hooks.example.com/x"])
    assert isinstance(config, Config)
    assert config.webhooks == ["https://hooks.example.com/x"]


# -- durations ------------------------------------------------------------------------------------

@pytest.mark.parametrize(("value", "seconds"), [
    ("90s", 90), ("15m", 900), ("12h", 43200), ("7d", 604800), ("2w", 1209600),
    ("30", 30), (" 5 m ", 300), ("1.5h", 5400), (45, 45), (0, 0), (2.5, 2.5),
])
def test_parse_duration(value: str | int | float, seconds: float) -> None:
    assert parse_duration(value) == seconds


@pytest.mark.parametrize("value", ["soon", "7 days", "-5s", "5y", "", True, -1, float("inf")])
def test_parse_duration_rejects_bad_values(value: object) -> None:
    with pytest.raises(ConfigError, match=r"my\.ttl = .* is not a duration"):
        parse_duration(value, field="my.ttl")  # type: ignore[arg-type]


def test_bad_duration_message_shows_examples() -> None:
    with pytest.raises(ConfigError, match=r"write it like '90s', '15m', '12h' or '7d'"):
        parse_duration("forever")


def test_discovery_follows_test_dir_and_test_match(project: Path) -> None:
    from cobalt_lib.experiments._discovery import discover_files, load_experiments

    (project / "cobalt.toml").write_text('test_dir = "evals"\ntest_match = ["**/*.eval.py", "smoke_*.py"]\n')
    body = 'from cobalt_lib import experiment\nexperiment("{name}", [{{"input": 1}}], lambda ctx: 1)\n'
    files = {"evals/qa.eval.py": "qa", "evals/deep/er/rag.eval.py": "rag", "evals/smoke_one.py": "smoke",
             "evals/deep/smoke_two.py": "not-matched", "evals/qa.cobalt.py": "default-pattern",
             "experiments/x.cobalt.py": "default-dir"}
    for rel, name in files.items():
        (project / rel).parent.mkdir(parents=True, exist_ok=True)
        (project / rel).write_text(body.format(name=name))
    config = load_config()
    assert [p.relative_to(project).as_posix() for p in discover_files(config)] == [
        "evals/deep/er/rag.eval.py", "evals/qa.eval.py", "evals/smoke_one.py"]
    assert sorted(e.name for e in load_experiments(config)) == ["qa", "rag", "smoke"]
    assert [e.name for e in load_experiments(config, name_filter="ra")] == ["rag"]


def test_a_bare_number_threshold_asks_for_a_direction(project: Path) -> None:
    (project / "cobalt.toml").write_text("[ci]\nthresholds = { relevance = 0.8 }\n")
    with pytest.raises(ConfigError) as caught:
        load_config()
    assert str(caught.value) == (f"{project / 'cobalt.toml'}: ci.thresholds.relevance = 0.8 needs a direction: "
                                 "write { min = 0.8 } (must reach it) or { max = 0.8 } (must stay under it).")


def test_an_experiment_name_declared_twice_is_refused_with_both_places(project: Path) -> None:
    from cobalt_lib.experiments._discovery import load_experiments, load_file

    body = 'from cobalt_lib import experiment\n\nexperiment("{name}", [{{"input": 1}}], lambda ctx: 1)\n'
    exp_dir = project / "experiments"
    exp_dir.mkdir()
    (exp_dir / "a.cobalt.py").write_text(body.format(name="qa"))
    (exp_dir / "b.cobalt.py").write_text(body.format(name="qa"))
    config = load_config()
    with pytest.raises(ConfigError) as caught:
        load_experiments(config)
    assert str(caught.value) == (f"Experiment name 'qa' is declared twice, at {exp_dir / 'a.cobalt.py'}, line 3 "
                                 f"and at {exp_dir / 'b.cobalt.py'}, line 3; give each experiment its own name.")
    # the same file named twice on the command line is one declaration, not two
    assert [e.name for e in load_experiments(config, [exp_dir / "a.cobalt.py", exp_dir / "a.cobalt.py"])] == ["qa"]

    twice = exp_dir / "twice.py"
    twice.write_text(body.format(name="x") + '\n@experiment("x", [{"input": 2}])\ndef agent(ctx):\n    return 2\n')
    with pytest.raises(ConfigError, match=r"'x' is declared twice, at .*twice\.py, line 3 and at .*twice\.py, line 5;"):
        load_file(twice)


def test_config_files_shadowed_by_the_first_are_listed(project: Path) -> None:
    (project / "cobalt.config.py").write_text("from cobalt_lib import define_config\n"
                                              "config = define_config(concurrency=3)\n")
    (project / "cobalt.toml").write_text("concurrency = 9\n")
    (project / "pyproject.toml").write_text("[project]\nname = 'x'\n")  # no [tool.cobalt]: not a cobalt config
    config = load_config()
    assert config.concurrency == 3 and config.source == project / "cobalt.config.py"
    assert config.shadowed == [project / "cobalt.toml"]
