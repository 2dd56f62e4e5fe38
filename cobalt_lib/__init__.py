"""cobalt: test, evaluate and track AI agents.

    from cobalt_lib import Dataset, Evaluator, experiment
    report = experiment("qa", Dataset.from_file("qa.jsonl"), my_agent, evaluators=[...]).run()

Importing this package costs almost nothing: each name loads its subpackage when first used (PEP 562),
and the LLM SDKs, DuckDB and Dagster load only when a run needs them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ._lazy import lazy_names
from ._version import __version__

if TYPE_CHECKING:
    from ._errors import (
        BatchPending,
        CobaltError,
        ConfigError,
        DatasetError,
        EvaluatorError,
        JudgeError,
        MissingApiKeyError,
        StoreError,
        TemplateError,
    )
    from .config import Config, define_config, find_project_root, load_config
    from .conversations import SimulatedUser
    from .evaluators import EVALUATOR_TYPES, EvalContext, Evaluator, EvaluatorKind, evaluator_kinds
    from .experiments import REGISTRY, Dataset, Experiment, discover_files, experiment, load_experiments, load_file
    from .gates import Assertion, assertion, calibrated, no_regression, threshold
    from .grading.graders import Grader, grader, load_grader
    from .llm import track_usage
    from .results import (
        AssertionResult,
        EvalResult,
        Evaluation,
        EvaluationIdentity,
        ExperimentReport,
        ItemResult,
        ItemSpread,
        SpanRecord,
        Stats,
        Summary,
        duplicate_ids,
        identity_changes,
        item_identity,
        read_results,
    )
    from .run import AgentContext, ConversationContext
    from .store import Store

#: Where each public name lives; `__getattr__` imports it on first use.
_EXPORTS: dict[str, str] = {name: module for module, names in {
    "._errors": "BatchPending CobaltError ConfigError DatasetError EvaluatorError JudgeError MissingApiKeyError "
        "StoreError TemplateError",
    ".config": "Config define_config find_project_root load_config",
    ".conversations": "SimulatedUser",
    ".evaluators": "EVALUATOR_TYPES EvalContext Evaluator EvaluatorKind evaluator_kinds",
    ".experiments": "Dataset Experiment REGISTRY discover_files experiment load_experiments load_file",
    ".gates": "Assertion assertion calibrated no_regression threshold",
    ".grading.graders": "Grader grader load_grader",
    ".llm": "track_usage",
    ".results": "AssertionResult EvalResult Evaluation EvaluationIdentity ExperimentReport ItemResult ItemSpread "
        "SpanRecord Stats Summary duplicate_ids identity_changes item_identity read_results",
    ".run": "AgentContext ConversationContext",
    ".store": "Store",
}.items() for name in names.split()}

__all__ = [
    "EVALUATOR_TYPES",
    "REGISTRY",
    "AgentContext",
    "Assertion",
    "AssertionResult",
    "BatchPending",
    "CobaltError",
    "Config",
    "ConfigError",
    "ConversationContext",
    "Dataset",
    "DatasetError",
    "EvalContext",
    "EvalResult",
    "Evaluation",
    "EvaluationIdentity",
    "Evaluator",
    "EvaluatorError",
    "EvaluatorKind",
    "Experiment",
    "ExperimentReport",
    "Grader",
    "ItemResult",
    "ItemSpread",
    "JudgeError",
    "MissingApiKeyError",
    "SimulatedUser",
    "SpanRecord",
    "Stats",
    "Store",
    "StoreError",
    "Summary",
    "TemplateError",
    "__version__",
    "assertion",
    "calibrated",
    "define_config",
    "discover_files",
    "duplicate_ids",
    "evaluator_kinds",
    "experiment",
    "find_project_root",
    "grader",
    "identity_changes",
    "item_identity",
    "load_config",
    "load_experiments",
    "load_file",
    "load_grader",
    "no_regression",
    "read_results",
    "threshold",
    "track_usage",
]


__getattr__, __dir__ = lazy_names(__name__, _EXPORTS, __all__, globals())
