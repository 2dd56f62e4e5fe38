"""What the run page shows of calibration: a grading run's own (per model: kappa with its interval, the
agreement rates, the confusion matrix, the disagreements beside the sample and the notes, the verdict,
the change against the previous grading of the same samples), and the calibrations `cobalt calibrate`
stored for the run's evaluators. The pages' grading adapter (`pages/_grading.py`) serves it."""

from __future__ import annotations

import re
from typing import Any

from ..config._config import Config
from ..render._units import decimal, interval, percent, points, signed
from ..store._store import Store
from ._calibrate import stored_judge_calibrations
from ._render_judge_calibration import figure_text
from .calibration._metrics import SCALE
from .calibration._models import Calibration, ModelCalibration
from .calibration._stored import EXPERIMENT_PREFIX, grading_config, stored_calibrations

#: Disagreements shown per model on the page.
SHOWN = 25


def run_page_calibrations(config: Config, run: dict[str, Any], gates: list[dict[str, Any]]) -> dict[str, Any]:
    """What the run page shows of calibration: `{"calibrations": calibration_view(...), "gate_calibrations":
    gate_calibrations(...)}` for the run and its gates."""
    return {"calibrations": calibration_view(config, run), "gate_calibrations": gate_calibrations(config, gates)}


def calibration_view(config: Config, run: dict[str, Any]) -> dict[str, Any]:
    """`{"grading": [...per model...] or None, "judges": [...]}` for the run page."""
    return {"grading": _grading(config, run), "judges": _judges(config, run)}


#: A run id as cobalt makes them (`20261201224855-6580b96b`), named in a gate's message.
_RUN_ID = re.compile(r"\b\d{14}-[0-9a-f]{8}\b")


def gate_calibrations(config: Config, gates: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The calibrations a run's `calibrated(...)` gates judged by: each grading run (or run calibrated with
    `cobalt calibrate`) their messages name, with its figures per model, for the run page to show beside
    the gates (the gate says "grading run X"; the page shows X's kappa and verdict and links to it)."""
    store = Store.for_config(config)
    found: dict[str, dict[str, Any]] = {}
    for gate in gates:
        if not str(gate.get("name", "")).startswith("calibrated"):
            continue
        for run_id in _RUN_ID.findall(str(gate.get("message") or "")):
            if run_id in found or (run := store.get_run(run_id)) is None:
                continue
            view = calibration_view(config, run)
            models = [{"model": m["c"].model, "kappa": m["kappa"], "rates": m["rates"], "verdict": m["c"].verdict}
                      for m in (view["grading"] or {}).get("models", [])]
            models += [{"model": j["cal"].evaluator, "kappa": next((t for title, t, _ in j["figures"]
                                                                    if "kappa" in title.lower()), ""),
                        "rates": [], "verdict": j["cal"].verdict} for j in view["judges"]]
            named = [m for m in models if f"for {m['model']}" in str(gate.get("message"))]
            found[run_id] = {"run_id": run_id, "experiment": run["experiment"], "gates": [], "models": named or models}
        for run_id in _RUN_ID.findall(str(gate.get("message") or "")):
            if run_id in found and gate["name"] not in found[run_id]["gates"]:
                found[run_id]["gates"].append(gate["name"])
    return list(found.values())


def _judges(config: Config, run: dict[str, Any]) -> list[dict[str, Any]]:
    found: dict[str, dict[str, Any]] = {}
    for cal in stored_judge_calibrations(config, experiment=run["experiment"]):  # newest first
        if cal.run_id == run["run_id"] and cal.evaluator not in found:
            found[cal.evaluator] = {"cal": cal, "figures": [(f.title, figure_text(f), f.how) for f in cal.figures]}
    return list(found.values())


def _grading(config: Config, run: dict[str, Any]) -> dict[str, Any] | None:
    grading = grading_config(run.get("config") or {})
    if grading is None or not str(run["experiment"]).startswith(EXPERIMENT_PREFIX):
        return None
    cal = Calibration.model_validate(grading["calibration"])
    samples = _samples(Store.for_config(config), run)
    earlier = _previous(config, run, grading)
    models = [*cal.models.values(), *([cal.panel] if cal.panel else [])]
    return {"cal": cal, "models": [_model(m, samples, earlier) for m in models],
            "previous": earlier.run_id if earlier else None, "scale": [f"{v:+d}" for v in SCALE]}


def _samples(store: Store, run: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """`{sample id: {"input", "output", "note"}}`: what each disagreement is shown beside."""
    found: dict[str, dict[str, Any]] = {}
    for row in store.rows("outputs", run["run_id"]):
        ident = str(row.get("item_id") or "")
        given = row.get("input")
        item: dict[str, Any] = given if isinstance(given, dict) else {}
        found.setdefault(ident, {"input": item.get("input"), "output": row.get("output"), "notes": {}})
    for label in store.labels(run["experiment"]):
        if label["item_id"] in found and label.get("note"):
            found[label["item_id"]]["notes"][label["evaluator"]] = label["note"]
    return found


def _previous(config: Config, run: dict[str, Any], grading: dict[str, Any]) -> Any:
    """The newest grading run of the same samples file started before this one."""
    for stored in stored_calibrations(Store.for_config(config)):
        if (stored.run_id != run["run_id"] and stored.input == grading.get("input")
                and stored.started_at < str(run.get("started_at"))):
            return stored
    return None


def _model(c: ModelCalibration, samples: dict[str, dict[str, Any]], earlier: Any) -> dict[str, Any]:
    before = earlier.calibration.models.get(c.model) if earlier is not None else None
    if before is None and earlier is not None and c.model == "panel":
        before = earlier.calibration.panel
    rates = [("exact", c.exact_match_rate), ("within one step", c.within_one_rate)]
    change = []
    if before is not None:
        change = [(name, decimal(getattr(before, key)), decimal(getattr(c, key)), _delta(getattr(before, key),
                                                                                               getattr(c, key)))
                  for name, key in (("weighted kappa", "weighted_kappa"), ("MAE", "mean_absolute_error"))]
        change += [(name, percent(getattr(before, key)), percent(getattr(c, key)),
                    _delta(getattr(before, key), getattr(c, key), share=True))
                   for name, key in (("exact", "exact_match_rate"), ("within one step", "within_one_rate"))]
    rows = [{"d": d, "sample": samples.get(d.id, {}), "note": samples.get(d.id, {}).get("notes", {}).get(c.model, "")}
            for d in c.disagreements[:SHOWN]]
    return {"c": c, "kappa": f"{decimal(c.weighted_kappa)} {interval(c.kappa_ci_low, c.kappa_ci_high)}".strip(),
            "rates": [(name, percent(value)) for name, value in rates],
            "mae": decimal(c.mean_absolute_error), "bias": signed(c.signed_bias),
            "disagreements": rows, "more": max(0, len(c.disagreements) - SHOWN), "change": change}


def _delta(before: float | None, now: float | None, *, share: bool = False) -> str:
    if before is None or now is None:
        return "-"
    return points(now - before) if share else signed(now - before)
