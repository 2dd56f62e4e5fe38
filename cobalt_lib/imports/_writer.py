"""The generated experiment file and its dataset: Python a new user can read and edit."""

from __future__ import annotations

import json
import os
import re
import textwrap
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .._errors import CobaltError
from ._plan import EvaluatorSpec, ModelSpec, Plan, Prompt

_INDENT = "    "
_AGENT_DOC = "Sends the prompt, filled from the item, to the model, as {} did."


@dataclass(frozen=True)
class Written:
    """The files an import wrote."""

    experiment: Path
    dataset: Path
    items: int
    skipped: list[str]
    #: The runs recorded in history with the files (an Evals API run's results).
    runs: list[str] = field(default_factory=list)


def slug(text: str) -> str:
    """`Capital cities (v2)` -> `capital-cities-v2`: a name fit for files and experiments."""
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-") or "imported"


def write(plan: Plan, experiment: Path, dataset: Path) -> Written:
    """Write the dataset (JSONL) and the experiment file; refuse to overwrite either."""
    for path in (experiment, dataset):
        if path.exists():
            raise CobaltError(f"{path} already exists; remove it or choose another path with -o / --dataset-dir.")
    dataset.parent.mkdir(parents=True, exist_ok=True)
    experiment.parent.mkdir(parents=True, exist_ok=True)
    dataset.write_text("".join(json.dumps(item, ensure_ascii=False) + "\n" for item in plan.items), encoding="utf-8")
    relative = Path(os.path.relpath(dataset.resolve(), experiment.parent.resolve())).as_posix()
    experiment.write_text(source(plan, relative, experiment.name), encoding="utf-8")
    return Written(experiment, dataset, len(plan.items), plan.skipped)


def source(plan: Plan, dataset: str, filename: str) -> str:
    """The experiment file's text; `dataset` is the dataset's path relative to the file."""
    constants = "HERE = Path(__file__).parent"
    if plan.replay is None:
        constants += ("" if plan.messages_field else f"\n\nPROMPTS = {literal(plan.prompts)}") + ("\n\nMODELS = {\n"
                      + "".join(f"{_INDENT}{_flat(key)}: {_model(spec)},\n" for key, spec in plan.models.items()) + "}")
    parts = [_header(plan, filename) + "\n\n" + _imports(plan), constants,
             *(block.strip() for block in plan.code), _experiment(plan, dataset)]
    return "\n\n\n".join(part.rstrip("\n") for part in parts) + "\n"


def _header(plan: Plan, filename: str) -> str:
    lines = [f"{plan.name}: imported from {plan.format} ({plan.source}) by `cobalt import`.", ""]
    if plan.description:
        lines += [*textwrap.wrap(plan.description, 100), ""]
    lines += [f"Run it with `cobalt run {filename}`; edit it as any experiment (docs/experiments.md)."]
    if plan.skipped:
        lines += ["", "Left out (--skip-unsupported):"]
        lines += [line for s in plan.skipped for line in textwrap.wrap(s, 100, initial_indent="- ",
                                                                        subsequent_indent="  ")]
    body = "\n".join(lines).replace("\\", "\\\\").replace('"""', '\\"\\"\\"')
    return f'"""{body}\n"""\n\nfrom __future__ import annotations'


def _imports(plan: Plan) -> str:
    names = ["Dataset", *(["Evaluator"] if plan.evaluators else []), "experiment",
             *(["threshold"] if plan.gates else [])]
    if any(spec.type == "function" for spec in plan.evaluators):
        names.insert(1, "EvalContext")
    return (("import re\n" if any("re." in block for block in plan.code) else "")
            + "from pathlib import Path\n\n"
            f"from cobalt_lib import {', '.join(names)}"
            + ("" if plan.replay is not None else "\nfrom cobalt_lib.imports import Model"))


def _model(spec: ModelSpec) -> str:
    args = [_flat(spec.provider), _flat(spec.model)]
    args += [f"{key}={_flat(value)}" for key, value in (("base_url", spec.base_url), ("temperature", spec.temperature),
                                                    ("max_tokens", spec.max_tokens)) if value is not None]
    return f"Model({', '.join(args)})"


def _evaluator(spec: EvaluatorSpec) -> str:
    args = [f"name={_flat(spec.name)}", f"type={_flat(spec.type)}"]
    if spec.fn is not None:
        args.append(f"fn={spec.fn}")
    args += [f"{key}={literal(value, 4)}" for key, value in spec.options.items()]
    if spec.threshold is not None:
        args.append(f"threshold={spec.threshold!r}")
    flat = f"Evaluator({', '.join(args)})"
    if len(flat) <= 100 and "\n" not in flat:
        return flat
    return "Evaluator(\n" + "".join(f"{_INDENT * 3}{arg},\n" for arg in args) + f"{_INDENT * 2})"


def _experiment(plan: Plan, dataset: str) -> str:
    axes = {axis: list(values) for axis, values in (("prompt", plan.prompts), ("model", plan.models))
            if len(values) > 1}
    args = [_flat(plan.name), f"Dataset.from_file(HERE / {_flat(dataset)})"]
    if axes:
        args.append(f"variants={literal(axes, 2)}")
    if plan.evaluators:
        args.append("evaluators=[\n" + "".join(f"{_INDENT * 2}{_evaluator(e)},\n" for e in plan.evaluators)
                    + f"{_INDENT}]")
    if plan.gates:
        gates = ", ".join(f"threshold({_flat(path)}, {value!r})" for path, value in plan.gates)
        args.append(f"assertions=[{gates}]")
    args.append(f"tags=[{_flat(slug(plan.format))}, \"imported\"]")
    if plan.replay is not None:
        return ("@experiment(\n" + "".join(f"{_INDENT}{arg},\n" for arg in args) + ")\n"
                "def agent(ctx):\n"
                f'{_INDENT}"""The output {plan.format} recorded for the item."""\n'
                f"{_INDENT}return ctx.item[{_flat(plan.replay)}]")
    if plan.messages_field is not None:
        return ("@experiment(\n" + "".join(f"{_INDENT}{arg},\n" for arg in args) + ")\n"
                "async def agent(ctx):\n"
                f'{_INDENT}"""Sends the item\'s own messages to the model, as {plan.format} did."""\n'
                f"{_INDENT}return await MODELS[{_flat(next(iter(plan.models)))}]"
                f".send(ctx.item[{_flat(plan.messages_field)}])")
    pick = {axis: (f'ctx.variant["{axis}"]' if axis in axes else _flat(next(iter(values))))
            for axis, values in (("prompt", plan.prompts), ("model", plan.models))}
    return ("@experiment(\n" + "".join(f"{_INDENT}{arg},\n" for arg in args) + ")\n"
            "async def agent(ctx):\n"
            f'{_INDENT}"""{plan.agent_doc or _AGENT_DOC.format(plan.format)}"""\n'
            f"{_INDENT}return await MODELS[{pick['model']}].answer(PROMPTS[{pick['prompt']}], ctx.item)")


def literal(value: Any, depth: int = 1) -> str:
    """A Python literal of JSON-like `value`, one entry per line when it is long, texts with line breaks
    as triple-quoted strings when they can be."""
    flat = _flat(value)
    if len(flat) + len(_INDENT) * depth <= 100 or not isinstance(value, dict | list) or not value:
        return flat
    inner = _INDENT * depth
    if isinstance(value, dict):
        body = "".join(f"{inner}{_flat(key)}: {literal(v, depth + 1)},\n" for key, v in value.items())
        return "{\n" + body + _INDENT * (depth - 1) + "}"
    body = "".join(f"{inner}{literal(v, depth + 1)},\n" for v in value)
    return "[\n" + body + _INDENT * (depth - 1) + "]"


def _flat(value: Any) -> str:
    if isinstance(value, str):
        return _text(value)
    if isinstance(value, dict):
        return "{" + ", ".join(f"{_flat(k)}: {_flat(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ", ".join(_flat(v) for v in value) + "]"
    return repr(value)


def _text(text: str) -> str:
    if "\n" in text and '"""' not in text and "\\" not in text and not text.endswith('"'):
        return '"""' + text + '"""'
    return json.dumps(text, ensure_ascii=False)  # a JSON string is a Python literal too, in double quotes


def prompt_text(prompt: Prompt) -> str:
    """A prompt as one text (chat messages as `role: content` lines), for a judge's prompt."""
    if isinstance(prompt, str):
        return prompt
    return "\n".join(f"{m.get('role', 'user')}: {m.get('content', '')}" for m in prompt)
