"""The drift check over a monitor's stored windows: 21 seeded daily windows scored as runs, a drop in the
judge's scores at the last; WARN for an uncalibrated judge, ERROR for a calibrated one, and the alert
received by a webhook on a loopback server."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from conftest import http_server
from production_traces import store_traces

from cobalt_lib import Evaluator, load_config
from cobalt_lib.config._config import Config
from cobalt_lib.grading.calibration._judge import JudgeCalibration
from cobalt_lib.monitor import Ingest, Monitor, monitor, score_window, window_bounds, window_key
from cobalt_lib.monitor._checks import drift_checks, send_alerts
from cobalt_lib.store import Store

FIRST = datetime(2026, 10, 1, tzinfo=UTC)
SHIFT_DAY = 20


def helpful(ctx: Any) -> float:
    """The judge's score, as the replayed output carries it (`score 0.81: ...`)."""
    return float(str(ctx.output).split()[1].rstrip(":"))


@pytest.fixture(scope="module")
def windows(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Monitor, Config, list[str]]]:
    root = tmp_path_factory.mktemp("monitored")
    (root / "cobalt.toml").write_text("[monitor]\nkeep_days = 0\n", encoding="utf-8")
    config = load_config(root)
    store = Store.for_config(config)
    rng = np.random.default_rng(7)
    watch = monitor("support-drift", traces={"service.name": "support-bot"},
                    evaluators=[Evaluator(name="helpful", type="function", fn=helpful)])
    keys = []
    for day in range(SHIFT_DAY + 1):
        key = window_key(FIRST + timedelta(days=day))
        mean = 0.75 + rng.normal(0, 0.015) - (0.15 if day >= SHIFT_DAY else 0.0)
        scores = rng.beta(mean * 6, (1 - mean) * 6, 30)
        said = [(f"Question {day}-{i}", f"score {s:.4f}: an answer") for i, s in enumerate(scores)]
        store_traces(Ingest(store), said, at_ns=window_bounds(key)[0])
        assert score_window(watch, key, config).status == "completed"
        keys.append(key)
    yield watch, config, keys


def calibrate(store: Store) -> None:
    """A stored calibration of `helpful` that reads monitoring (kappa 0.62 over 80 labelled items)."""
    calibration = JudgeCalibration(experiment="support", evaluator="helpful", evaluator_type="llm-judge", run_id="r1",
                                   scale="0..1", prompt_hash="p", labelled=80, kappa=0.62, within_one=0.9)
    store.save_calibration({"calibration_id": "c1", "experiment": "support", "evaluator": "helpful", "run_id": "r1",
                            "prompt_hash": "p", "scale": "0..1", "labelled": 80, "kappa": 0.62,
                            "created_at": datetime.now(UTC), "figures": calibration.model_dump(mode="json")})


def test_an_uncalibrated_judge_warns_of_the_drop_and_never_before(windows: tuple[Monitor, Config, list[str]]) -> None:
    watch, config, keys = windows
    before = [c for key in keys[:SHIFT_DAY] for c in drift_checks(watch, key, config)]
    assert all(c.passed for c in before)
    assert before[0].description.startswith("Not tested: helpful has 1 scored windows")
    (check,) = drift_checks(watch, keys[SHIFT_DAY], config)
    assert (check.passed, check.severity) == (False, "WARN")
    assert check.description.startswith(f"Drift in window {keys[SHIFT_DAY]}: helpful fell by ")
    assert check.description.endswith("Only a warning: the judge helpful is not calibrated (`cobalt calibrate` "
                                      "against human labels).")
    assert check.test is not None and check.test.shift < -0.05
    assert len(check.worst) == 5 and check.worst == sorted(check.worst, key=lambda w: w["score"])


def test_a_calibrated_judge_errs_and_the_webhook_hears_it(windows: tuple[Monitor, Config, list[str]]) -> None:
    watch, config, keys = windows
    calibrate(Store.for_config(config))
    (check,) = drift_checks(watch, keys[SHIFT_DAY], config)
    assert (check.passed, check.severity) == (False, "ERROR")

    received: list[dict[str, Any]] = []
    arrived = threading.Event()

    class Hook(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            received.append(json.loads(self.rfile.read(int(self.headers["Content-Length"]))))
            self.send_response(204)
            self.end_headers()
            arrived.set()

        def log_message(self, *args: object) -> None:
            pass

    with http_server(Hook) as url:
        assert send_alerts([check], [url + "/hook"]) == []
    assert arrived.is_set()
    (alert,) = received
    assert (alert["kind"], alert["monitor"], alert["window"], alert["evaluator"], alert["severity"]) == (
        "cobalt.drift", "support-drift", keys[SHIFT_DAY], "helpful", "ERROR")
    assert alert["interval"][0] < alert["shift"] < alert["interval"][1]
    assert [w["item_id"] for w in alert["worst_traces"]] == [w["item_id"] for w in check.worst]


def test_a_failing_webhook_is_named_without_its_secrets(windows: tuple[Monitor, Config, list[str]],
                                                        tmp_path: Path) -> None:
    watch, config, keys = windows

    class Refuse(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            self.rfile.read(int(self.headers["Content-Length"]))
            self.send_response(403)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args: object) -> None:
            pass

    checks = [c for c in drift_checks(watch, keys[SHIFT_DAY], config) if c.severity == "ERROR"]
    with http_server(Refuse) as url:
        warned = send_alerts(checks, [url.replace("http://", "http://user:s3cret@") + "/hook?token=abc"])
    assert warned and "s3cret" not in warned[0] and "abc" not in warned[0] and warned[0].endswith("HTTP 403")


@pytest.mark.slow
def test_dagster_scores_the_window_partition_and_records_its_drift_check(
        windows: tuple[Monitor, Config, list[str]], instance: Any) -> None:
    import dagster as dg

    from cobalt_dagster import build_definitions

    watch, config, keys = windows
    calibrate(Store.for_config(config))
    defs = build_definitions(config.root, experiments=[], monitors=[watch])
    job = defs.resolve_job_def("support_drift_monitor")
    assert {s.name for s in defs.schedules or []} == {"support_drift_monitor_schedule"}
    result = job.execute_in_process(partition_key=keys[SHIFT_DAY], instance=instance)
    assert result.success

    (check,) = result.get_asset_check_evaluations()
    assert (check.check_name, check.passed, check.severity) == ("drift_helpful", False, dg.AssetCheckSeverity.ERROR)
    assert check.description is not None and check.description.startswith(f"Drift in window {keys[SHIFT_DAY]}")
    (materialised,) = result.asset_materializations_for_node("support_drift__window")
    assert materialised.partition == keys[SHIFT_DAY]
    assert materialised.metadata["cobalt/run_id"].value == f"monitor-support-drift-{keys[SHIFT_DAY]}"


def test_the_trends_page_draws_each_evaluators_control_chart(windows: tuple[Monitor, Config, list[str]]) -> None:
    from cobalt_lib.pages._trends import trends_view

    _, config, keys = windows
    view = trends_view(config, "support-drift")
    (chart,) = [c for c in view["charts"] if c["title"] == "helpful: drift control chart"]
    lines = {line["name"]: line for line in chart["chart"]["lines"]}
    assert set(lines) == {"window mean", "EWMA", "limit (1% false alarms)"}
    assert len(lines["window mean"]["points"]) == SHIFT_DAY + 1
    assert len(lines["limit (1% false alarms)"]["points"]) == SHIFT_DAY + 1 - 16  # from the 17th window on
    flagged = [p["run"]["run_id"] for p in lines["window mean"]["points"] if p["failed"]]
    assert flagged == [f"monitor-support-drift-{keys[SHIFT_DAY]}"] and chart["flagged"] == 1
