"""Templates: which of a source's template languages cobalt's `{{field}}` can take as they are."""

from __future__ import annotations

import re

_BLOCK = re.compile(r"\{%|\{#")
_EXPRESSION = re.compile(r"\{\{(.*?)\}\}", re.S)
_PLAIN = re.compile(r"^\s*[A-Za-z_][\w-]*(?:\.[\w-]+)*\s*$")


def template_problem(text: str) -> str | None:
    """Why `text` is more than `{{variable}}`s (a Nunjucks/Jinja block, filter or expression), or None."""
    if _BLOCK.search(text):
        return ("uses a Nunjucks block ({% ... %} or {# ... #}), which cobalt's {{field}} templates do not run; "
                "write the prompt out for each case, or compute the text into a var")
    for match in _EXPRESSION.finditer(text):
        if not _PLAIN.match(match.group(1)):
            return (f"uses the template expression {{{{{match.group(1).strip()}}}}}, but cobalt fills only "
                    "{{field}} and {{field.key}}; compute the value into a var and name it")
    return None


def fill_static(text: str, values: dict[str, object]) -> str:
    """`{{name}}` replaced by `values[name]` where known (the rest left for the run to fill)."""

    def one(match: re.Match[str]) -> str:
        name = match.group(1).strip()
        return str(values[name]) if name in values else match.group(0)

    return _EXPRESSION.sub(one, text)
