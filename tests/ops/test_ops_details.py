"""`report_details`: a run sized for a model: failures kept first, the rest counted with a pointer."""

from __future__ import annotations

from pathlib import Path

import pytest

from cobalt_lib import ConfigError, load_config
from cobalt_lib.ops import generate_experiment, project_path, report_details
from cobalt_lib.results import Evaluation, ExperimentReport, ItemResult


def report(n: int, failing: set[int]) -> ExperimentReport:
    items = [ItemResult(index=i, output=f"o{i}", status="error" if i == 7 else "ok",
                        evaluations={} if i == 7 else {"exact": Evaluation(score=0.0 if i in failing else 1.0,
                                                                          passed=i not in failing)})
             for i in range(n)]
    return ExperimentReport(id="r1", name="big", timestamp="2026-01-01T00:00:00+00:00", items=items)


def test_a_large_run_keeps_its_failures_and_points_at_the_rest(project: Path) -> None:
    details = report_details(load_config(), report(250, {240, 3}), limit=200)
    indexes = [i.index for i in details.items]
    # the failures first, worst first (whatever their index), then the rest by index
    assert len(indexes) == 200 and indexes[:3] == [7, 3, 240]
    assert indexes[3:] == sorted(set(range(250)) - {3, 7, 240})[:197]
    assert details.failing_items == "3, 7, 240"
    assert details.items_total == 250 and details.failures_total == 3 and details.items_omitted == 50
    assert details.more is not None and "cobalt_results" in details.more and "run_id='r1'" in details.more
    worst = report_details(load_config(), report(250, {240, 3}), only_failures=True)
    assert [i.index for i in worst.items] == [7, 3, 240] and worst.items_omitted == 0 and worst.more is None


def test_failures_come_errors_first_then_eval_errors_then_by_margin_below_the_pass_mark(project: Path) -> None:
    scores = {0: 0.9, 1: 0.4, 2: 0.1, 3: 0.3, 4: 0.45}
    items = [ItemResult(index=i, evaluations={"exact": Evaluation(score=s, passed=s >= 0.5)})
             for i, s in scores.items()]
    items += [ItemResult(index=5, evaluations={"exact": Evaluation(status="eval-error", error="no JSON")}),
              ItemResult(index=6, status="timeout")]
    run = ExperimentReport(id="r2", name="m", timestamp="2026-01-01T00:00:00+00:00", items=items,
                           config={"evaluators": [{"name": "exact", "threshold": 0.5}]})
    details = report_details(load_config(), run)
    assert [i.index for i in details.items] == [6, 5, 2, 3, 1, 4, 0]
    assert details.failing_items == "1-6" and details.failures_total == 6


def test_paths_must_resolve_inside_the_project(project: Path, tmp_path: Path) -> None:
    config = load_config()
    (project / "agent.py").write_text("x = 1\n")
    (project / "out.py").symlink_to(tmp_path / "elsewhere.py")
    assert project_path(config, "agent.py", "agent file") == (project / "agent.py").resolve()
    assert project_path(config, str(project / "agent.py"), "agent file") == (project / "agent.py").resolve()
    for bad in ("../x.py", "/etc/hostname", "out.py"):
        with pytest.raises(ConfigError, match="outside the project"):
            project_path(config, bad, "output file")
    with pytest.raises(ConfigError, match="does not exist"):
        generate_experiment(config, "missing.py")
    with pytest.raises(ConfigError, match="dataset_size must be between 1 and 100"):
        generate_experiment(config, "agent.py", dataset_size=0)
