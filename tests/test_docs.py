"""The code blocks that README.md and docs/ mark runnable run, so the docs cannot drift from the code.

The convention (docs/README.md explains it to writers): an HTML comment line right before a fence.

    <!-- runnable -->                     run the block in a fresh, empty directory
    <!-- runnable: continue -->           run it where the previous marked block of the same page left off
    <!-- runnable: file=PATH -->          write the block to PATH in that directory instead of running it
    <!-- runnable: continue file=PATH -->

`python` blocks run with this interpreter, `bash` blocks with `bash -e` and the venv's `cobalt` on PATH;
a `file=` block of any language is written, then checked by its extension (.py, .json, .jsonl, .toml).
Every block runs in a subprocess without API keys and with COBALT_TESTING=1. One test case per block,
named `page:line`. A chain (a block and the `continue` blocks after it) runs once, in order, in one
directory; independent chains run in parallel.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tomllib
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pytest
from slowdown import scaled

ROOT = Path(__file__).parent.parent
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]

MARKER = re.compile(r"^<!--\s*runnable(?::(?P<options>[^>]*))?\s*-->\s*$")
FENCE = re.compile(r"^(?P<fence>`{3,}|~{3,})\s*(?P<lang>[\w+-]*)")
RUN_LANGUAGES = {"python": "python", "py": "python", "bash": "bash", "sh": "bash", "shell": "bash"}
#: Environment variables a block must not see: keys and servers (the docs run offline), and CI or
#: project settings of the machine running the tests.
HIDDEN = re.compile(r".*_(API_KEY|BASE_URL)$|^(COBALT_PROJECT_DIR|DAGSTER_HOME|GITHUB_ACTIONS|GITHUB_STEP_SUMMARY)$")
TIMEOUT = 120


@dataclass(frozen=True)
class Block:
    page: str  # relative to the repository root
    line: int  # of the opening fence, 1-based
    lang: str
    code: str
    file: str | None
    #: The marked blocks of the same page this one builds on, first to last (empty: a fresh directory).
    prior: tuple[Block, ...] = ()

    @property
    def id(self) -> str:
        return f"{self.page}:{self.line}"


def parse(page: Path) -> tuple[list[Block], list[str]]:
    """The marked blocks of a page, and what is wrong with its markers."""
    rel = page.relative_to(ROOT).as_posix()
    lines = page.read_text(encoding="utf-8").splitlines()
    blocks: list[Block] = []
    problems: list[str] = []
    chain: list[Block] = []
    marker: tuple[int, list[str]] | None = None
    i = 0
    while i < len(lines):
        fence = FENCE.match(lines[i])
        if fence is None:
            found = MARKER.match(lines[i].strip())
            if marker is not None:
                problems.append(f"{rel}:{marker[0]}: a runnable marker must be the line right before a ``` fence")
            marker = (i + 1, (found.group("options") or "").split()) if found else None
            i += 1
            continue
        end = next((j for j in range(i + 1, len(lines)) if _closes(lines[j], fence.group("fence"))), len(lines))
        if marker is not None:
            block, problem = _block(rel, i + 1, fence.group("lang").lower(), lines[i + 1:end], marker[1], chain)
            if block is None:
                problems.append(problem or "")
            else:
                chain = [*block.prior, block]
                blocks.append(block)
        marker = None
        i = end + 1
    if marker is not None:
        problems.append(f"{rel}:{marker[0]}: a runnable marker must be the line right before a ``` fence")
    return blocks, problems


def _closes(line: str, fence: str) -> bool:
    """A closing fence: the opening fence's character, at least as many times, and nothing else."""
    text = line.strip()
    return text.startswith(fence) and not text.strip(fence[0])


def _block(page: str, line: int, lang: str, body: list[str], options: list[str],
           chain: list[Block]) -> tuple[Block | None, str | None]:
    where = f"{page}:{line}"
    file = next((o.removeprefix("file=") for o in options if o.startswith("file=")), None)
    unknown = [o for o in options if o != "continue" and not o.startswith("file=")]
    if unknown:
        return None, f"{where}: unknown runnable option {unknown[0]!r} (use `continue` and/or `file=PATH`)"
    if file is not None and (not file or Path(file).is_absolute() or ".." in Path(file).parts):
        return None, f"{where}: file= needs a relative path inside the block's directory, got {file!r}"
    if file is None and lang not in RUN_LANGUAGES:
        return None, f"{where}: a runnable {lang or 'untyped'} block needs file=PATH (only python and bash run)"
    if "continue" in options and not chain:
        return None, f"{where}: `continue` but no marked block comes before it on this page"
    prior = tuple(chain) if "continue" in options else ()
    return Block(page, line, RUN_LANGUAGES.get(lang, lang), "\n".join(body) + "\n", file, prior), None


PARSED = [parse(page) for page in PAGES]
BLOCKS = [block for blocks, _ in PARSED for block in blocks]


def test_markers_are_well_formed() -> None:
    problems = [problem for _, found in PARSED for problem in found]
    assert not problems, "\n".join(problems)


def test_the_docs_mark_runnable_blocks() -> None:
    """Marking must not silently vanish: the README's quickstart, at least, runs."""
    assert BLOCKS, "no code block in README.md or docs/ is marked <!-- runnable -->"
    assert any(block.page == "README.md" for block in BLOCKS), "README.md's quickstart is not marked runnable"


def _environment() -> dict[str, str]:
    env = {name: value for name, value in os.environ.items() if not HIDDEN.match(name)}
    env["COBALT_TESTING"] = "1"
    env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", "")
    return env


def _check_file(path: Path) -> None:
    """Raise when a written file is not valid for its kind."""
    text = path.read_text(encoding="utf-8")
    if path.suffix == ".py":
        compile(text, str(path), "exec")
    elif path.suffix == ".json":
        json.loads(text)
    elif path.suffix == ".jsonl":
        for line in text.splitlines():
            if line.strip():
                json.loads(line)
    elif path.suffix == ".toml":
        tomllib.loads(text)


def _execute(block: Block, workdir: Path, scripts: Path) -> str | None:
    """Run (or write) one block in `workdir`; a description of the failure, None when it passed."""
    if block.file is not None:
        target = workdir / block.file
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(block.code, encoding="utf-8")
        try:
            _check_file(target)
        except (SyntaxError, ValueError) as exc:
            return f"{block.id}: {block.file} is not valid: {exc}"
        return None
    script = scripts / f"block_{Path(block.page).stem}_{block.line}.{'py' if block.lang == 'python' else 'sh'}"
    script.write_text(block.code, encoding="utf-8")
    command = [sys.executable, str(script)] if block.lang == "python" else ["bash", "-e", str(script)]
    try:
        result = subprocess.run(command, cwd=workdir, env=_environment(), capture_output=True, text=True,
                                timeout=scaled(TIMEOUT))
    except subprocess.TimeoutExpired as exc:
        return (f"{block.id}: did not finish within {exc.timeout:.0f} s"
                f" ({TIMEOUT} s on a quiet machine, scaled by its load)")
    if result.returncode != 0:
        return (f"{block.id}: exited with code {result.returncode}\n--- stderr ---\n{result.stderr}"
                f"--- stdout (last 2000 characters) ---\n{result.stdout[-2000:]}")
    return None


#: Per chain (its first block's id): the failure of each of its blocks, None for a block that passed.
Outcomes = dict[str, Future[dict[str, str | None]]]


def _run_chain(steps: list[Block], workdir: Path, scripts: Path) -> dict[str, str | None]:
    """Run a chain's blocks in order in one directory: each block's failure, or None when it passed."""
    outcome: dict[str, str | None] = {}
    failed: Block | None = None
    for step in steps:
        if failed is not None:
            outcome[step.id] = f"{step.id} builds on {failed.id}, which failed:\n{outcome[failed.id]}"
            continue
        outcome[step.id] = _execute(step, workdir, scripts)
        if outcome[step.id] is not None:
            failed = step
    return outcome


@pytest.fixture(scope="session")
def outcomes(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Outcomes]:
    """Every chain with a selected block runs once, up to its last selected block; independent
    chains run in parallel (subprocesses), the blocks of one chain in order."""
    chains: dict[str, list[Block]] = {}
    for item in request.session.items:
        block = getattr(getattr(item, "callspec", None), "params", {}).get("block")
        if isinstance(block, Block):
            steps = [*block.prior, block]
            if len(steps) > len(chains.get(steps[0].id, [])):
                chains[steps[0].id] = steps
    with ThreadPoolExecutor(max_workers=max(2, os.cpu_count() or 2)) as pool:
        yield {key: pool.submit(_run_chain, steps, tmp_path_factory.mktemp("docs"),
                                tmp_path_factory.mktemp("scripts")) for key, steps in chains.items()}


@pytest.mark.parametrize("block", BLOCKS, ids=[block.id for block in BLOCKS])
def test_block_runs(block: Block, outcomes: Outcomes) -> None:
    failure = outcomes[(block.prior or (block,))[0].id].result()[block.id]
    if failure is not None:
        pytest.fail(failure, pytrace=False)


#: What differs from one run to the next in `cobalt run`'s output: run ids, timestamps, durations, the project path.
_VARYING = [(re.compile(r"\d{14}-[0-9a-f]{8}"), "RUN-ID"), (re.compile(r"\d{8}T\d{6}Z"), "TIMESTAMP"),
            (re.compile(r"\d[\d.,]*(?:ms|µs|s)\b"), "DURATION"),
            (re.compile(r"results: \S*/\.cobalt/"), "results: ROOT/")]


def _steady(text: str) -> list[str]:
    for pattern, stands_for in _VARYING:
        text = pattern.sub(stands_for, text)
    lines = [line.rstrip() for line in text.strip().splitlines()]
    items = sorted(line for line in lines if line.startswith("    #"))  # items print as they finish, in any order
    first = next((i for i, line in enumerate(lines) if line.startswith("    #")), len(lines))
    return lines[:first] + items + [line for line in lines[first:] if not line.startswith("    #")]


def test_the_readme_sample_output_is_what_cobalt_run_prints(tmp_path: Path) -> None:
    """The quickstart's "You will see" block, against the quickstart run today (ids and timings aside)."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    [experiment] = [b for b in BLOCKS if b.page == "README.md" and b.file == "experiments/capitals.cobalt.py"]
    sample = readme.split("You will see (run ids and timings differ):\n\n```text\n", 1)[1].split("```", 1)[0]
    (tmp_path / "experiments").mkdir()
    (tmp_path / "experiments" / "capitals.cobalt.py").write_text(experiment.code, encoding="utf-8")
    result = subprocess.run(["cobalt", "run"], cwd=tmp_path, env=_environment(), capture_output=True, text=True,
                            timeout=TIMEOUT)
    assert result.returncode == 0, result.stderr
    assert _steady(result.stdout) == _steady(sample), result.stdout
