"""`Evaluator(name, type=..., **options)`: the user's declaration, dispatched to its kind."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from .._aio import run_anywhere
from .._errors import EvaluatorError
from ..results._report import Evaluation
from ._catalog import find_kind
from ._context import EvalContext, Scoring
from ._turns import check_turns, is_conversation, turn_aggregate

if TYPE_CHECKING:
    from .._threads import DaemonThreads
    from ..config._config import Config
    from ..llm._judge import Judge
    from ..llm._providers import Endpoint
    from ._kind import EvaluatorKind


class Evaluator:
    """How to score an output: a name, a kind (`type`, default `llm-judge`) and that kind's options.

    `threshold` is the pass mark: a score at or above it passes (default: the kind's, 0.5 for most;
    for `similarity` it is also the cosine similarity that counts as a full match, default 0.85).
    `cobalt evaluators` lists every kind and its options; an option the kind does not take is an
    error here, at declaration, not during the run.

    `per_turn` scores a conversation item turn by turn (each assistant answer, with the user's message
    as its input) and gives the item the turns' mean (`True` or `"mean"`) or lowest score (`"min"`);
    otherwise a conversation item is scored once, its transcript as the output.
    """

    def __init__(self, name: str, type: str = "llm-judge", *, threshold: float | None = None,
                 description: str | None = None, per_turn: bool | str = False, **options: Any) -> None:
        if not isinstance(name, str) or not name.strip():
            raise EvaluatorError(f"Evaluator name must be a non-empty string, got {name!r}.")
        where = f"Evaluator {name!r}"
        kind = find_kind(type, where)
        self.kind: EvaluatorKind = kind.declare(where, options)
        if threshold is not None and (isinstance(threshold, bool) or not isinstance(threshold, int | float)
                                      or not 0.0 <= threshold <= 1.0):
            raise EvaluatorError(f"{where}: threshold={threshold!r} must be a number within 0..1.")
        self.name = name
        self.type = type
        self.threshold = float(kind.default_threshold if threshold is None else threshold)
        self.description = description
        self.per_turn = turn_aggregate(per_turn, where)

    def __repr__(self) -> str:
        return f"Evaluator(name={self.name!r}, type={self.type!r})"

    def __getattr__(self, option: str) -> Any:
        """The kind's options read as attributes: `Evaluator(..., prompt=p).prompt is p`."""
        kind = self.__dict__.get("kind")
        if kind is None or option.startswith("_") or option not in type(kind).option_names():
            raise AttributeError(f"{type(self).__name__!r} object has no attribute {option!r}")
        fields = {field.alias or name: name for name, field in type(kind).model_fields.items()}
        return getattr(kind, fields[option])

    def describe(self) -> dict[str, Any]:
        """The evaluator's name, type, pass mark and options, as stored with every run."""
        described = {"name": self.name, "type": self.type, "threshold": self.threshold, **self.kind.describe()}
        return {**described, "per_turn": self.per_turn} if self.per_turn else described

    def check_item(self, item: Mapping[str, Any], index: int) -> None:
        """Raise before any agent call if this evaluator cannot score `item` (each turn, when per turn)."""
        if self.per_turn and is_conversation(item):
            check_turns(self, item, index)
            return
        self.kind.check_item(item, index, self)

    @property
    def calls_model(self) -> bool:
        """Whether scoring calls a model (a judge or an embeddings endpoint): its kind resolves an endpoint."""
        from ._kind import EvaluatorKind

        return type(self.kind).endpoint is not EvaluatorKind.endpoint

    def endpoint(self, config: Config) -> Endpoint | None:
        """The resolved judge or embeddings endpoint (raises if its API key is missing)."""
        return self.kind.endpoint(config, self)

    def evaluate_sync(self, output: Any, *, item: Mapping[str, Any] | None = None,
                      metadata: Mapping[str, Any] | None = None) -> Evaluation:
        """Score one output here and now, outside a run: a quick check in a notebook or a unit test.

        For kinds that call no model (a model-judged kind needs the judge a run brings: raises)."""
        if self.calls_model:
            raise EvaluatorError(f"Evaluator {self.name!r} ({self.type}) calls a model: score it in an experiment "
                                 "run, which brings the judge, its cache and its key.")
        item = dict(item or {})
        self.check_item(item, 0)
        ctx = EvalContext(item=item, output=output, metadata=dict(metadata or {}))
        return run_anywhere(self.evaluate(ctx, None, None))

    async def evaluate(self, ctx: EvalContext, judge: Judge | None, endpoint: Endpoint | None, *,
                       threads: DaemonThreads | None = None, timeout: float | None = None) -> Evaluation:
        """Score one output. User-code failures and unusable answers become `eval-error` records.

        Sync user code runs in `threads`; past `timeout` seconds it is an eval-error.
        """
        scoring = Scoring(evaluator=self.name, threshold=self.threshold, judge=judge, endpoint=endpoint,
                          threads=threads, timeout=timeout)
        return await self.kind.evaluate(ctx, scoring)
