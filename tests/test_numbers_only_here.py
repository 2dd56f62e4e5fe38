"""Numbers become text in one place: `cobalt_lib/_numbers.py`. This test reads every other module and
fails on the ways a float is turned into text by hand (the rule is in that module's docstring).

Banned outside `_numbers.py`:
- Python (`cobalt_lib/`, `cobalt_dagster/`): a format spec (f-string `{x:...}`, `format(x, "...")`,
  `"{:...}".format`) whose presentation type is a float's (`e E f F g G %`) or that has a precision
  (`.3`); `%`-formatting with a float conversion (`"%.2f" % x`, `"%g" % x`).
- Page templates: the same `%`-formatting (`'%.3f' % x`), except SVG geometry attributes.
- The pages' scripts: `.toFixed(` / `.toPrecision(` / `toLocaleString(` outside `pages.js`'s `Numbers`
  block (`window.cobaltNumbers`, which every other script of the pages can call), except layout
  geometry (`el.style.left = ...`).

Integers keep their own specs (`{n:06d}`, `{label:+d}`, `{n:,}`): they are counts and ids, not measures.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
HOME = ROOT / "cobalt_lib" / "_numbers.py"
#: A format spec: [[fill]align][sign][z][#][0][width][grouping][.precision][type]
SPEC = re.compile(r"^(?:.?[<>=^])?[+\- ]?z?#?0?\d*[,_]?(?P<precision>\.\d+)?(?P<type>[bcdeEfFgGnosxX%])?$")
FLOAT_TYPES = set("eEfFgG%")
PERCENT_FORMAT = re.compile(r"%[-+#0]*\d*(?:\.\d+)?[eEfFgG]")
TEMPLATE_FORMAT = re.compile(r"'%[-+#0]*\d*(?:\.\d+)?[deEfFgG]'\s*%")
#: SVG geometry in templates: coordinates and sizes, never read as text.
GEOMETRY = re.compile(r'\b(?:x|y|x1|x2|y1|y2|cx|cy|r|width|height)="\{\{ \'%\.1f\' % [^}]+\}\}"')


def _bad_spec(spec: str) -> bool:
    match = SPEC.match(spec)
    if match is None:  # a nested spec (`{x:.{digits}f}`): its pieces are checked as they come
        return ".{" in spec or spec.rstrip("}").endswith(tuple(FLOAT_TYPES))
    return bool(match["precision"]) or (match["type"] or "") in FLOAT_TYPES


def python_offences(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found = []
    for node in ast.walk(tree):
        line = getattr(node, "lineno", 0)
        if isinstance(node, ast.FormattedValue) and node.format_spec is not None:
            spec = "".join(part.value if isinstance(part, ast.Constant) else "{}"
                           for part in node.format_spec.values)  # type: ignore[attr-defined]
            if _bad_spec(spec):
                found.append(f"{path.relative_to(ROOT)}:{line}: f-string spec ':{spec}'")
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "format" \
                and len(node.args) == 2 and isinstance(node.args[1], ast.Constant) \
                and isinstance(node.args[1].value, str) and _bad_spec(node.args[1].value):
            found.append(f"{path.relative_to(ROOT)}:{line}: format(..., {node.args[1].value!r})")
        elif isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mod) and isinstance(node.left, ast.Constant) \
                and isinstance(node.left.value, str) and PERCENT_FORMAT.search(node.left.value):
            found.append(f"{path.relative_to(ROOT)}:{line}: %-format {node.left.value!r}")
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and "{:" in node.value:
            for spec in re.findall(r"\{[^{}:]*:([^{}]*)\}", node.value):
                if _bad_spec(spec):
                    found.append(f"{path.relative_to(ROOT)}:{line}: str.format spec ':{spec}'")
    return found


def test_no_python_module_but_numbers_formats_a_float() -> None:
    sources = [p for package in ("cobalt_lib", "cobalt_dagster") for p in sorted((ROOT / package).rglob("*.py"))
               if p != HOME]
    assert len(sources) > 100
    offences = [o for p in sources for o in python_offences(p)]
    assert offences == [], "format these through cobalt_lib/_numbers.py:\n" + "\n".join(offences)


def test_no_template_formats_a_number_outside_svg_geometry() -> None:
    offences = []
    for path in sorted((ROOT / "cobalt_lib" / "pages" / "templates").rglob("*.html")):
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if TEMPLATE_FORMAT.search(GEOMETRY.sub("", line)):
                offences.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()[:100]}")
    assert offences == [], "use the number filters (score, delta, pct, ms, usd, num):\n" + "\n".join(offences)


def test_the_pages_script_formats_numbers_only_in_its_numbers_block() -> None:
    offences = []
    for path in sorted((ROOT / "cobalt_lib" / "pages" / "static").glob("*.js")):
        text = path.read_text(encoding="utf-8")
        outside = re.sub(r"// ---- Numbers.*?// ---- end of Numbers", "", text, flags=re.S)
        for line in outside.splitlines():
            geometry = re.search(r"\.style\.\w+\s*=|setAttribute\(\"(x|y|width|height)", line)  # layout, not text
            if not geometry and re.search(r"\.toFixed\(|\.toPrecision\(|toLocaleString\(", line):
                offences.append(f"{path.relative_to(ROOT)}: {line.strip()[:100]}")
    assert offences == [], "use the script's Numbers (score, delta, ms, usd, pct):\n" + "\n".join(offences)


def test_the_rule_catches_what_it_should() -> None:
    """The scanner itself: each banned form is caught, integers and plain text are not."""
    bad = ['f"{x:.2f}"', 'f"{x:.1%}"', 'f"{x:g}"', 'f"{x:+.3f}"', 'f"{x:.{d}f}"', 'f"{x:,.0f}"', '"%.2f" % x',
           'format(x, ".3g")', '"{:.2f}".format(x)', 'f"{x:>8.2f}"', 'f"{x:e}"']
    good = ['f"{n:06d}"', 'f"{n:+d}"', 'f"{n:,}"', 'f"{n:,d}"', 'f"{s:>10}"', 'f"{s!r}"', '"%s" % x', '"%d" % n',
            'f"{when:%Y-%m-%d %H:%M}"']
    tmp = ROOT / "tests" / "_numbers_probe.py"
    try:
        for source in bad:
            tmp.write_text(f"x = d = n = s = 1\n{source}\n")
            assert python_offences(tmp), source
        for source in good:
            tmp.write_text(f"x = d = n = s = when = 1\n{source}\n")
            assert not python_offences(tmp), source
    finally:
        tmp.unlink(missing_ok=True)
