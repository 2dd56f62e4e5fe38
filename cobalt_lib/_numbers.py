"""Every number cobalt prints, as text: the one module the terminal, `cobalt history/show/compare`,
Markdown, JUnit and GitHub summaries, the pages, Dagster metadata and MCP answers print through
(modelled on pydantic-evals' `render_numbers`).

The rules, the same on every surface:

- **Unknown** (None: no cost known, no score, no latency) is `–` (`UNKNOWN`), whatever the unit.
  NaN is `NaN`; infinities are `∞` and `-∞`.
- **Units hug the number**: `4.24s`, `2.5s`, `420ms`, `66.7%`, `$0.0123`; never `4.24 s`.
- **No exponents**, ever: a tiny value keeps three significant digits in plain decimals
  (`$0.0000695`, `0.0000347ms`), a huge one its thousands separators (`$12,345.68`, `1,234,567`).
- **Negative zero** prints as zero; a delta always carries its sign (`+0.000`, `-0.143`).

| what | function | examples |
|---|---|---|
| a score (0..1 or any evaluator's) | `score` | `0.857`, `1.000`, `–` |
| a delta of scores, its interval | `delta`, `delta_interval` | `+0.143`, `[-0.020, +0.310]` |
| a figure, a signed one, an interval | `decimal`, `signed`, `interval` | `0.42`, `+0.20`, `[0.41, 0.78]` |
| a change of rates | `points` | `+30 points` |
| a fraction as a percentage | `percent` | `66.7%`, `100%`, `<0.1%` |
| a duration in ms (or seconds) | `duration`, `seconds` | `420ms`, `4.24s`, `2m 05s`, `0.042ms` |
| a cost in US dollars | `money` | `$12.50`, `$0.0123`, `$0.0000695`, `$0` |
| tokens, counts | `integer`, `count` | `1,234`, `3 items` |
| bytes on disk | `data_size` | `512 bytes`, `1.5KB` |
| any other measured value | `number`, `fixed` | `12.5`, `0.0121`, `0.42` |
| two values told apart (a gate's actual vs its limit) | `distinct` | `0.7995` vs `0.8` |
| a machine field (CSV, JUnit `time`) | `raw` | `1.500`, `` (unknown) |
| a run metric by name | `metric` | `latency.p95` -> `420ms`, `cost.mean` -> `$0.0123` |

The rule `tests/test_numbers_only_here.py` enforces: outside this module, no Python source
under `cobalt_lib/` or `cobalt_dagster/` formats a float with a precision or as a percentage (an
f-string / `format()` spec such as `:.2f`, `:.1%`, `:.4g`, `:+.3f`, or a `%.2f` `%`-format), no page
template does (`'%.3f' % x`), and the pages' script has no `.toFixed(` outside its own copy of these
rules (`pages.js`'s `Numbers`); only SVG geometry (coordinates, never shown as text) is exempt.
"""

from __future__ import annotations

import math
from typing import Any

#: What every surface prints for a value that is not known (None).
UNKNOWN = "–"
#: Significant digits kept for small values (sub-cent costs, sub-10 ms durations, `number`).
SIGNIFICANT = 3


def _special(value: float | None) -> str | None:
    """The text of None, NaN and the infinities, or None for an ordinary number."""
    if value is None:
        return UNKNOWN
    if isinstance(value, float):
        if math.isnan(value):
            return "NaN"
        if math.isinf(value):
            return "∞" if value > 0 else "-∞"
    return None


def _decimals_for(size: float, significant: int = SIGNIFICANT) -> int:
    """Decimals that keep `significant` digits of `size` (> 0) without an exponent."""
    return max(0, significant - 1 - math.floor(math.log10(size)))


def _plain(value: float, decimals: int, *, commas: bool = True) -> str:
    """Fixed decimals, thousands separators, negative zero as zero."""
    text = f"{value:,.{decimals}f}" if commas else f"{value:.{decimals}f}"
    return text[1:] if text.startswith("-") and not text.strip("-0.,") else text


def _trim(text: str) -> str:
    return text.rstrip("0").rstrip(".") if "." in text else text


def fixed(value: float | None, digits: int = 3, *, sign: bool = False) -> str:
    """`value` with `digits` decimals (`0.42`), `sign` for a change (`+0.42`); a domain figure read at a
    fixed precision (kappa, BLEU, precision and recall)."""
    special = _special(value)
    if special is not None:
        return special
    assert value is not None
    text = _plain(float(value), digits)
    return ("+" + text if not text.startswith("-") else text) if sign else text


def score(value: float | None, digits: int = 3) -> str:
    """A score: three decimals (`0.857`, `1.000`), `–` when there is none."""
    return fixed(value, digits)


def delta(value: float | None, digits: int = 3) -> str:
    """A change of scores, always signed: `+0.143`, `-0.020`, `+0.000`."""
    return fixed(value, digits, sign=True)


def interval(low: float | None, high: float | None, digits: int = 2, *, sign: bool = False,
             rate: bool = False) -> str:
    """An interval of a figure: `[0.41, 0.78]`, of a rate (`rate`): `[41%, 78%]`; `–` without one."""
    if low is None or high is None:
        return UNKNOWN
    if rate:
        return f"[{percent(low)}, {percent(high)}]"
    return f"[{fixed(low, digits, sign=sign)}, {fixed(high, digits, sign=sign)}]"


def delta_interval(low: float | None, high: float | None, digits: int = 3) -> str:
    """The confidence interval of a change of scores, signed: `[-0.020, +0.310]`; `–` without one."""
    return interval(low, high, digits, sign=True)


def signed(value: float | None, digits: int = 2) -> str:
    """A difference such as a bias or a change of kappa, with its sign: `+0.20`, `-0.05`."""
    return fixed(value, digits, sign=True)


def decimal(value: float | None, digits: int = 2) -> str:
    """A plain figure such as a mean absolute error or a kappa, `digits` after the point: `0.42`."""
    return fixed(value, digits)


def points(delta_rate: float | None) -> str:
    """A change between two rates in percentage points: `+30 points`, `-2.5 points`."""
    special = _special(delta_rate)
    if special is not None:
        return special
    assert delta_rate is not None
    return f"{signed_text(_trim(_plain(delta_rate * 100, 1)))} points"


def signed_text(text: str) -> str:
    return text if text.startswith("-") else "+" + text


def percent(value: float | None, *, sign: bool = False) -> str:
    """A fraction (0.6667) as a percentage with one decimal: `66.7%`, `100%`, `0%`; a fraction that is not
    zero but rounds to it reads `<0.1%` (never a misleading `0%`)."""
    special = _special(value)
    if special is not None:
        return special
    assert value is not None
    pct = float(value) * 100
    if 0 < abs(pct) < 0.05:
        return ("-" if pct < 0 else "+" if sign else "") + "<0.1%"
    text = _trim(_plain(pct, 1))
    return (("+" if not text.startswith("-") else "") if sign else "") + text + "%"


def number(value: float | None, *, sign: bool = False) -> str:
    """Any other measured value: integers whole with separators (`1,234`); floats with at least one decimal
    and three significant digits (`12.5`, `0.0121`, `1,234.6`), no exponent (`0.00000123`)."""
    special = _special(value)
    if special is not None:
        return special
    assert value is not None
    if isinstance(value, int):  # bool too
        text = f"{int(value):,d}"
    else:
        size = abs(value)
        decimals = SIGNIFICANT if size == 0 else max(1, _decimals_for(size))
        text = _plain(value, decimals)
    return ("+" + text if not text.startswith("-") else text) if sign else text


def integer(value: float | None) -> str:
    """Tokens and other counts: `1,234`, `–` when unknown."""
    special = _special(value)
    if special is not None:
        return special
    assert value is not None
    return f"{round(value):,d}"


def count(n: int, noun: str) -> str:
    """`1 item`, `3 items`, `1,200 errors`: the noun agrees with the number."""
    return f"{n:,d} {noun}{'' if n == 1 else 's'}"


def money(value: float | None, *, sign: bool = False) -> str:
    """US dollars: `$12.50` from a dollar up, `$0.0123` (four decimals) from a cent, three significant
    digits below (`$0.0000695`, never `$0.0000` or `6.95e-06`); `$0` for nothing spent."""
    special = _special(value)
    if special is not None:
        return special
    assert value is not None
    size = abs(float(value))
    if size == 0:
        text = "$0"
    elif size >= 1:
        text = f"${_plain(size, 2)}"
    elif size >= 0.01:
        text = f"${_plain(size, 4)}"
    else:
        text = f"${_plain(size, _decimals_for(size), commas=False)}"
    return _signed_unit(value, text, "$0", sign)


def _signed_unit(value: float, text: str, zero: str, sign: bool) -> str:
    """`text` (a magnitude with its unit) with the value's sign: `-` when negative (never on `zero`), `+`
    for a change (`sign`)."""
    return ("-" if float(value) < 0 and text != zero else "+" if sign else "") + text


def duration(ms: float | None, *, sign: bool = False) -> str:
    """Milliseconds as `420ms`, `4.24s`, `2m 05s`, `1h 02m`; three significant digits below 10 ms without
    trailing zeros (`3.18ms`, `0.042ms`, `0.0000347ms`), never a bare `0ms` for a fast call nor an exponent."""
    special = _special(ms)
    if special is not None:
        return special
    assert ms is not None
    size = abs(float(ms))
    if size >= 3_600_000:
        hours, rest = divmod(round(size / 1000), 3600)
        text = f"{hours:,d}h {rest // 60:02d}m"
    elif size >= 59_995:  # what would print as 60.00s
        minutes, secs = divmod(round(size / 1000), 60)
        text = f"{minutes}m {secs:02d}s"
    elif size >= 999.5:  # what would print as 1,000ms
        text = f"{_trim(_plain(size / 1000, 2))}s"
    elif size >= 10 or size == 0:
        text = f"{_plain(size, 0)}ms"
    else:
        text = f"{_trim(_plain(size, _decimals_for(size)))}ms"
    return _signed_unit(ms, text, "0ms", sign)


def seconds(value: float | None, *, sign: bool = False) -> str:
    """A duration given in seconds (a timeout, a wait): `30s`, `2.50s`, `250ms`."""
    return duration(None if value is None else float(value) * 1000, sign=sign)


def metric(name: str, value: float | None, *, sign: bool = False) -> str:
    """A run metric by its name (`latency.p95`, `cost.mean`, `tokens.mean`, `error_rate`) with its unit;
    `sign` for a change."""
    kind = name.split(".")[0]
    if kind == "latency":
        return duration(value, sign=sign)
    if kind == "cost":
        return money(value, sign=sign)
    if kind in ("error_rate", "pass_rate") or name.endswith("pass_rate"):
        return percent(value, sign=sign)
    return number(value, sign=sign)


def data_size(n: float) -> str:
    """Bytes as `512 bytes`, `1.5KB`, `12.3MB`, `2.0GB` (1 KB = 1,024 bytes)."""
    size = float(n)
    for unit in ("bytes", "KB", "MB"):
        if abs(size) < 1024:
            return f"{size:,.0f} bytes" if unit == "bytes" else f"{_plain(size, 1)}{unit}"
        size /= 1024
    return f"{_plain(size, 1)}GB"


def distinct(actual: float, limit: float) -> tuple[str, str]:
    """Two numbers in the fewest significant digits (four at least, as gate messages always read) that tell
    them apart when they differ: 1000.0004 over 1000 never reads "1000 over 1000"; plain decimals, never an
    exponent."""
    digits = 4
    while digits < 17 and actual != limit and f"{actual:.{digits}g}" == f"{limit:.{digits}g}":
        digits += 1

    def shown(value: float) -> str:
        size = abs(value)
        decimals = 0 if size == 0 else _decimals_for(size, digits)
        return _trim(_plain(value, decimals, commas=False))

    return shown(actual), shown(limit)


def raw(value: float | None, decimals: int = 3, *, trim: bool = False) -> str:
    """A machine field, not text for people (a CSV cell, JUnit's `time` attribute): fixed decimals (`trim`:
    without trailing zeros, `0.6`), no separators, no unit, empty when unknown."""
    special = _special(value)
    if value is None:
        return ""
    if special is not None:
        return special
    text = _plain(float(value), decimals, commas=False)
    return _trim(text) if trim else text


def threshold(value: Any) -> str:
    """A pass mark or gate threshold as the user wrote it: `0.86`, `0.5`, `3` (shortest, no exponent);
    a pass mark in 0..1 computed rather than written (`0.6666666666666666`) as the scores it is compared with
    are (`0.667`), so the pass marks on a page read in one format."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return UNKNOWN if value is None else str(value)
    special = _special(value)
    if special is not None:
        return special
    if isinstance(value, int):
        return str(value)  # as written: a gate's name keeps `60000` (its Dagster check's name is derived from it)
    from decimal import Decimal

    short = format(Decimal(repr(float(value))), "f")  # the shortest text of the float, in plain decimals
    short = _trim(short) if "." in short else short
    decimals = len(short.split(".")[1]) if "." in short else 0
    if decimals > 6 and 0 < value < 1 and abs(value) >= 0.001:  # computed (4 / 6), not written
        return score(value)
    return short
