"""promptfoo: a `promptfooconfig.yaml` (prompts, providers, tests, defaultTest, assert) as an experiment.

Each test becomes a dataset item (its vars as fields) carrying its assertions as `checks`; several prompts
or providers become the variants `prompt` and `model`. See docs/imports.md for every construct.
"""

from __future__ import annotations

import csv
import io
import itertools
import json
import re
from pathlib import Path
from typing import Any

from ._assertions import Assertions
from ._plan import ModelSpec, Plan, Prompt
from ._providers import provider_spec
from ._source import Document, Findings, KeyPath, load_yaml, read_text
from ._templates import template_problem
from ._writer import slug

CONFIG_NAMES = ("promptfooconfig.yaml", "promptfooconfig.yml")
#: Top-level keys that only steer promptfoo's own output: nothing to translate, nothing lost.
_OUTPUT_ONLY = {"outputPath", "sharing", "writeLatestResults", "$schema", "tags"}
_KNOWN = {"description", "prompts", "providers", "targets", "tests", "defaultTest"} | _OUTPUT_ONLY
_TEST_KEYS = {"vars", "assert", "description", "threshold", "options"}


def config_path(path: Path) -> Path:
    """The config file: `path` itself, or the promptfooconfig.yaml in the folder `path`."""
    if path.is_dir():
        for name in CONFIG_NAMES:
            if (path / name).is_file():
                return path / name
    return path


def read(path: Path, findings: Findings) -> Plan:
    doc = load_yaml(config_path(path))
    findings.source = doc.path.name
    config = doc.data if isinstance(doc.data, dict) else None
    if config is None:
        findings.error(doc.where(()), "is not a promptfoo config (a mapping with prompts, providers and tests)")
        return Plan("promptfoo", doc.path.name, "imported", [], {}, {})
    for key in config:
        if key not in _KNOWN:
            findings.refuse(doc.where((key,)), f"promptfoo's {key!r} has no cobalt equivalent; remove it, or "
                                               "import without it (--skip-unsupported)")
    reader = _Reader(doc, findings)
    prompts = reader.prompts(config.get("prompts"))
    models = reader.providers(config.get("providers", config.get("targets")),
                              "providers" if "providers" in config else "targets")
    items = reader.tests(config.get("tests"), config.get("defaultTest") or {}, prompts)
    name = slug(str(config.get("description") or doc.path.parent.name or "promptfoo"))
    plan = Plan("promptfoo", doc.path.name, name, items, prompts, models,
                description=str(config.get("description") or ""))
    reader.finish(plan)
    return plan


class _Reader:
    def __init__(self, doc: Document, findings: Findings) -> None:
        self.doc, self.findings = doc, findings
        self.base = doc.path.parent
        self.thresholds: dict[Any, KeyPath] = {}
        self.asserts = Assertions(doc, findings)

    # -- prompts --------------------------------------------------------------------------------

    def prompts(self, raw: Any) -> dict[str, Prompt]:
        entries = raw if isinstance(raw, list) else [raw] if raw is not None else []
        if not entries:
            self.findings.error(self.doc.where(("prompts",)), "no prompts are given; list at least one prompt")
        prompts: dict[str, Prompt] = {}
        for i, entry in enumerate(entries):
            for label, prompt in self._prompt(entry, ("prompts", i) if isinstance(raw, list) else ("prompts",)):
                if prompt is not None:
                    prompts[label or f"prompt{len(prompts) + 1}"] = prompt
        return prompts

    def _prompt(self, entry: Any, at: KeyPath) -> list[tuple[str | None, Prompt | None]]:
        label = None
        if isinstance(entry, dict):
            label = entry.get("label") or None
            if "raw" not in entry and not str(entry.get("id", "")).startswith("file://"):
                self.findings.error(self.doc.where((*at, "id")), "a prompt's id names a file (file://...); give "
                                                                 "the prompt's text as raw")
                return []
            entry = entry.get("raw", entry.get("id"))
        if not isinstance(entry, str):
            self.findings.error(self.doc.where(at), "is not a prompt; give a text, a file:// path or {raw, label}")
            return []
        if entry.startswith("file://"):
            found = self._prompt_file(entry[7:], at)
            if len(found) == 1:  # a file of one prompt is called by its name, as promptfoo shows it
                return [(label or Path(entry[7:]).stem, found[0])]
            return [(None, p) for p in found]
        return [(label, self._checked(_chat_or_text(entry), at))]

    def _prompt_file(self, name: str, at: KeyPath) -> list[Prompt | None]:
        path = self.base / name
        if path.suffix not in (".txt", ".md", ".json", ".j2", ".njk"):
            self.findings.refuse(self.doc.where(at), f"prompt file {name} is code (promptfoo runs it to build the "
                                                     "prompt); write the prompt it builds as a text or chat JSON file")
            return []
        text = read_text(path)
        if path.suffix == ".json":
            return [self._checked(_chat_or_text(text), at)]
        return [self._checked(part.strip(), at) for part in re.split(r"^---$", text, flags=re.M) if part.strip()]

    def _checked(self, prompt: Prompt, at: KeyPath) -> Prompt | None:
        texts = [prompt] if isinstance(prompt, str) else [m.get("content", "") for m in prompt]
        for text in texts:
            if problem := template_problem(text):
                self.findings.refuse(self.doc.where(at), problem)
                return None
        return prompt

    # -- providers ------------------------------------------------------------------------------

    def providers(self, raw: Any, key: str) -> dict[str, ModelSpec]:
        entries = raw if isinstance(raw, list) else [raw] if raw is not None else []
        if not entries:
            self.findings.error(self.doc.where((key,)), f"no {key} are given; name the model, e.g. openai:gpt-4o-mini")
        models: dict[str, ModelSpec] = {}
        for i, entry in enumerate(entries):
            at: KeyPath = (key, i) if isinstance(raw, list) else (key,)
            found = provider_spec(entry, self.doc, at, self.findings)
            if found is not None:
                models[found[0]] = found[1]
        return models

    # -- tests ----------------------------------------------------------------------------------

    def tests(self, raw: Any, default: Any, prompts: dict[str, Prompt]) -> list[dict[str, Any]]:
        if not isinstance(default, dict):
            self.findings.error(self.doc.where(("defaultTest",)), "is not a mapping; give vars, assert, threshold")
            default = {}
        self._test_keys(default, ("defaultTest",))
        self.asserts.judge = _judge_option(default, self.doc, self.findings)
        tests, origin = self._test_list(raw)
        items = []
        for i, test in enumerate(tests):
            at: KeyPath = (*origin, i)
            if not isinstance(test, dict):
                self.findings.error(self.doc.where(at), "is not a test; give a mapping with vars and assert")
                continue
            self._test_keys(test, at)
            items += self._items(test, default, at, prompts)
        if not items:
            self.findings.error(self.doc.where(("tests",)), "holds no tests; add at least one test with vars")
        return items

    def _test_list(self, raw: Any) -> tuple[list[Any], KeyPath]:
        if isinstance(raw, str) and raw.startswith("file://"):
            name = raw[7:]
            if name.endswith(".csv"):
                return _csv_tests(self.base / name), ("tests",)
            sub = load_yaml(self.base / name, shown=name)
            self.doc = sub  # the tests' lines are the tests file's
            self.asserts.doc = sub
            return (sub.data if isinstance(sub.data, list) else []), ()
        return (raw if isinstance(raw, list) else []), ("tests",)

    def _test_keys(self, test: dict[str, Any], at: KeyPath) -> None:
        for key in test:
            if key not in _TEST_KEYS:
                self.findings.refuse(self.doc.where((*at, key)), f"a test's {key!r} has no cobalt equivalent; "
                                                                 "remove it, or import without it (--skip-unsupported)")
        if "threshold" in test:
            self.thresholds.setdefault(test["threshold"], (*at, "threshold"))

    def _items(self, test: dict[str, Any], default: dict[str, Any], at: KeyPath,
               prompts: dict[str, Prompt]) -> list[dict[str, Any]]:
        variables = {**(default.get("vars") or {}), **(test.get("vars") or {})}
        variables = {key: self._var(value, (*at, "vars", key)) for key, value in variables.items()}
        # a var given as a list runs the test once per value (every combination of several lists)
        keys = [k for k, v in variables.items() if isinstance(v, list)]
        combos = itertools.product(*(variables[k] for k in keys)) if keys else [()]
        items = []
        for combo in combos:
            item = {**variables, **dict(zip(keys, combo, strict=True))}
            if test.get("description"):
                item["description"] = test["description"]
            item["checks"] = self.asserts.checks(item, [*(default.get("assert") or [])], ("defaultTest", "assert"),
                                                 (*at, "assert"), test.get("assert") or [], prompts)
            items.append(item)
        return items

    def _var(self, value: Any, at: KeyPath) -> Any:
        if isinstance(value, str) and value.startswith("file://"):
            name = value[7:]
            if Path(name).suffix not in (".txt", ".md", ".json"):
                self.findings.refuse(self.doc.where(at), f"var file {name} is code (promptfoo runs it to make the "
                                                         "value); put the value it makes in the test")
                return value
            text = read_text(self.base / name)
            return json.loads(text) if name.endswith(".json") else text
        return value

    def finish(self, plan: Plan) -> None:
        given = dict(self.thresholds)
        if len(given) > 1:
            first, *others = given.items()
            for value, at in others:
                self.findings.refuse(self.doc.where(at), f"threshold {value} differs from {first[0]} at "
                                                         f"{self.doc.where(first[1])}; cobalt has one pass mark for "
                                                         "every item's checks, give every test the same threshold")
        from ._plan import EvaluatorSpec

        if given:
            plan.evaluators.append(EvaluatorSpec("checks", "checks", threshold=float(next(iter(given)))))
        else:
            plan.gates.append(("checks", 1.0))  # promptfoo fails when any test fails: every item's checks pass
        _ids(plan.items)
        plan.evaluators += self.asserts.evaluators
        plan.code += self.asserts.code


def _ids(items: list[dict[str, Any]]) -> None:
    """Descriptions as item ids when every test has its own: runs pair their items by id."""
    names = [item.get("description") for item in items]
    if all(names) and len(set(names)) == len(names):
        for item in items:
            item["id"] = item.pop("description")


def _chat_or_text(text: str) -> Prompt:
    """A prompt written as a JSON list of chat messages is those messages; anything else is text."""
    stripped = text.strip()
    if stripped.startswith("["):
        try:
            messages = json.loads(stripped)
        except json.JSONDecodeError:
            return text
        if isinstance(messages, list) and all(isinstance(m, dict) and {"role", "content"} <= set(m) for m in messages):
            return [{"role": str(m["role"]), "content": str(m["content"])} for m in messages]
    return text


def _judge_option(default: dict[str, Any], doc: Document, findings: Findings) -> ModelSpec | None:
    """`defaultTest.options.provider`: the model the model-graded assertions use."""
    options = default.get("options") or {}
    provider = options.get("provider") if isinstance(options, dict) else None
    for key in options if isinstance(options, dict) else ():
        if key != "provider":
            findings.refuse(doc.where(("defaultTest", "options", key)), f"option {key!r} has no cobalt equivalent; "
                                                                         "remove it (--skip-unsupported)")
    if provider is None:
        return None
    found = provider_spec(provider, doc, ("defaultTest", "options", "provider"), findings)
    return found[1] if found else None


def _csv_tests(path: Path) -> list[dict[str, Any]]:
    """A tests CSV: each column a var, `__expected` an assertion in promptfoo's short form."""
    rows = list(csv.DictReader(io.StringIO(read_text(path))))
    tests = []
    for row in rows:
        asserts = [_short_assert(v) for k, v in row.items() if k.startswith("__expected") and v]
        tests.append({"vars": {k: v for k, v in row.items() if not k.startswith("__")}, "assert": asserts,
                      **({"description": row["__description"]} if row.get("__description") else {})})
    return tests


def _short_assert(text: str) -> dict[str, Any]:
    """`contains: Paris` -> {type: contains, value: Paris}; a plain value is `equals`."""
    match = re.match(r"^(not-)?([a-z][a-z-]*):\s?(.*)$", text, flags=re.S)
    if match is None:
        return {"type": "equals", "value": text}
    kind = (match.group(1) or "") + match.group(2)
    return {"type": kind, "value": match.group(3)} if match.group(3) else {"type": kind}
