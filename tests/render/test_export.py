"""Export renderers over a real run (the CLI's `export` is tested in test_cli_manage.py)."""

from __future__ import annotations

from pathlib import Path

from cobalt_lib import Dataset, Evaluator, experiment
from cobalt_lib.render._export import to_markdown


def test_markdown_of_a_run_with_repeats_has_each_items_spread_and_passes(project: Path) -> None:
    def flaky(ctx):  # item 0 answers right in runs 0 and 2 only
        return ctx.item["expected_output"] if ctx.index or ctx.run_index != 1 else "wrong"

    data = Dataset([{"input": "a", "expected_output": "a"}, {"input": "b", "expected_output": "b"}])
    report = experiment("repeats", data, flaky, runs=3, evaluators=[Evaluator(name="exact", type="exact-match")]).run()
    text = to_markdown(report)
    section = text.split("#### Per item across runs (mean ± stddev)\n\n", 1)[1].split("\n\n", 1)[0]
    assert section.splitlines() == ["| # | runs | exact |", "|---|---|---|",
                                    "| 0 | 3 | 0.667 ± 0.471 · 2/3 passed |", "| 1 | 3 | 1.000 ± 0.000 · 3/3 passed |"]
    once = experiment("once", data, flaky, evaluators=[Evaluator(name="exact", type="exact-match")]).run()
    assert "Per item across runs" not in to_markdown(once)


def test_results_and_cache_files_get_the_usual_permissions(project: Path) -> None:
    import os

    mask = os.umask(0o022)
    os.umask(mask)
    report = experiment("perm", Dataset([{"input": "a", "expected_output": "a"}]), lambda ctx: "a",
                        evaluators=[Evaluator(name="exact", type="exact-match")]).run()
    assert Path(report.results_path or "").stat().st_mode & 0o777 == 0o666 & ~mask  # not mkstemp's 0o600
    from cobalt_lib.llm._cache import ResponseCache

    cache = ResponseCache(project / "cache", ttl_seconds=60)
    cache.put("k" * 64, {"score": 1.0})
    [entry] = [p for p in (project / "cache").rglob("*") if p.is_file()]
    assert entry.stat().st_mode & 0o777 == 0o666 & ~mask
