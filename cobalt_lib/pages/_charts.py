"""Geometry of the inline SVG charts: score histograms and trend lines. The templates draw them;
every label goes through the templates' escaping."""

from __future__ import annotations

import math
from typing import Any

WIDTH, HEIGHT = 640, 170
LEFT, RIGHT, TOP, BOTTOM = 64, 40, 12, 30


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
                     "label": f"{low:.1f}–{high:.1f}: {count}",
                     "passing": pass_mark is None or (high <= pass_mark if lower else low >= pass_mark)})
    mark = None if not isinstance(pass_mark, int | float) else 10 + inner_w * min(max(float(pass_mark), 0.0), 1.0)
    return {"width": width, "height": height, "bars": bars, "mark": mark, "base": 4 + inner_h}


def _ticks(low: float, high: float) -> list[float]:
    return [low + (high - low) * i / 4 for i in range(5)]


def line_chart(series: list[dict[str, Any]], runs: list[dict[str, Any]], *, fixed: tuple[float, float] | None = None,
               ) -> dict[str, Any]:
    """A line per series (`{"name", "values"}`: one value or None per run, oldest first), a point per run
    and value carrying the run's id for its link, and y ticks; `fixed` pins the y range (0..1 for scores)."""
    values = [v for s in series for v in s["values"] if v is not None]
    low, high = fixed or (0.0, (max(values, default=0.0) * 1.1) or 1.0)
    inner_w, inner_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM

    def x(i: int) -> float:
        return LEFT + (inner_w * i / (len(runs) - 1) if len(runs) > 1 else inner_w / 2)

    def y(v: float) -> float:
        return TOP + inner_h * (1 - (v - low) / ((high - low) or 1))

    lines = []
    for number, s in enumerate(series):
        points, path, pen = [], [], "M"
        for i, (run, value) in enumerate(zip(runs, s["values"], strict=True)):
            if value is None:
                pen = "M"  # a run without the value breaks the line
                continue
            path.append(f"{pen}{x(i):.1f},{y(value):.1f}")
            pen = "L"
            points.append({"x": x(i), "y": y(value), "value": value, "run": run})
        lines.append({"name": s["name"], "path": " ".join(path), "points": points, "style": number})
    # two significant digits at the top of the axis, without exponents: 0.0121, 0.0000792, 5000
    decimals = 2 if fixed else max(0, 1 - math.floor(math.log10(high)))
    ticks = [{"y": y(t), "label": f"{t:,.{decimals}f}"} for t in _ticks(low, high)]
    days = {str(run.get("date") or "")[:10] for run in runs}
    # `11-23`, or `11-23 21:01` when the runs fall on a day or two (dates alone would all read the same)
    cut = 16 if len(days) <= 2 else 10
    labels = [{"x": x(i), "label": str(run.get("date") or "")[5:cut].replace("T", " ")} for i, run in enumerate(runs)]
    step = max(1, len(labels) // 8)  # at most about 8 date labels along the axis
    return {"width": WIDTH, "height": HEIGHT, "lines": lines, "ticks": ticks, "labels": labels[::step],
            "top": TOP, "bottom": HEIGHT - BOTTOM, "left": LEFT, "right": WIDTH - RIGHT, "empty": not values}

