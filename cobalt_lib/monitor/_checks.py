"""A window's drift checks: each evaluator's chart (`_drift`) over the monitor's stored windows, its
severity by how far the judge is trusted, and the alert sent to the project's webhooks.

Severity follows the judge's calibration (`cobalt calibrate`): a drift flagged on an evaluator whose
newest calibration reads `monitoring` or `gating` (reliable: enough labelled items) is an ERROR; on
any other evaluator a WARN, saying the judge is not calibrated enough to alert on. Only an ERROR is
sent to the webhooks (`webhooks = [...]` in cobalt.toml): the window, the evaluator, the shift and its
interval, and the worst traces of the window.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any, Literal

from .._secrets import safe_url
from ..results._direction import lower_is_better
from ._drift import RECENT, DriftTest, Window, drift_test
from ._monitor import Monitor, window_bounds, window_key, window_run_id

if TYPE_CHECKING:
    from ..config._config import Config
    from ..store import Store

#: How many of a flagged window's lowest-scored traces an alert names.
WORST = 5


@dataclass(frozen=True)
class DriftCheck:
    """One evaluator's drift check on one window."""

    monitor: str
    window: str
    evaluator: str
    #: Whether the check passed (no drift flagged, or too few windows to test yet).
    passed: bool
    severity: Literal["ERROR", "WARN"]
    description: str
    test: DriftTest | None = None
    worst: list[dict[str, Any]] = field(default_factory=list)

    def payload(self) -> dict[str, Any]:
        """What the webhook receives."""
        test = self.test
        return {"kind": "cobalt.drift", "monitor": self.monitor, "window": self.window, "evaluator": self.evaluator,
                "severity": self.severity, "message": self.description,
                "shift": None if test is None else test.shift,
                "interval": None if test is None else list(test.interval),
                "baseline_mean": None if test is None else test.baseline_mean,
                "mean": None if test is None else test.ewma, "worst_traces": self.worst}


def window_history(store: Store, mon: Monitor, key: str) -> dict[str, list[Window]]:
    """Per evaluator, the windows up to `key` (oldest first) that the chart reads: their stored aggregates."""
    start, _ = window_bounds(key, mon.window)
    step = timedelta(days=1) if mon.window == "1d" else timedelta(hours=1)
    first = datetime.fromtimestamp(start / 1e9, UTC)
    keys = [window_key(first - step * i, mon.window) for i in reversed(range(mon.baseline + RECENT))]
    ids = {window_run_id(mon.name, k): k for k in keys}
    rows = store.window_aggregates(list(ids))
    history: dict[str, list[Window]] = {}
    for row in rows:
        std = row["stddev"] or 0.0
        history.setdefault(row["metric"], []).append(Window(ids[row["run_id"]], float(row["mean"]), std * std,
                                                            int(row["count"] or 0)))
    for windows in history.values():
        windows.sort(key=lambda w: w.key)
    return history


def trusted(store: Store, evaluator: str) -> tuple[bool, str]:
    """Whether the evaluator's newest calibration reads monitoring or better (reliable), and why not."""
    from ..grading.calibration._judge import scale_verdict

    rows = store.calibrations(evaluator=evaluator)
    if not rows:
        return False, f"the judge {evaluator} is not calibrated (`cobalt calibrate` against human labels)"
    figures = rows[0]["figures"]
    verdict = scale_verdict(figures.get("scale", "0..1"), figures.get("kappa"), figures.get("within_one"),
                            int(figures.get("labelled") or 0), figures.get("kappa_name", "kappa"))
    if verdict.band in ("monitoring", "gating") and verdict.reliable:
        return True, verdict.text
    return False, f"the judge {evaluator} is not calibrated enough to alert on ({verdict.text})"


def drift_checks(mon: Monitor, key: str, config: Config) -> list[DriftCheck]:
    """The drift check of every evaluator of the monitor on window `key`."""
    from ..store import Store

    store = Store.for_config(config)
    history = window_history(store, mon, key)
    checks = []
    for evaluator in (e.name for e in mon.evaluators):
        windows = history.get(evaluator, [])
        test = drift_test(windows, baseline=mon.baseline, lower_is_better=lower_is_better(evaluator))
        if test is None or test.window != key:
            checks.append(DriftCheck(mon.name, key, evaluator, True, "WARN",
                                     f"Not tested: {evaluator} has {len(windows)} scored windows up to {key}; the "
                                     f"chart needs {mon.baseline + RECENT} ({mon.baseline} baseline, {RECENT} "
                                     "recent)."))
            continue
        if not test.flagged:
            checks.append(DriftCheck(mon.name, key, evaluator, True, "WARN", f"No drift: {test.sentence(evaluator)}",
                                     test))
            continue
        ok, why = trusted(store, evaluator)
        worst = store.worst_items(window_run_id(mon.name, key), evaluator, WORST,
                                  lower_is_better=lower_is_better(evaluator))
        severity: Literal["ERROR", "WARN"] = "ERROR" if ok else "WARN"
        said = f"Drift in window {key}: {test.sentence(evaluator)}"
        checks.append(DriftCheck(mon.name, key, evaluator, False, severity,
                                 said if ok else f"{said} Only a warning: {why}.", test, worst))
    return checks


def send_alerts(checks: list[DriftCheck], urls: list[str], *, timeout: float = 10.0) -> list[str]:
    """POST each ERROR check to every webhook; returns a warning per delivery that failed (URL without secrets)."""
    import httpx

    warnings = []
    for check in (c for c in checks if not c.passed and c.severity == "ERROR"):
        for url in urls:
            problem = _deliver(httpx, url, check.payload(), timeout)
            if problem:
                warnings.append(f"webhook {safe_url(url, path=False)} failed: {problem}")
    return warnings


def _deliver(httpx: Any, url: str, payload: dict[str, Any], timeout: float, attempts: int = 3) -> str | None:
    problem = None
    for _ in range(attempts):
        try:
            status = httpx.post(url, json=payload, timeout=timeout).status_code
        except httpx.HTTPError as exc:
            problem = type(exc).__name__
            continue
        if status < 300:
            return None
        problem = f"HTTP {status}"
        if status < 500 and status not in (408, 409, 429):
            break
    return problem
