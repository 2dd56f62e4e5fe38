"""The judge cache: zero calls on a re-run, TTL, errors never cached, safe across processes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from conftest import TEST_KEY
from fakellm import FakeLLM, score_from_prompt

from cobalt_lib import Dataset, Evaluator, experiment, load_config
from cobalt_lib.llm._cache import ResponseCache, cache_key


def _experiment(n: int, start: int = 0):
    data = Dataset([{"input": f"q{i}", "score": f"0.{i % 10}"} for i in range(start, start + n)])
    return experiment("cached", data, lambda ctx: f"answer {ctx.item['input']}",
                      evaluators=[Evaluator(name="quality", prompt="SCORE={{score}} {{input}} -> {{output}}")],
                      concurrency=8)


def test_rerun_with_unchanged_outputs_makes_zero_judge_calls(judged_project: Path, llm: FakeLLM) -> None:
    llm.respond = score_from_prompt
    first = _experiment(20).run(config=load_config())
    assert llm.count("chat") == 20 and first.summary.cached_scores == 0
    second = _experiment(20).run(config=load_config())
    assert llm.count("chat") == 20
    assert second.summary.cached_scores == 20 and second.summary.judge_calls == 0
    assert all(i.evaluations["quality"].cached for i in second.items)
    assert [i.evaluations["quality"].score for i in second.items] == [i.evaluations["quality"].score
                                                                      for i in first.items]
    assert second.summary.judge_cost == 0.0


def test_changed_output_misses_the_cache(judged_project: Path, llm: FakeLLM) -> None:
    _experiment(3).run(config=load_config())
    exp = experiment("cached", Dataset([{"input": f"q{i}", "score": "0.1"} for i in range(3)]),
                     lambda ctx: "a different answer",
                     evaluators=[Evaluator(name="quality", prompt="SCORE={{score}} {{input}} -> {{output}}")])
    exp.run(config=load_config())
    assert llm.count("chat") == 6


def test_expired_entries_are_fetched_again(judged_project: Path, llm: FakeLLM) -> None:
    with (judged_project / "cobalt.toml").open("a") as fh:
        fh.write('[cache]\nttl = "0s"\n')
    _experiment(3).run(config=load_config())
    _experiment(3).run(config=load_config())
    assert llm.count("chat") == 6


def test_disabled_cache_always_calls(judged_project: Path, llm: FakeLLM) -> None:
    with (judged_project / "cobalt.toml").open("a") as fh:
        fh.write("[cache]\nenabled = false\n")
    _experiment(2).run(config=load_config())
    _experiment(2).run(config=load_config())
    assert llm.count("chat") == 4
    assert not (judged_project / ".cobalt" / "cache").exists()


def test_eval_errors_are_never_cached(judged_project: Path, llm: FakeLLM) -> None:
    llm.respond = score_from_prompt
    exp = lambda: experiment("errs", Dataset([{"score": "bad"}]), lambda ctx: "x",  # noqa: E731
                             evaluators=[Evaluator(name="q", prompt="SCORE={{score}} {{output}}")])
    assert exp().run(config=load_config()).items[0].evaluations["q"].status == "eval-error"
    exp().run(config=load_config())
    assert llm.count("chat") == 4


def test_cache_files_hold_no_secret(judged_project: Path, llm: FakeLLM) -> None:
    _experiment(5).run(config=load_config())
    files = list((judged_project / ".cobalt").rglob("*"))
    assert any(f.suffix == ".json" for f in files)
    for path in files:
        if path.is_file():
            assert TEST_KEY.encode() not in path.read_bytes(), path


def test_key_depends_on_provider_model_prompt_and_parameters() -> None:
    base = cache_key("judge", "openai", "m", "prompt", {"temperature": 0})
    assert base == cache_key("judge", "openai", "m", "prompt", {"temperature": 0})
    others = {cache_key("judge", "anthropic", "m", "prompt", {"temperature": 0}),
              cache_key("judge", "openai", "m2", "prompt", {"temperature": 0}),
              cache_key("judge", "openai", "m", "prompt!", {"temperature": 0}),
              cache_key("judge", "openai", "m", "prompt", {"temperature": 1}),
              cache_key("judge", "openai", "m", "prompt", {"temperature": 0}, "http://127.0.0.1:8000/v1")}
    assert base not in others and len(others) == 5
    assert len(base) == 64


def test_a_torn_or_corrupt_entry_is_a_miss_and_gets_replaced(tmp_path: Path) -> None:
    cache = ResponseCache(tmp_path, ttl_seconds=3600)
    key = cache_key("judge", "openai", "m", "p", {})
    path = tmp_path / key[:2] / f"{key}.json"
    path.parent.mkdir(parents=True)
    path.write_text('{"created": 1e12, "value": {"score": 0.')  # what a crash mid-write would leave
    (path.parent / ".tmp-leftover.json").write_text("{")
    assert cache.get(key) is None
    cache.put(key, {"score": 0.5})
    assert cache.get(key) == {"score": 0.5}
    assert json.loads(path.read_text())["value"] == {"score": 0.5}


_WRITER = textwrap.dedent("""
    import sys
    from cobalt_lib import Dataset, Evaluator, experiment, load_config
    start, n = int(sys.argv[1]), int(sys.argv[2])
    data = Dataset([{"input": f"q{i}", "score": f"0.{i % 10}"} for i in range(start, start + n)])
    exp = experiment("cached", data, lambda ctx: f"answer {ctx.item['input']}",
                     evaluators=[Evaluator(name="quality", prompt="SCORE={{score}} {{input}} -> {{output}}")],
                     concurrency=16)
    report = exp.run(config=load_config())
    print(report.summary.scores["quality"].count)
""")


@pytest.mark.slow
def test_two_processes_writing_at_once_lose_nothing(judged_project: Path, llm: FakeLLM) -> None:
    llm.respond = score_from_prompt
    script = judged_project / "writer.py"
    script.write_text(_WRITER)
    env = {**os.environ, "OPENAI_API_KEY": TEST_KEY}
    procs = [subprocess.Popen([sys.executable, str(script), start, "60"], cwd=judged_project, env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for start in ("0", "30")]
    outputs = [p.communicate(timeout=120) for p in procs]
    for proc, (out, err) in zip(procs, outputs, strict=True):
        assert proc.returncode == 0, err
        assert out.strip() == "60"
    calls_before = llm.count("chat")
    assert 90 <= calls_before <= 120  # the 30 shared prompts may be judged by both processes
    report = _experiment(90).run(config=load_config())
    assert llm.count("chat") == calls_before
    assert report.summary.cached_scores == 90


@pytest.mark.parametrize("ttl", ["1h", 3600])
def test_ttl_accepts_durations(judged_project: Path, ttl: object) -> None:
    with (judged_project / "cobalt.toml").open("a") as fh:
        fh.write(f"[cache]\nttl = {json.dumps(ttl)}\n")
    assert load_config().cache.ttl_seconds == 3600
