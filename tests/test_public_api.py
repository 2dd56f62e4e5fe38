"""The public surface of cobalt_lib, and what importing it costs."""

from __future__ import annotations

import subprocess
import sys

import pytest

import cobalt_lib

EXPECTED = {
    "EVALUATOR_TYPES", "REGISTRY", "AgentContext", "Assertion", "AssertionResult", "CobaltError", "Config",
    "ConfigError", "Dataset", "DatasetError", "EvalContext", "EvalResult", "Evaluation", "Evaluator",
    "EvaluatorError", "EvaluatorKind", "evaluator_kinds", "Experiment", "ExperimentReport", "ItemResult",
    "ItemSpread", "JudgeError", "BatchPending",
    "MissingApiKeyError", "Stats", "Store", "StoreError", "Summary", "TemplateError", "__version__",
    "assertion", "define_config", "discover_files", "experiment", "find_project_root", "load_config",
    "load_experiments", "load_file", "no_regression", "read_results", "threshold",
    "Grader", "grader", "load_grader", "calibrated", "track_usage", "item_identity", "duplicate_ids",
    "ConversationContext", "SimulatedUser",
    "SpanRecord",
    "EvaluationIdentity", "identity_changes",
}


def test_public_names_are_pinned() -> None:
    assert set(cobalt_lib.__all__) == EXPECTED
    for name in cobalt_lib.__all__:
        assert hasattr(cobalt_lib, name), name


def test_errors_form_one_hierarchy() -> None:
    for name in ("ConfigError", "DatasetError", "JudgeError", "StoreError", "EvaluatorError", "TemplateError",
                 "MissingApiKeyError", "BatchPending"):
        assert issubclass(getattr(cobalt_lib, name), cobalt_lib.CobaltError)
    assert issubclass(cobalt_lib.MissingApiKeyError, cobalt_lib.ConfigError)


@pytest.mark.slow
def test_import_is_light() -> None:
    code = ("import sys, cobalt_lib; heavy = [m for m in ('openai', 'anthropic', 'duckdb', 'dagster', 'pandas', "
            "'numpy', 'mcp') if m in sys.modules]; print(','.join(heavy))")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == ""
