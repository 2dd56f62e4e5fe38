"""One run as an Every Eval Ever record (schema 0.3.0, arXiv 2606.14516): an open format other tools and
leaderboards read. Each evaluator is one evaluation result; the agent's model is the record's model."""

from __future__ import annotations

import json
from collections import Counter
from datetime import datetime

from .. import __version__
from ..results._direction import lower_is_better
from ..results._report import ExperimentReport, Stats

SCHEMA_VERSION = "0.3.0"


def to_every_eval_ever(report: ExperimentReport) -> str:
    """The run's record as JSON text: `eee-validate` (the every-eval-ever package) accepts it."""
    model = _model(report)
    record = {
        "schema_version": SCHEMA_VERSION,
        "evaluation_id": f"{report.name}/{model}/{_epoch(report.timestamp)}",
        "evaluation_timestamp": report.timestamp,
        "retrieved_timestamp": _epoch(report.timestamp),
        "source_metadata": {"source_name": "cobalt", "source_type": "evaluation_run",
                            "source_organization_name": "cobalt", "evaluator_relationship": "first_party",
                            "additional_details": {"run_id": report.id, "status": report.status,
                                                   **({"variant": report.variant} if report.variant else {})}},
        "eval_library": {"name": "cobalt", "version": __version__},
        "model_info": model_info(model),
        "evaluation_results": [_result(report, name, stats) for name, stats in report.summary.scores.items()
                               if stats.avg is not None],
    }
    return json.dumps(record, indent=2, ensure_ascii=False) + "\n"


def _result(report: ExperimentReport, name: str, stats: Stats) -> dict[str, object]:
    uncertainty: dict[str, object] = {"num_samples": stats.count}
    if stats.stddev is not None:
        uncertainty["standard_deviation"] = stats.stddev
    details = {"errors": str(stats.errors)}
    if stats.pass_rate is not None:
        details["pass_rate"] = repr(stats.pass_rate)
    return {
        "evaluation_result_id": f"{report.id}/{name}",
        "evaluation_name": name,
        "source_data": {"dataset_name": report.name, "source_type": "other",
                        "additional_details": {"items": str(len(report.items))}},
        "evaluation_timestamp": report.timestamp,
        "metric_config": {"metric_id": name, "metric_name": name, "evaluation_description": f"cobalt evaluator {name}",
                          "lower_is_better": lower_is_better(name), "score_type": "continuous",
                          "min_score": 0, "max_score": 1},
        "score_details": {"score": stats.avg, "details": details, "uncertainty": uncertainty},
    }


def _model(report: ExperimentReport) -> str:
    """The model most of the agent's calls named (`metadata.model`), else the experiment's name."""
    models = Counter(str(item.metadata["model"]) for item in report.items if item.metadata.get("model"))
    return models.most_common(1)[0][0] if models else report.name


def model_info(model: str) -> dict[str, object]:
    """The model's name, `developer/model` id and developer (the datastore's path: data/<eval>/<developer>/<model>/)."""
    developer, _, name = model.rpartition("/")
    if not developer:
        developer = next((d for prefix, d in _DEVELOPERS if name.startswith(prefix)), "unknown")
    return {"name": name, "id": f"{developer}/{name}", "developer": developer,
            "additional_details": {"deployment_type": "unknown", "model_availability": "unknown"}}


#: Who makes a model, by how its name starts (a `vendor/model` name says it itself).
_DEVELOPERS = (("gpt-", "openai"), ("o1", "openai"), ("o3", "openai"), ("o4", "openai"), ("claude", "anthropic"),
               ("gemini", "google"), ("llama", "meta"), ("mistral", "mistralai"))


def _epoch(timestamp: str) -> str:
    try:
        return str(int(datetime.fromisoformat(timestamp.replace("Z", "+00:00")).timestamp()))
    except ValueError:
        return timestamp
