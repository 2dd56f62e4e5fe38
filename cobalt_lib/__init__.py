"""cobalt: test, evaluate and track AI agents.

    from cobalt_lib import Dataset, Evaluator, experiment
    report = experiment("qa", Dataset.from_file("qa.jsonl"), my_agent, evaluators=[...]).run()

Importing this package stays light: the LLM SDKs, DuckDB and Dagster load only when used.
"""

from ._errors import (
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
from .evaluators import EVALUATOR_TYPES, EvalContext, Evaluator, EvaluatorKind, evaluator_kinds
from .experiment import REGISTRY, Dataset, Experiment, discover_files, experiment, load_experiments, load_file
from .gates import Assertion, assertion, no_regression, threshold
from .results import (
    AssertionResult,
    EvalResult,
    Evaluation,
    ExperimentReport,
    ItemResult,
    ItemSpread,
    Stats,
    Store,
    Summary,
    read_results,
)
from .run import AgentContext

__version__ = "0.1.0"

__all__ = [
    "EVALUATOR_TYPES",
    "REGISTRY",
    "AgentContext",
    "Assertion",
    "AssertionResult",
    "CobaltError",
    "Config",
    "ConfigError",
    "Dataset",
    "DatasetError",
    "EvalContext",
    "EvalResult",
    "Evaluation",
    "Evaluator",
    "EvaluatorError",
    "EvaluatorKind",
    "Experiment",
    "ExperimentReport",
    "ItemResult",
    "ItemSpread",
    "JudgeError",
    "MissingApiKeyError",
    "Stats",
    "Store",
    "StoreError",
    "Summary",
    "TemplateError",
    "__version__",
    "assertion",
    "define_config",
    "discover_files",
    "evaluator_kinds",
    "experiment",
    "find_project_root",
    "load_config",
    "load_experiments",
    "load_file",
    "no_regression",
    "read_results",
    "threshold",
]
