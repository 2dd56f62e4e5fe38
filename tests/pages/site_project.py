"""A project with one of everything the pages draw (issue 36): four variants with long names, a traced agent,
a scripted and a simulated conversation, two grading runs of the same samples, an experiment gated by a failing
`calibrated(...)`, and two runs of a labelled experiment whose second run answers item 1 differently and fails
item 2's agent call (labels set on the first run). Everything is run by the library against the loopback LLM
server (a module of its own: a second conftest.py would shadow the root one's `from conftest import`)."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from fakellm import FakeLLM, Reply, answer, text
from graders.grading_setup import TRUTH, per_model, write_grader
from traces.traced_agent import async_agent, per_city_replies

from cobalt_lib import ConversationContext, Evaluator, calibrated, experiment, load_config, threshold
from cobalt_lib.grading._grade import GradeOptions, grade
from cobalt_lib.grading._labels import set_label
from cobalt_lib.pages import PagesServer

KEY = "sk-test-site-0123456789"
#: The variants' names: long enough to break a grid that lets them break one letter per line.
MODELS = ["gpt-4o-mini-2024-07-18-with-a-long-deployment-name", "claude-3-5-sonnet-20241022-eu"]
PROMPTS = ["concise-answer-with-citations-v1", "step-by-step-reasoning-v2"]
#: Items of the labelled experiment (more than a page's first ten rows: the keyboard walk).
LABELLED_ITEMS = 30
USER_LINES = ["My parcel never came.", "Order 77.", "Thanks."]


@dataclass
class Site:
    root: Path
    url: str
    runs: dict[str, str] = field(default_factory=dict)
    group_id: str = ""
    #: The link `cobalt serve` prints: opening it gives the browser the user's session (label writes need it).
    login_url: str = ""


def _respond(kind: str, body: dict[str, Any]) -> Reply:
    if body.get("model") in ("agree", "off", "slow", "garbage"):
        return per_model(kind, body)
    first = str((body.get("messages") or [{}])[0].get("content", ""))
    if first.startswith("weather in "):
        return per_city_replies(kind, body)
    prompt = " ".join(str(m.get("content", "")) for m in body.get("messages") or [])
    if "role-playing a user" in prompt:
        return text(json.dumps({"message": USER_LINES[min(prompt.count("\nassistant: "), 2)],
                                "done": prompt.count("\nassistant: ") >= 2}))
    return answer(0.8, "Answers the question.")


SWEEP = f'''
from cobalt_lib import Dataset, Evaluator, experiment, threshold

data = Dataset([{{"id": f"q{{i}}", "input": f"question {{i}} about the refund policy"}} for i in range(6)])

def quality(ctx):
    return 0.9 if "careful" in ctx.output else 0.55 if ctx.index % 2 else 0.4

@experiment("refund-policy-assistant", data, variants={{"model": {MODELS!r}, "prompt": {PROMPTS!r}}},
            evaluators=[Evaluator(name="quality", type="function", fn=quality, threshold=0.5),
                        Evaluator(name="grounded-in-the-policy-document", type="function",
                                  fn=lambda ctx: 1.0 if ctx.index % 3 else 0.0)],
            assertions=[threshold("quality", 0.6)])
def agent(ctx):
    careful = ctx.variant["prompt"].startswith("step") and ctx.variant["model"].startswith("claude")
    return {{"output": ("a careful answer " if careful else "an answer ") + str(ctx.index),
            "metadata": {{"cost_usd": 0.004 if careful else 0.001}}}}
'''


def _labelled(config: Any, version: str) -> str:
    def agent(ctx: Any) -> str:
        if version == "v2" and ctx.index == 2:
            raise RuntimeError("the agent's tool timed out")
        if version == "v2" and ctx.index == 1:
            return "a different answer 1"
        return f"answer {ctx.index}"

    items = [{"input": f"question {i}", "expected_output": f"answer {i}"} for i in range(LABELLED_ITEMS)]
    exp = experiment("support-bot", items, agent,
                     evaluators=[Evaluator("exact", type="exact-match"),
                                 Evaluator("helpful", prompt="Question: {{input}} Answer: {{output}} Helpful?")],
                     assertions=[threshold("exact", 0.97)])
    return str(exp.run(config=config).id)


def _conversations(config: Any) -> str:
    def agent(ctx: ConversationContext) -> str:
        return "Sorry to hear that, please give me the order number." if ctx.turn == 1 else f"Answer {ctx.turn}."

    items = [{"id": "scripted", "conversation": {"turns": ["Hello", "Where is order 77?"]}},
             {"id": "simulated", "conversation": {"goal": "find the lost parcel", "persona": "a worried customer",
                                                  "max_turns": 2}}]
    return str(experiment("courier-chat", items, agent,
                          evaluators=[Evaluator("polite", type="contains", value="please", per_turn=True)])
               .run(config=config).id)


def _graded(config: Any, root: Path) -> str:
    items = [{"input": f"question {key}", "answer": reply} for key, (reply, _) in list(TRUTH.items())[:4]]
    path = str(root / "graders" / "numbers.py")
    exp = experiment("graded-answers", items, lambda ctx: ctx.item["answer"],
                     evaluators=[Evaluator("numbers", type="grader", grader=path, model="off")],
                     assertions=[calibrated(path, min_kappa=0.95, model="openai/off", min_labels=10)])
    return str(exp.run(config=config).id)


def _samples(root: Path) -> Path:
    lines = [json.dumps({"id": key, "user_message": f"question {key}", "assistant_response": reply, "score": truth})
             for key, (reply, truth) in TRUTH.items()]
    path = root / "samples.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def build_site(root: Path, llm: FakeLLM) -> Site:
    (root / "experiments").mkdir(parents=True)
    (root / "experiments" / "sweep.cobalt.py").write_text(SWEEP, encoding="utf-8")
    (root / "cobalt.toml").write_text(f'[judge]\nprovider = "openai"\nmodel = "gpt-4o-mini"\nbase_url = '
                                      f'"{llm.openai_url}"\nmax_retries = 1\ntimeout = 5\n\n[dagster]\n'
                                      'record = "off"\n', encoding="utf-8")
    config = load_config(root)
    site = Site(root=root, url="")
    from cobalt_lib.ops import RunOptions, Selection, run_experiments

    reports = run_experiments(config, Selection(), RunOptions(dagster=False)).reports
    site.group_id = str(reports[0].group_id)
    site.runs["variant"] = str(reports[0].id)
    site.runs["traced"] = str(experiment("weather", [{"input": f"weather in {c}"} for c in ("Paris", "Oslo")],
                                         async_agent(llm.openai_url)).run(config=config).id)
    site.runs["chat"] = _conversations(config)
    write_grader(root)
    samples = _samples(root)
    for name, policy in (("grading-a", "Be strict."), ("grading-b", "Be lenient.")):  # B: the rubric changed
        write_grader(root, policy)
        site.runs[name] = grade(config, GradeOptions(input=samples, grader=root / "graders" / "numbers.py",
                                                     models=["openai/agree", "openai/off"], dagster=False)).run_id
    site.runs["graded"] = _graded(config, root)
    site.runs["labelled-a"] = _labelled(config, "v1")
    for index, value in ((0, 1), (1, 1), (2, 1)):
        set_label(config, site.runs["labelled-a"], index, "exact", value, note="checked by hand", who="ben")
    site.runs["labelled-b"] = _labelled(config, "v2")
    return site


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory, _llm_server: FakeLLM) -> Iterator[Site]:
    _llm_server.reset()
    _llm_server.respond = _respond
    saved = os.environ.get("OPENAI_API_KEY")
    os.environ["OPENAI_API_KEY"] = KEY
    try:
        built = build_site(tmp_path_factory.mktemp("site") / "proj", _llm_server)
    finally:
        _llm_server.reset()
        if saved is None:
            os.environ.pop("OPENAI_API_KEY", None)
        else:
            os.environ["OPENAI_API_KEY"] = saved
    server = PagesServer(load_config(built.root))
    built.url = server.start()
    built.login_url = server.login_url
    yield built
    server.stop()
