"""Writing an experiment file for an agent with the configured judge model, proven to load before it stays.

The model reads the agent's source and answers a whole experiment file in one ```python block. The
file is written inside the project, then loaded in a fresh process through discovery and planned
(every check a run makes before its first agent call). If that fails, the model gets one repair
attempt with the error; if that fails too, the file is removed (or the overwritten one restored)
and the error says what went wrong.
"""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

from pydantic import BaseModel, Field

from .._aio import run_anywhere
from .._errors import CobaltError, ConfigError
from ..config._config import Config
from ..experiments._experiment import Experiment
from ..llm._cache import ResponseCache
from ..llm._judge import Judge
from ..llm._providers import Endpoint, import_sdks, resolve_judge
from ._experiments import ExperimentCatalog, ExperimentInfo, experiment_info
from ._fresh import in_fresh_process
from ._generate_prompt import STRICTER, SYSTEM, generation_request, import_hint, repair_request

DEFAULT_SIZE = 12
MAX_SIZE = 100
#: The most of the agent's source sent to the model.
MAX_SOURCE_CHARS = 60_000
#: The answer is a whole file: more room than a judge's score needs.
MIN_OUTPUT_TOKENS = 8192

_BLOCK = re.compile(r"```(?:python|py)[ \t]*\n(.*?)```", re.DOTALL)


class Generated(BaseModel):
    """The experiment file written, what it declares, and how many model answers it took."""

    path: str
    experiments: list[ExperimentInfo]
    attempts: int
    repaired: bool
    judge_model: str
    tokens: int = 0
    cost_usd: float | None = None
    warnings: list[str] = Field(default_factory=list)


class Validation(BaseModel):
    """What the fresh process found in the file: its experiments, and whether discovery finds it."""

    experiments: list[ExperimentInfo]
    discovered: bool


def project_path(config: Config, path: str, what: str) -> Path:
    """`path` resolved (symlinks followed) inside the project root; anywhere else is a ConfigError."""
    if not path or not path.strip():
        raise ConfigError(f"The {what} is empty; give a path relative to the project root {config.root}.")
    root = config.root.resolve()
    given = Path(path)
    resolved = (given if given.is_absolute() else root / given).resolve()
    if not resolved.is_relative_to(root):
        how = "a symlink pointing" if not any(p == ".." for p in given.parts) and not given.is_absolute() else "a path"
        raise ConfigError(f"The {what} {path!r} is {how} outside the project ({root}); give a path inside it, "
                          "relative to the project root.")
    return resolved


def generate_experiment(config: Config, agent_file: str, output_file: str | None = None,
                        dataset_size: int | None = None, context: str | None = None,
                        overwrite: bool = False) -> Generated:
    """Ask the judge model for an experiment file testing `agent_file`, write it (default
    `<test_dir>/<agent>.cobalt.py`) and prove it loads; one repair attempt, else nothing is left."""
    size = DEFAULT_SIZE if dataset_size is None else dataset_size
    if not 1 <= size <= MAX_SIZE:
        raise ConfigError(f"dataset_size must be between 1 and {MAX_SIZE}, got {size}.")
    agent = project_path(config, agent_file, "agent file")
    if not agent.is_file():
        raise ConfigError(f"The agent file {agent_file!r} does not exist in the project ({config.root}).")
    default = Path(config.test_dir) / f"{agent.stem.removesuffix('.cobalt')}.cobalt.py"
    target = project_path(config, output_file or str(default), "output file")
    if target.suffix != ".py":
        raise ConfigError(f"The output file {output_file!r} must be a .py file.")
    if target.exists() and not overwrite:
        raise ConfigError(f"{_rel(config, target)} already exists; pass overwrite=true to replace it, or choose "
                          "another output_file.")
    name = experiment_name(target)
    refuse_taken_name(config, name, target)
    source = agent.read_text(encoding="utf-8", errors="replace")[:MAX_SOURCE_CHARS]
    request = generation_request(_rel(config, agent), source, import_hint(config.root.resolve(), agent, target),
                                 _rel(config, target), size, context, name)
    endpoint = _endpoint(config)
    return run_anywhere(_write_validated(config, endpoint, request, target, name))


def experiment_name(target: Path) -> str:
    """The name a generated experiment gets: its file's, so two files for one agent get two names."""
    return target.name.removesuffix(".py").removesuffix(".cobalt").replace("_", "-")


def refuse_taken_name(config: Config, name: str, target: Path) -> None:
    """Before anything is written: a ConfigError when an experiment in another file already has `name` (two
    experiments under one name stop every later run)."""
    catalog = in_fresh_process(config, "cobalt_lib.ops._experiments:describe_experiments", {}, ExperimentCatalog,
                               timeout=120)
    mine = _rel(config, target)
    taken = [e for e in catalog.experiments if e.name == name and e.file != mine]
    if taken:
        raise ConfigError(f"An experiment named {name!r} already exists ({taken[0].file}); nothing was written. "
                          "The name follows output_file: choose another output_file, or replace that file with "
                          f"output_file={taken[0].file!r} and overwrite=true.")


async def _write_validated(config: Config, endpoint: Endpoint, request: str, target: Path, name: str) -> Generated:
    judge = Judge(ResponseCache(config.output_path / "cache", 0, enabled=False), 1,
                  {name: (p.input, p.output) for name, p in config.prices.items()})
    spent = _Spent()
    try:
        code = await _ask(judge, endpoint, request, spent)
        error = _try_file(config, target, code, name)
        attempts = 1
        if isinstance(error, str):
            attempts = 2
            code = await _ask(judge, endpoint, repair_request(request, code, error), spent)
            error = _try_file(config, target, code, name)
        if isinstance(error, str):
            raise ConfigError(f"The generated experiment file did not load, even after one repair attempt: {error} "
                              f"Nothing was written. Call again with more context, or write {_rel(config, target)} "
                              "by hand.")
    finally:
        await judge.aclose()
    validation = error
    warnings = [] if validation.discovered else [
        f"{_rel(config, target)} does not match test_match ({', '.join(config.test_match)}) under "
        f"{config.test_dir}/, so a plain `cobalt run` will not find it: run it by file."]
    return Generated(path=_rel(config, target), experiments=validation.experiments, attempts=attempts,
                     repaired=attempts > 1, judge_model=endpoint.label, tokens=spent.tokens, cost_usd=spent.cost,
                     warnings=warnings)


@dataclasses.dataclass
class _Spent:
    tokens: int = 0
    cost: float | None = None


async def _ask(judge: Judge, endpoint: Endpoint, prompt: str, spent: _Spent) -> str:
    answer = await judge.ask(endpoint, prompt, python_block, system=SYSTEM, retry=STRICTER, purpose="generate")
    ev = answer.evaluation
    spent.tokens += ev.tokens
    if ev.cost_usd is not None:
        spent.cost = (spent.cost or 0.0) + ev.cost_usd
    if answer.value is None:
        raise ConfigError(f"The judge model ({endpoint.label}) gave no usable experiment file: {ev.error}. "
                          "Nothing was written.")
    return answer.value.text


@dataclasses.dataclass(frozen=True)
class Code:
    """The file the model answered (a type of its own: `Judge.ask` reads a plain str as a problem)."""

    text: str


def python_block(text: str) -> Code | str:
    """The file in the answer's ```python block (the longest, when there are several); else what is wrong."""
    blocks = [b.strip() for b in _BLOCK.findall(text) if b.strip()]
    if not blocks:
        return "the answer has no ```python fenced block holding the file"
    return Code(max(blocks, key=len) + "\n")


def _try_file(config: Config, target: Path, code: str, name: str) -> Validation | str:
    """Write `code` to `target` and validate it in a fresh process; on failure, undo the write and say why."""
    previous = target.read_bytes() if target.exists() else None
    made = [p for p in (target.parent, *target.parent.parents) if not p.exists()]
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(code, encoding="utf-8")
    try:
        return in_fresh_process(config, "cobalt_lib.ops._generate:validate_file",
                                {"path": str(target), "name": name}, Validation, timeout=120)
    except CobaltError as exc:
        if previous is None:
            target.unlink(missing_ok=True)
        else:
            target.write_bytes(previous)
        for directory in sorted(made, key=lambda p: len(p.parts), reverse=True):
            if directory.is_dir() and not any(directory.iterdir()):
                directory.rmdir()
        return str(exc)


def validate_file(config: Config, path: str, name: str | None = None) -> Validation:
    """In the fresh process: load the file as discovery does and plan each experiment it declares; with `name`,
    the file must declare the experiment of that name and no other (the name the request asked for)."""
    from ..experiments._discovery import discover_files, load_file
    from ..run._plan import prepare

    file = Path(path).resolve()
    declared = load_file(file)
    if not declared:
        raise ConfigError(f"{file.name} declares no experiment: decorate the agent with @experiment(...) or call "
                          "experiment(name, dataset, agent, ...).")
    others = {e.name: e.source_file for other in discover_files(config) if other != file
              for e in _loadable(other)}
    for exp in declared:
        if exp.name in others:
            raise ConfigError(f"Experiment name {exp.name!r} is already declared in {others[exp.name]}; give this "
                              "experiment another name.")
        prepare(exp, config)
    wrong = [exp.name for exp in declared if name is not None and exp.name != name]
    if wrong:
        raise ConfigError(f"{file.name} declares experiment {wrong[0]!r}, not {name!r} as asked: name the experiment "
                          f"{name!r} (the name follows the file's name), and declare no other.")
    return Validation(experiments=[experiment_info(config, exp) for exp in declared],
                      discovered=file in discover_files(config))


def _loadable(path: Path) -> list[Experiment]:
    """The experiments a file declares; none when it does not load (discovery reports it elsewhere)."""
    from ..experiments._discovery import load_file

    try:
        return load_file(path)
    except CobaltError:
        return []


def _endpoint(config: Config) -> Endpoint:
    endpoint = resolve_judge(config.judge, who="cobalt_generate (the [judge] model writes the file)")
    import_sdks([endpoint])
    return dataclasses.replace(endpoint, max_tokens=max(endpoint.max_tokens, MIN_OUTPUT_TOKENS))


def _rel(config: Config, path: Path) -> str:
    return path.resolve().relative_to(config.root.resolve()).as_posix()
