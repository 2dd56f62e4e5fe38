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
from .config._config import Config, define_config, find_project_root, load_config
from .evaluators._evaluator import EVALUATOR_TYPES, EvalContext, Evaluator
from .experiment._dataset import Dataset
from .experiment._discovery import discover_files, load_experiments, load_file
from .experiment._experiment import REGISTRY, Experiment, experiment
from .gates._assertions import Assertion, assertion, no_regression, threshold
from .results._report import (
    AssertionResult,
    EvalResult,
    Evaluation,
    ExperimentReport,
    ItemResult,
    ItemSpread,
    Stats,
    Summary,
)
from .results._results_file import read_results
from .results._store import Store
from .run._agent import AgentContext

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
    "experiment",
    "find_project_root",
    "load_config",
    "load_experiments",
    "load_file",
    "no_regression",
    "read_results",
    "threshold",
]
