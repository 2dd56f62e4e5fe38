"""The base of every evaluator kind: its fields are the kind's options; `score` is its one hook.

The work every kind shares is written once here: options validated at declaration with a message
that names the kind's options; a failure or an unusable value in `score` becomes an `eval-error`
record, never a stopped run; the pass mark applied to the score.
"""

from __future__ import annotations

import abc
import difflib
import inspect
import traceback
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, ClassVar, Self

from pydantic import BaseModel, ConfigDict, ValidationError
from pydantic.fields import FieldInfo

from .._errors import BatchPending, EvaluatorError, JudgeError, TemplateError
from ..results._direction import passes
from ..results._report import Evaluation
from ._context import EvalContext, Scoring
from ._registry import kinds_using, register
from ._values import to_evaluation

if TYPE_CHECKING:
    from ..config._config import Config
    from ..llm._providers import Endpoint
    from ._evaluator import Evaluator


#: Options many kinds share, listed after a kind's own: the judge's, then `negate`.
_SHARED_LAST = {"model": 1, "provider": 1, "base_url": 1, "negate": 2}


class EvaluatorKind(BaseModel, abc.ABC):
    """One way to score an output. Subclass it, set `kind`, declare options as typed fields and write
    `score`; defining the class registers it, and `Evaluator(name, type=kind, **options)` uses it.

    The class docstring's first line is the description `cobalt evaluators` shows.
    """

    model_config = ConfigDict(extra="forbid", frozen=True, arbitrary_types_allowed=True)

    #: The name users pass as `Evaluator(type=...)`.
    kind: ClassVar[str] = ""
    #: The pass mark when the evaluator sets no `threshold`: a score at or above it passes (at or
    #: below it for a lower-is-better name such as `*Latency`; see `results._direction`).
    default_threshold: ClassVar[float] = 0.5

    @classmethod
    def __pydantic_init_subclass__(cls, **kwargs: Any) -> None:
        super().__pydantic_init_subclass__(**kwargs)
        if cls.__dict__.get("kind"):
            register(cls)

    @classmethod
    def declare(cls, where: str, options: Mapping[str, Any]) -> Self:
        """The kind with these options, or one EvaluatorError naming what to fix."""
        try:
            return cls(**options)
        except ValidationError as exc:
            raise EvaluatorError(cls._option_problem(where, exc)) from None

    @classmethod
    def option_names(cls) -> list[str]:
        """The options in the order users read them: the kind's own first, shared ones (judge, `negate`) last."""
        names = [field.alias or name for name, field in cls.model_fields.items()]
        return sorted(names, key=lambda name: _SHARED_LAST.get(name, 0))

    @classmethod
    def option_field(cls, option: str) -> FieldInfo:
        """The field of an option, by the name users write (a field's alias, such as `schema`)."""
        by_alias = {field.alias or name: field for name, field in cls.model_fields.items()}
        return by_alias[option]

    @classmethod
    def description(cls) -> str:
        return (inspect.getdoc(cls) or "").split("\n\n")[0].replace("\n", " ").strip()

    @classmethod
    def _option_problem(cls, where: str, exc: ValidationError) -> str:
        errors = exc.errors()
        # a misspelt option also shows as a missing one: name the typo, with its "did you mean"
        error = next((e for e in errors if e["type"] == "extra_forbidden"), errors[0])
        head = f"{where} ({cls.kind})"
        message = str(error["msg"]).removeprefix("Value error, ")
        if not error["loc"]:  # a check across options (a model validator): its message says it all
            return f"{head}: {message[:1].lower()}{message[1:]}."
        option = str(error["loc"][0])
        if error["type"] == "missing":
            field = cls.option_field(option)
            hint = f" ({field.description})" if field.description else ""
            return f"{head} needs {option}=...{hint}."
        if error["type"] == "extra_forbidden":
            return f"{head} {cls._unknown_option(option)}"
        return f"{head}: {option}={error['input']!r} is not valid: {message[:1].lower()}{message[1:]}."

    @classmethod
    def _unknown_option(cls, option: str) -> str:
        own = cls.option_names()
        listed = f"its options are {', '.join(own)}" if own else "it takes no options"
        others = [name for name in kinds_using(option) if name != cls.kind]
        if others:
            named = others[:3] if len(others) <= 4 else [*others[:3], f"{len(others) - 3} more"]
            users = named[0] if len(named) == 1 else f"{', '.join(named[:-1])} and {named[-1]}"
            return f"does not use {option}=; it is for {users} evaluators. Remove it or change type= ({listed})."
        close = difflib.get_close_matches(option, own, n=1)
        return f"has no option {option!r}; " + (f"did you mean {close[0]!r}? ({listed})." if close else f"{listed}.")

    @property
    def reads_spans(self) -> bool:
        """Whether scoring reads the item's spans (`ctx.spans`, its trace): a monitor's window reads its
        traces' stored spans for such kinds alone."""
        return False

    def describe(self) -> dict[str, Any]:
        """The options as stored with every run (callables by their qualified name)."""
        return {name: _describable(value) for name, value in self.model_dump().items()}

    def check_item(self, item: Mapping[str, Any], index: int, evaluator: Evaluator) -> None:
        """Raise before any agent call if this kind cannot score dataset item `index`."""

    def endpoint(self, config: Config, evaluator: Evaluator) -> Endpoint | None:
        """The judge or embeddings endpoint this kind calls (raise if its key is missing); None for none."""
        return None

    @abc.abstractmethod
    def score(self, ctx: EvalContext, scoring: Scoring) -> Any:
        """Score one output: an `Evaluation`, or a float in 0..1, a bool, a dict with `score` (and
        `reason`) or an `EvalResult`. May be async. Exceptions become `eval-error` records."""

    async def evaluate(self, ctx: EvalContext, scoring: Scoring) -> Evaluation:
        """`score`, with failures as records and the pass mark applied: what the run calls."""
        try:
            value = self.score(ctx, scoring)
            if inspect.isawaitable(value):
                value = await value
            result = to_evaluation(value, scoring.evaluator)
        except BatchPending:  # stops the run (resumable), not one item's evaluation
            raise
        except (TemplateError, JudgeError) as exc:
            result = Evaluation(status="eval-error", error=str(exc))
        except Exception as exc:  # a bug in a kind, cobalt or a provider SDK: one eval-error, not a stopped run
            result = Evaluation(status="eval-error", error=f"{type(exc).__name__}: {exc}",
                                raw_response=traceback.format_exc(limit=8))
        if result.status == "ok" and result.score is not None:
            result.passed = passes(scoring.evaluator, result.score, scoring.threshold)
        return result


def require_field(item: Mapping[str, Any], index: int, evaluator: Evaluator, field: str) -> None:
    """The check of kinds that compare the output with an item field."""
    if field not in item:
        raise EvaluatorError(
            f"Evaluator {evaluator.name!r} compares with field {field!r}, which dataset item {index} "
            f"lacks (fields: {', '.join(sorted(item)) or 'none'}); pass field=... to choose another."
        )


def _describable(value: Any) -> Any:
    if callable(value) and not isinstance(value, type):
        return getattr(value, "__qualname__", repr(value))
    return value
