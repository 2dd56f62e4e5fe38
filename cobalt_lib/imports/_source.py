"""What an import reads and what it refuses: a source file with the line of every key, and the list of
sentences naming each construct that has no cobalt equivalent.

Nothing is written until the whole source has been read: a reader records every refusal and every
error as it goes, and `Findings.check` raises once, with all of them, before the writer runs.
"""

from __future__ import annotations

import contextlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .._errors import CobaltError

#: A path into a parsed document: mapping keys and sequence positions (`("tests", 1, "assert", 0)`).
KeyPath = tuple[str | int, ...]


class ImportRefused(CobaltError):
    """The source holds constructs that cannot be imported (or is malformed); nothing was written."""

    def __init__(self, source: str, errors: list[str], refusals: list[str]) -> None:
        sentences = [*errors, *refusals]
        hint = " (pass --skip-unsupported to import the rest)" if refusals and not errors else ""
        count = f"{len(sentences)} problem" + ("s" if len(sentences) != 1 else "")
        lines = "\n".join(f"  - {s}" for s in sentences)
        super().__init__(f"cannot import {source}: {count}, nothing written{hint}:\n{lines}")
        self.sentences = sentences


def key_text(path: KeyPath) -> str:
    """`tests[1].assert[0]`: a key path as the source's own notation."""
    text = ""
    for part in path:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else part)
    return text or "(top level)"


@dataclass
class Document:
    """One parsed source file and the 1-based line of each key path in it (empty when unknown)."""

    path: Path
    data: Any
    lines: dict[KeyPath, int] = field(default_factory=dict)
    #: How the file is named in messages (relative to the imported path's folder).
    shown: str = ""

    def where(self, path: KeyPath) -> str:
        """`promptfooconfig.yaml, line 14 (tests[1].assert[0])`: the nearest known line of `path`."""
        name = self.shown or self.path.name
        for end in range(len(path), -1, -1):
            line = self.lines.get(path[:end])
            if line is not None:
                return f"{name}, line {line} ({key_text(path)})" if path else f"{name}, line {line}"
        return f"{name} ({key_text(path)})" if path else name


@dataclass
class Findings:
    """What a reader found wrong: errors (a malformed source, never skipped) and refusals (a construct
    without a cobalt equivalent, left out with `--skip-unsupported`)."""

    source: str
    skip_unsupported: bool = False
    errors: list[str] = field(default_factory=list)
    refusals: list[str] = field(default_factory=list)

    def error(self, where: str, sentence: str) -> None:
        _add(self.errors, f"{where}: {sentence}")

    def refuse(self, where: str, sentence: str) -> None:
        """Record a construct without a cobalt equivalent (once: a defaultTest's is met by every test)."""
        _add(self.refusals, f"{where}: {sentence}")

    def check(self) -> list[str]:
        """Raise unless the import may go on; return what `--skip-unsupported` leaves out."""
        if self.errors or (self.refusals and not self.skip_unsupported):
            raise ImportRefused(self.source, self.errors, self.refusals)
        return list(self.refusals)


def _add(found: list[str], sentence: str) -> None:
    if sentence not in found:
        found.append(sentence)


def load_yaml(path: Path, shown: str = "") -> Document:
    """A YAML file with the line of each key and list entry; a syntax error names its line."""
    import yaml

    text = read_text(path)
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
        data = yaml.load(text, Loader=yaml.SafeLoader)  # SafeLoader: plain data only
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = f", line {mark.line + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc)
        raise ImportRefused(path.name, [f"{shown or path.name}{line}: is not valid YAML ({problem}); fix the "
                                        "file and import again"], []) from None
    lines: dict[KeyPath, int] = {}
    if node is not None:
        _yaml_lines(node, (), lines)
    return Document(path, data, lines, shown)


def _yaml_lines(node: Any, path: KeyPath, lines: dict[KeyPath, int]) -> None:
    import yaml

    lines.setdefault(path, node.start_mark.line + 1)
    if isinstance(node, yaml.MappingNode):
        for key, value in node.value:
            lines.setdefault((*path, str(key.value)), key.start_mark.line + 1)
            _yaml_lines(value, (*path, str(key.value)), lines)
    elif isinstance(node, yaml.SequenceNode):
        for i, value in enumerate(node.value):
            _yaml_lines(value, (*path, i), lines)


def load_json(path: Path, shown: str = "") -> Document:
    """A JSON file with the line of each key (read by the YAML parser, JSON being YAML's flow style)."""
    text = read_text(path)
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ImportRefused(path.name, [f"{shown or path.name}, line {exc.lineno}: is not valid JSON ({exc.msg}); "
                                        "fix the file and import again"], []) from None
    import yaml

    lines: dict[KeyPath, int] = {(): 1}
    # JSON that YAML 1.1 reads otherwise (a tab, an escape) is still read: its messages name keys alone
    with contextlib.suppress(yaml.YAMLError):
        _yaml_lines(yaml.compose(text, Loader=yaml.SafeLoader), (), lines)
    return Document(path, data, lines, shown)


def load_jsonl(path: Path, findings: Findings, shown: str = "") -> list[tuple[int, Any]]:
    """`(line number, value)` of each non-blank line; a line that is not JSON is an error."""
    rows = []
    for number, line in enumerate(read_text(path).splitlines(), 1):
        if not line.strip():
            continue
        try:
            rows.append((number, json.loads(line)))
        except json.JSONDecodeError as exc:
            findings.error(f"{shown or path.name}, line {number}", f"is not valid JSON ({exc.msg}); fix the line")
    return rows


def read_text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ImportRefused(path.name, [f"{path}: no such file; give the path of the source to import"], []) from None
    except UnicodeDecodeError as exc:
        raise ImportRefused(path.name, [f"{path}: is not UTF-8 text (byte {exc.start}); save it as UTF-8"],
                            []) from None
