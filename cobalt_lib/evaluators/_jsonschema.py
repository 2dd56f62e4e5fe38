"""The one JSON Schema validator of the kinds that check JSON against a schema (`json_schema`,
`tool_calls_valid`): the draft the schema's `$schema` names (2020-12 by default), with `format` checked,
so the same schema says the same thing of the same value whichever kind applies it."""

from __future__ import annotations

import re
from typing import Any

_REQUIRED = re.compile(r"^(.*) is a required property$")


class BadSchema(ValueError):
    """A schema that is not a valid JSON Schema; the message names where in the schema it breaks."""


def compile_schema(schema: Any, what: str) -> Any:
    """A validator for `schema` (format checking on); BadSchema naming `what` ("schema", "the arguments
    schema of tool 'x'") when it is not a valid JSON Schema."""
    from jsonschema import Draft202012Validator, SchemaError, validators

    cls = validators.validator_for(schema, default=Draft202012Validator)
    try:
        cls.check_schema(schema)
    except SchemaError as exc:
        raise BadSchema(f"{what} is not a valid JSON Schema: {exc.message} (at {path_text(exc.absolute_path)} "
                        "of the schema)") from None
    return cls(schema, format_checker=cls.FORMAT_CHECKER)


def schema_problem(validator: Any, instance: Any) -> str | None:
    """The first failing path and why (`at $.date: '2024-13-45' is not a 'date' (and 1 more)`), or None."""
    errors = sorted(validator.iter_errors(instance), key=lambda e: [str(p) for p in e.absolute_path])
    if not errors:
        return None
    more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
    return f"at {path_text(errors[0].absolute_path)}: {error_text(errors[0])}{more}"


def path_text(path: Any) -> str:
    """`$`, `$.address.country`, `$.items[0]`."""
    text = "$"
    for part in path:
        text += f"[{part}]" if isinstance(part, int) else f".{part}"
    return text


def error_text(error: Any) -> str:
    if error.validator == "required":
        match = _REQUIRED.match(error.message)
        if match:
            return f"missing required property {match.group(1)}"
    return str(error.message)
