"""Computing a run's evaluation identity (`results/_evaluation_identity`) once, when its plan is made.

Every part comes from what the run is about to use: the dataset's items, the evaluators' options and
resolved endpoints, the agent callable's source file. The git commit is read from the repository's
files (HEAD, its ref, packed-refs): no `git` process is started for a run.
"""

from __future__ import annotations

import hashlib
import inspect
import itertools
import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from .._secrets import safe_url
from ..evaluators._evaluator import Evaluator
from ..llm._providers import Endpoint
from ..results._evaluation_identity import AgentIdentity, DatasetIdentity, EvaluationIdentity, EvaluatorIdentity

#: Experiment files load as modules named this plus a hash of their path (not importable by name).
EXPERIMENT_MODULE_PREFIX = "_cobalt_exp_"
#: Options holding the judge's instructions: together, an evaluator's prompt hash.
PROMPT_OPTIONS = ("prompt", "system", "criteria", "rubric", "steps", "evaluation_steps", "grader_hash")
#: Options left out: where a grader deck was read from (an absolute path differs between machines; its
#: content is in `grader_hash`).
_DROPPED_OPTIONS = ("grader_source",)
#: Dataset items encoded per `json.dumps` call.
_CHUNK = 512
#: A text option longer than this is stored by its hash.
_LONG_TEXT = 200


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()[:16]


def dataset_identity(items: Iterable[Mapping[str, Any]], source: str | None) -> DatasetIdentity:
    """A hash of the items' canonical JSON, in order, and how many there are. Items are encoded a chunk
    at a time: one `json.dumps` call per item costs about as much again as the encoding itself."""
    hasher = hashlib.sha256()
    count = 0
    iterator = iter(items)
    while chunk := list(itertools.islice(iterator, _CHUNK)):
        hasher.update(json.dumps(chunk, sort_keys=True, ensure_ascii=False, default=str,
                                 separators=(",", ":")).encode("utf-8", "replace"))
        count += len(chunk)
    shown = safe_url(source) if source and "://" in source else source
    return DatasetIdentity(hash=hasher.hexdigest()[:16], items=count, source=shown)


def evaluator_identity(evaluator: Evaluator, endpoint: Endpoint | None) -> EvaluatorIdentity:
    """The evaluator's kind, options as its kind describes them (long texts and code by their hash),
    prompt hash and judge model."""
    options = {"threshold": evaluator.threshold} if evaluator.threshold is not None else {}
    kind = evaluator.kind
    prompt: dict[str, Any] = {}
    for name, value in kind.describe().items():
        field = getattr(kind, name) if name in type(kind).model_fields else None
        if callable(field) and not isinstance(field, type):  # `describe` names a callable: its code counts
            value = field
        if name in PROMPT_OPTIONS:
            if value is not None:
                prompt[name] = value
        elif name not in _DROPPED_OPTIONS:
            options[name] = _option_value(value)
    prompt_hash = _digest(json.dumps(prompt, sort_keys=True, default=str).encode()) if prompt else None
    model = None if endpoint is None else f"{endpoint.provider}/{endpoint.model}"
    return EvaluatorIdentity(name=evaluator.name, kind=evaluator.type, options=options, prompt_hash=prompt_hash,
                             judge_model=model)


def _option_value(value: Any) -> Any:
    """Callables by the hash of their source (`code:...`), long texts by their hash, the rest as JSON has them."""
    if callable(value) and not isinstance(value, type):
        try:
            return "code:" + _digest(inspect.getsource(value).encode())
        except (OSError, TypeError):  # built in, or defined where no source is kept (a REPL)
            return getattr(value, "__qualname__", repr(value))
    if isinstance(value, str) and len(value) > _LONG_TEXT:
        return "text:" + _digest(value.encode())
    try:
        return json.loads(json.dumps(value, default=str))
    except ValueError:  # a NaN or such: its text
        return repr(value)


def agent_identity(runner: Any, root: Path) -> AgentIdentity:
    """The agent's module, qualified name, source file (relative to `root`), its hash and the git commit."""
    target = inspect.unwrap(runner) if callable(runner) else runner
    module = getattr(inspect.getmodule(target), "__name__", None)
    if module is not None and module.startswith(EXPERIMENT_MODULE_PREFIX):
        module = None  # an experiment file's module is named for its absolute path: its source file says it
    qualname = getattr(target, "__qualname__", None) or type(target).__qualname__
    try:
        source = inspect.getsourcefile(target)
    except TypeError:
        source = None
    if source is None or not Path(source).is_file():
        return AgentIdentity(module=module, qualname=qualname)
    path = Path(source).resolve()
    try:
        shown = str(path.relative_to(root.resolve()))
    except ValueError:
        shown = str(path)
    return AgentIdentity(module=module, qualname=qualname, source_file=shown,
                         source_hash=_digest(path.read_bytes()), git_commit=git_commit(path.parent))


def git_commit(start: Path) -> str | None:
    """The commit HEAD names in the repository holding `start`, read from its files; None outside one."""
    for directory in (start, *start.parents):
        dot_git = directory / ".git"
        if dot_git.is_file():  # a worktree or submodule: `gitdir: <path>`
            text = dot_git.read_text(encoding="utf-8", errors="replace").strip()
            if not text.startswith("gitdir:"):
                return None
            git_dir = (directory / text.removeprefix("gitdir:").strip()).resolve()
            return _head_commit(git_dir)
        if dot_git.is_dir():
            return _head_commit(dot_git)
    return None


def _head_commit(git_dir: Path) -> str | None:
    try:
        head = (git_dir / "HEAD").read_text(encoding="utf-8").strip()
    except OSError:
        return None
    if not head.startswith("ref:"):
        return head or None  # a detached HEAD (what CI checks out) holds the commit itself
    ref = head.removeprefix("ref:").strip()
    common = git_dir
    if (git_dir / "commondir").is_file():  # a linked worktree keeps its refs in the main repository
        common = (git_dir / (git_dir / "commondir").read_text(encoding="utf-8").strip()).resolve()
    for base in (git_dir, common):
        if (base / ref).is_file():
            return (base / ref).read_text(encoding="utf-8").strip() or None
    packed = common / "packed-refs"
    if packed.is_file():
        for line in packed.read_text(encoding="utf-8").splitlines():
            commit, _, name = line.partition(" ")
            if name == ref:
                return commit
    return None  # a branch with no commit yet


def evaluation_identity(experiment: Any, evaluators: Iterable[Evaluator], endpoints: Mapping[str, Endpoint | None],
                        root: Path) -> EvaluationIdentity:
    """The identity of a run of `experiment` with `evaluators` calling `endpoints`."""
    from .. import __version__

    dataset = experiment.dataset
    identity = dataset_identity(dataset, dataset.source)
    stored = getattr(dataset, "stored", None)  # a version of a stored dataset (`Dataset.from_store`)
    if stored is not None:
        identity = identity.model_copy(update={"name": stored.name, "version": stored.version, "split": stored.split})
    return EvaluationIdentity(
        dataset=identity,
        evaluators=[evaluator_identity(e, endpoints.get(e.name)) for e in evaluators],
        agent=agent_identity(experiment.runner, root), cobalt_version=__version__)
