"""Geometry of the inline SVG charts: score histograms and trend lines. The templates draw them;
every label goes through the templates' escaping."""

from __future__ import annotations

import math
from typing import Any

from .._numbers import duration, fixed, integer, money, number

WIDTH, HEIGHT = 720, 190
LEFT, RIGHT, TOP, BOTTOM = 104, 40, 20, 34


def histogram(bins: list[int], pass_mark: float | None, name: str = "", *, width: int = 300,
              height: int = 120) -> dict[str, Any]:
    """Bars for equal bins over 0..1, the tallest filling the height, each marked passing or not in
    the evaluator's direction (`name`), and the pass mark's x (if any)."""
    from ..results._direction import lower_is_better

    lower = lower_is_better(name)
    inner_w, inner_h = width - 20, height - 24
    tallest = max(bins, default=0) or 1
    step = inner_w / max(len(bins), 1)
    bars = []
    for i, count in enumerate(bins):
        h = inner_h * count / tallest
        low, high = i / len(bins), (i + 1) / len(bins)
        bars.append({"x": 10 + i * step + 1, "y": 4 + inner_h - h, "w": step - 2, "h": h, "count": count,
                     "label": f"{fixed(low, 1)}–{fixed(high, 1)}: {count}",
                     "passing": pass_mark is None or (high <= pass_mark if lower else low >= pass_mark)})
    mark = None if not isinstance(pass_mark, int | float) else 10 + inner_w * min(max(float(pass_mark), 0.0), 1.0)
    return {"width": width, "height": height, "bars": bars, "mark": mark, "base": 4 + inner_h}


def nice_ticks(low: float, high: float, most: int = 5) -> list[float]:
    """Round tick values covering low..high: steps of 1, 2 or 5 times a power of ten (0, 0.25, 0.5 ...
    never 0.0121, 0.0242)."""
    span = (high - low) or abs(high) or 1.0
    raw = span / max(most - 1, 1)
    power = 10 ** math.floor(math.log10(raw))
    step = next(m * power for m in (1, 2, 2.5, 5, 10) if m * power >= raw)
    first = math.floor(low / step) * step
    ticks, value = [], first
    while value <= high + step * 1e-9:
        ticks.append(round(value, 12))
        value += step
    if ticks[-1] < high:
        ticks.append(round(ticks[-1] + step, 12))
    return ticks


def line_chart(series: list[dict[str, Any]], runs: list[dict[str, Any]], *, fixed: tuple[float, float] | None = None,
               unit: str = "score", marks: list[dict[str, Any]] | None = None,
               failed: set[str] | None = None) -> dict[str, Any]:
    """A line per series (`{"name", "values"}`: one value or None per run, oldest first), a point per run
    and value carrying the run's id for its link, round y ticks labelled in `unit` (`score`, `ms`, `usd`),
    the gates' thresholds (`marks`: `{"label", "value"}`) as dashed lines, and the runs in `failed` (a
    gate on this chart's metric failed) marked. Runs sit at distinct x positions in run order (`#1`,
    `#2` ...), their dates on hover, so runs of the same minute never share a label."""
    values = [v for s in series for v in s["values"] if v is not None]
    marks = [m for m in marks or [] if isinstance(m.get("value"), int | float)]
    failed = failed or set()
    if fixed:
        low, high = fixed
    else:
        top = max([*values, *(m["value"] for m in marks)], default=0.0)
        ticks0 = nice_ticks(0.0, top * 1.05 or 1.0)
        low, high = 0.0, ticks0[-1]
    inner_w, inner_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM

    def x(i: int) -> float:
        return LEFT + (inner_w * i / (len(runs) - 1) if len(runs) > 1 else inner_w / 2)

    def y(v: float) -> float:
        return TOP + inner_h * (1 - (v - low) / ((high - low) or 1))

    lines = []
    for style, s in enumerate(series):
        points, path, pen = [], [], "M"
        for i, (run, value) in enumerate(zip(runs, s["values"], strict=True)):
            if value is None:
                pen = "M"  # a run without the value breaks the line
                continue
            path.append(f"{pen}{round(x(i), 1)},{round(y(value), 1)}")  # geometry, not text
            pen = "L"
            points.append({"x": x(i), "y": y(value), "value": value, "text": _label(value, unit), "run": run,
                           "order": i + 1, "failed": run["run_id"] in failed})
        lines.append({"name": s["name"], "path": " ".join(path), "points": points, "style": style})
    ticks = [{"y": y(t), "label": _label(t, unit)} for t in nice_ticks(low, high)
             if low <= t <= high and (unit != "count" or float(t).is_integer())]
    step = max(1, -(-len(runs) // 10))  # at most about 10 run labels along the axis
    labels = [{"x": x(i), "label": f"#{i + 1}"} for i in range(0, len(runs), step)]
    drawn = [{"y": y(m["value"]), "label": m["label"]} for m in marks if low <= m["value"] <= high]
    return {"width": WIDTH, "height": HEIGHT, "lines": lines, "ticks": ticks, "labels": labels, "marks": drawn,
            "top": TOP, "bottom": HEIGHT - BOTTOM, "left": LEFT, "right": WIDTH - RIGHT, "empty": not values}


def _label(value: float, unit: str) -> str:
    if unit == "score":
        return fixed(value, 2)
    if unit == "count":
        return integer(value)
    return duration(value) if unit == "ms" else money(value) if unit == "usd" else number(value)
