"""OpenAI Evals API: an eval object (`GET /v1/evals/{id}`), its runs (`GET /v1/evals/{id}/runs`) and the
JSONL data as an experiment. The eval's graders become evaluators; each run's model and input messages
become the agent, several runs the variants `model` (and `prompt`).

PATH is the folder holding `eval.json`, `runs.json` and the data (the run's `file_content`, else
`<file_id>.jsonl`, else the folder's one `.jsonl` file), or the eval.json itself.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ._graders import Graders
from ._openai_runs import run_report
from ._plan import ModelSpec, Plan, Prompt
from ._source import Document, Findings, KeyPath, load_json, load_jsonl
from ._templates import message_content, openai_template
from ._writer import slug


def read(path: Path, findings: Findings) -> Plan:
    folder = path if path.is_dir() else path.parent
    doc = load_json(path / "eval.json" if path.is_dir() else path)
    findings.source = doc.path.name
    data = doc.data if isinstance(doc.data, dict) else {}
    if data.get("object") != "eval":
        findings.error(doc.where(()), 'is not an eval object (its "object" is not "eval"); save the answer of '
                                      "GET /v1/evals/{id}")
    runs_doc = load_json(folder / "runs.json") if (folder / "runs.json").is_file() else None
    runs = _runs(runs_doc, doc, findings)
    prompts: dict[str, Prompt] = {}
    models: dict[str, ModelSpec] = {}
    items: list[dict[str, Any]] = []
    for at, run in runs:
        assert runs_doc is not None
        _run(run, at, runs_doc, findings, prompts, models)
        if not items:
            items = _items(run, at, runs_doc, folder, findings)
    _data_config(data, doc, findings)
    graders = Graders(doc, findings)
    for i, criterion in enumerate(data.get("testing_criteria") or []):
        graders.add(criterion, ("testing_criteria", i))
    plan = Plan("OpenAI Evals", doc.path.name, slug(str(data.get("name") or doc.path.parent.name)), items,
                prompts, models, graders.evaluators, graders.code)
    names = [e.name for e in plan.evaluators]
    for _, run in runs:
        model = str((run.get("data_source") or {}).get("model") or "")
        variant = f"model={model}" if len(models) > 1 else None
        report = run_report(folder, run, plan.name, names, variant, findings)
        if report is not None:
            plan.history.append(report)
    return plan


def _runs(runs_doc: Document | None, doc: Document, findings: Findings) -> list[tuple[KeyPath, dict[str, Any]]]:
    if runs_doc is None:
        findings.error(doc.where(()), "has no runs.json beside it, and only a run names the model and the input "
                                      "messages; save GET /v1/evals/{id}/runs as runs.json next to it")
        return []
    data = runs_doc.data
    if isinstance(data, dict) and data.get("object") == "list":
        return [(("data", i), run) for i, run in enumerate(data.get("data") or []) if isinstance(run, dict)]
    if isinstance(data, dict) and data.get("object") == "eval.run":
        return [((), data)]
    findings.error(runs_doc.where(()), "is neither a run nor a list of runs; save GET /v1/evals/{id}/runs")
    return []


def _run(run: dict[str, Any], at: KeyPath, doc: Document, findings: Findings, prompts: dict[str, Prompt],
         models: dict[str, ModelSpec]) -> None:
    source = run.get("data_source") or {}
    if source.get("type") != "completions":
        findings.refuse(doc.where((*at, "data_source", "type")), f"a {source.get('type')!r} run has no model for "
                        "cobalt to call; import a completions run (its model and input_messages)")
        return
    params = source.get("sampling_params") or {}
    for key in params:
        if key not in ("temperature", "max_completion_tokens", "max_tokens"):
            findings.refuse(doc.where((*at, "data_source", "sampling_params", key)), f"sampling parameter {key!r} "
                            "has no cobalt equivalent (cobalt sends temperature and max_tokens); remove it")
    model = str(source.get("model") or "")
    models.setdefault(model, ModelSpec("openai", model, temperature=params.get("temperature"),
                                       max_tokens=params.get("max_completion_tokens", params.get("max_tokens"))))
    messages = (source.get("input_messages") or {})
    if messages.get("type") != "template":
        findings.refuse(doc.where((*at, "data_source", "input_messages")), "input messages given by item_reference "
                        "are the dataset's own; write them as a template of messages")
        return
    prompt = [{"role": str(m.get("role", "user")), "content": openai_template(message_content(m.get("content")))}
              for m in messages.get("template") or []]
    if prompt not in prompts.values():
        prompts[str(run.get("name") or f"prompt{len(prompts) + 1}") if prompts else "prompt"] = prompt


def _items(run: dict[str, Any], at: KeyPath, doc: Document, folder: Path, findings: Findings) -> list[dict[str, Any]]:
    source = (run.get("data_source") or {}).get("source") or {}
    if source.get("type") == "file_content":
        rows = list(enumerate(source.get("content") or [], 1))
        shown = doc.where((*at, "data_source", "source", "content"))
    else:
        file = folder / f"{source.get('id')}.jsonl"
        found = [file] if file.is_file() else sorted(folder.glob("*.jsonl"))
        if len(found) != 1:
            findings.error(doc.where((*at, "data_source", "source")), f"names the data file {source.get('id')!r}, "
                           f"which is not in {folder}; save it there as {source.get('id')}.jsonl")
            return []
        rows, shown = load_jsonl(found[0], findings), found[0].name
    items = []
    for number, row in rows:
        item = row.get("item", row) if isinstance(row, dict) else None
        if not isinstance(item, dict):
            findings.error(f"{shown}, line {number}", 'is not an item; give an object, or {"item": {...}}')
            continue
        items.append(dict(item))
    return items


def _data_config(data: dict[str, Any], doc: Document, findings: Findings) -> None:
    config = data.get("data_source_config") or {}
    if config.get("type") not in ("custom", None):
        findings.refuse(doc.where(("data_source_config", "type")), f"a {config.get('type')!r} data source reads "
                        "stored completions or logs, which cobalt cannot fetch; export them as JSONL items")
