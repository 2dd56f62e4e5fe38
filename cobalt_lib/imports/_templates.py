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


_ITEM = re.compile(r"\{\{\s*item\.([\w.-]+)\s*\}\}")
_SAMPLE_OUTPUT = re.compile(r"\{\{\s*sample\.output_text\s*\}\}")


def openai_template(text: str) -> str:
    """The Evals API's `{{item.x}}` as cobalt's `{{x}}` (the item's field), `{{sample.output_text}}` as `{{output}}`."""
    return _SAMPLE_OUTPUT.sub("{{output}}", _ITEM.sub(lambda m: "{{" + m.group(1) + "}}", text))


def message_content(content: object) -> str:
    """A message's content: a text, or `{type: input_text, text}` parts joined."""
    if isinstance(content, dict):
        return str(content.get("text", ""))
    if isinstance(content, list):
        return "".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return str(content or "")
