"""`cobalt ci comment` against a loopback GitHub: one comment, created on the first push and edited after, with
each run's gates, its deltas against the base branch's newest passing run, the regressed items and cost."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from github_world import PULL, REPOSITORY, TOKEN, Hub, event_file, github

from cobalt_lib import load_config
from cobalt_lib.ci._pull_request import pull_request_from_env, upsert_comment
from cobalt_lib.cli import main
from cobalt_lib.llm._retry import Timing
from cobalt_lib.ops import RunOptions, Selection, run_experiments
from cobalt_lib.pages._report import compare_report_html

#: `qa`: 12 items with ids; the items listed in BROKEN answer wrong, and the judge-like function says why.
QA = '''
import os
from cobalt_lib import Dataset, Evaluator, experiment, threshold

BROKEN = {int(i) for i in os.environ.get("BROKEN", "").split(",") if i}
COUNT = int(os.environ.get("COUNT", "12"))


def correct(ctx):
    ok = ctx.output == ctx.expected_output
    return {"score": 1.0 if ok else 0.0,
            "reason": "matches" if ok else f"said {ctx.output!r} | expected {ctx.expected_output!r} @team"}


def agent(ctx):
    if str(ctx.index) == os.environ.get("RAISE"):
        raise RuntimeError("the tool timed out")
    return "no idea" if ctx.index in BROKEN else ctx.item["expected_output"]


items = [{"id": f"q{i}", "input": f"question {i}", "expected_output": f"answer {i}"} for i in range(COUNT)]
experiment("qa", Dataset(items), agent, evaluators=[Evaluator(name="correct", type="function", fn=correct)],
           assertions=[threshold("correct", 0.5)])
'''


@pytest.fixture
def ci_project(project: Path) -> Path:
    (project / "experiments").mkdir()
    (project / "experiments" / "qa.cobalt.py").write_text(QA, encoding="utf-8")
    return project


def run_qa(monkeypatch: pytest.MonkeyPatch, *tags: str, broken: str = "", count: int = 12) -> str:
    monkeypatch.setenv("BROKEN", broken)
    monkeypatch.setenv("COUNT", str(count))
    outcome = run_experiments(load_config(), Selection(), RunOptions(add_tags=list(tags), dagster=False))
    return outcome.reports[0].id


def in_pull_request(monkeypatch: pytest.MonkeyPatch, hub: Hub, root: Path, *, token: str | None = TOKEN) -> None:
    monkeypatch.setenv("GITHUB_EVENT_PATH", str(event_file(root.parent)))
    monkeypatch.setenv("GITHUB_EVENT_NAME", "pull_request")
    monkeypatch.setenv("GITHUB_REPOSITORY", REPOSITORY)
    monkeypatch.setenv("GITHUB_API_URL", hub.url)
    if token is not None:
        monkeypatch.setenv("GITHUB_TOKEN", token)
    else:
        monkeypatch.delenv("GITHUB_TOKEN", raising=False)


def cobalt(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as exited:
        main(list(args))
    out, err = capsys.readouterr()
    return int(exited.value.code or 0), out, err


def test_the_first_push_creates_the_comment_and_the_next_updates_the_same_one(
        ci_project: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    baseline = run_qa(monkeypatch, "branch:main")
    run_qa(monkeypatch, "branch:main", broken="0,1,2,3,4,5,6,7,8")  # failed its gate: never a baseline
    first = run_qa(monkeypatch, "ci:1", broken="0,1,2,3,4,5")
    with github() as hub:
        in_pull_request(monkeypatch, hub, ci_project)
        code, out, err = cobalt(capsys, "ci", "comment", "--tag", "ci:1", "--report-url", "https://example.test/a/1",
                                "--json")
        assert code == 0, err
        posted = json.loads(out)
        assert posted["created"] is True and posted["regressions"] == {"qa": ["regressed: correct"]}
        [mine] = [c for c in hub.comments if c["id"] == posted["id"]]
        body = mine["body"]
        assert body.startswith("<!-- cobalt:pr-comment -->\n")
        assert f"run `{first}`" in body and f"baseline run `{baseline}`" in body
        assert "| ✅ | correct &gt;= 0.5 | correct = 0.5, must be at least 0.5 |" in body
        assert "| correct | 1.000 | 0.500 | -0.500 | [-0." in body and "| 12 | 🔻 regressed |" in body
        rows = [line for line in body.splitlines() if line.startswith("| q")]
        assert [row.split(" | ")[0] for row in rows] == ["| q0", "| q1", "| q2", "| q3", "| q4", "| q5"]
        # The reason as the evaluator gave it, its pipe escaped and its mention defused.
        assert ("| q0 | correct | 1.000 | 0.000 | said 'no idea' \\| expected 'answer 0' @\u200bteam |" in rows)
        assert "**Cost:**" in body and "[HTML report](https://example.test/a/1)" in body
        assert "commit `bbbbbbbbbbbb`" in body and "newest run on `main` that passed its gates" in body

        second = run_qa(monkeypatch, "ci:2", broken="0,1,2,3,4,5,6,7")
        code, out, err = cobalt(capsys, "ci", "comment", "--tag", "ci:2", "--fail-on-regression")
        assert code == 1 and "qa: regressed: correct (--fail-on-regression)" in err
        assert out == f"updated the cobalt comment on {REPOSITORY}#{PULL}: {mine['html_url']}\n"
        assert [c["id"] for c in hub.comments].count(posted["id"]) == 1 and len(hub.comments) == 6
        body = mine["body"]  # the same comment, edited
        assert f"run `{second}`" in body and f"run `{first}`" not in body
        assert "| ❌ | correct &gt;= 0.5 | correct = 0.3333, must be at least 0.5 |" in body
        assert "## ❌ cobalt evals: 1 experiment run; 1 failed a gate (qa)" in body
    methods = [(r["method"], r["path"]) for r in hub.requests]
    listing = f"/repos/{REPOSITORY}/issues/{PULL}/comments"
    # Every page read the first time (no marker yet), then the comment found on the third page and edited.
    assert methods[:4] == [("GET", f"{listing}?per_page=100"), ("GET", f"{listing}?per_page=2&page=2"),
                           ("GET", f"{listing}?per_page=2&page=3"), ("POST", listing)]
    assert methods[-1] == ("PATCH", f"/repos/{REPOSITORY}/issues/comments/{posted['id']}")
    assert {r["authorization"] for r in hub.requests} == {f"Bearer {TOKEN}"}
    assert {r["api_version"] for r in hub.requests} == {"2022-11-28"}


def test_a_run_without_a_passing_baseline_says_so(
        ci_project: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    run_qa(monkeypatch, "ci:1")
    code, out, err = cobalt(capsys, "ci", "comment", "--tag", "ci:1", "--baseline-tag", "branch:main", "--dry-run")
    assert code == 0, err
    assert "no baseline: no run tagged `branch:main` has completed and passed its gates yet" in out
    assert "## ✅ cobalt evals: 1 experiment run; every gate passed" in out
    code, named, _ = cobalt(capsys, "ci", "comment", "--run", "latest", "--baseline-tag", "branch:main", "--dry-run")
    assert code == 0 and named == out  # the same run, named rather than found by its tag
    code, _, err = cobalt(capsys, "ci", "comment", "--tag", "ci:1", "--run", "latest", "--dry-run",
                          "--baseline-tag", "branch:main")
    assert code == 2 and "Say which runs to comment on: --tag TAG" in err
    code, _, err = cobalt(capsys, "ci", "comment", "--tag", "ci:9", "--baseline-tag", "branch:main", "--dry-run")
    assert code == 2 and "No stored run carries the tag 'ci:9'; run the experiments with" in err
    code, _, err = cobalt(capsys, "ci", "comment", "--tag", "ci:1", "--dry-run")
    assert code == 2 and "Give --baseline-tag TAG" in err


def test_items_of_the_baseline_missing_from_the_run_are_named_and_fail_the_regression_check(
        ci_project: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    base = run_qa(monkeypatch, "branch:main")
    shorter = run_qa(monkeypatch, "ci:1", count=10)
    args = ("ci", "comment", "--tag", "ci:1", "--baseline-tag", "branch:main", "--dry-run", "--fail-on-regression")
    code, out, err = cobalt(capsys, *args)
    assert code == 1
    assert "2 items of the baseline are missing from run B: q10, q11" in out
    assert "the dataset changed (12 -> 10 items): its means are over different items" in err
    code, out, err = cobalt(capsys, *args, "--accept-identity-change")
    assert code == 0 and "2 items of the baseline are missing from run B: q10, q11" in out  # still said
    html = compare_report_html(load_config(), base, shorter)  # and the compare page says it too
    assert '<p class="warning" id="missing">2 items of the baseline are missing from B: q10, q11</p>' in html


def test_outside_a_pull_request_or_without_a_token_it_says_what_to_do(
        ci_project: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    run_qa(monkeypatch, "ci:1")
    with github() as hub:
        in_pull_request(monkeypatch, hub, ci_project, token=None)
        code, _, err = cobalt(capsys, "ci", "comment", "--tag", "ci:1")
        assert code == 2 and "GITHUB_TOKEN is not set; give the step `env: GITHUB_TOKEN: ${{ github.token }}`" in err
        monkeypatch.setenv("GITHUB_TOKEN", TOKEN)
        push = event_file(ci_project.parent, pull_request=False)
        monkeypatch.setenv("GITHUB_EVENT_NAME", "push")
        monkeypatch.setenv("GITHUB_EVENT_PATH", str(push))
        code, _, err = cobalt(capsys, "ci", "comment", "--tag", "ci:1")
        assert code == 2 and err.strip() == (
            f"error: The push event is not about a pull request (its event file {push} has no `pull_request.number`), "
            "so there is no pull request to comment on; run `cobalt ci comment` on `pull_request` events only (`if: "
            "github.event_name == 'pull_request'`), or add --dry-run to print the comment instead.")
        monkeypatch.delenv("GITHUB_EVENT_NAME")
        code, _, err = cobalt(capsys, "ci", "comment", "--tag", "ci:1")
        assert code == 2 and err.startswith("error: This workflow event is not about a pull request (its event file")
        monkeypatch.delenv("GITHUB_EVENT_PATH")
        code, _, err = cobalt(capsys, "ci", "comment", "--tag", "ci:1")
        assert code == 2 and "GITHUB_EVENT_PATH is not set" in err
        assert hub.requests == []


def test_dry_run_reads_a_set_event_for_the_base_branch_and_commit(
        ci_project: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    run_qa(monkeypatch, "branch:main")
    run_qa(monkeypatch, "ci:1", broken="0")
    with github() as hub:
        in_pull_request(monkeypatch, hub, ci_project, token=None)  # a dry run needs no token
        code, out, err = cobalt(capsys, "ci", "comment", "--tag", "ci:1", "--dry-run")
        assert code == 0, err
        assert hub.requests == []  # printed, not posted
    # the base branch (so no --baseline-tag is needed) and the head commit come from the event file
    assert f"commit `{'b' * 12}` · baseline: the newest run on `main` that passed its gates" in out
    assert "baseline run `" in out


def test_github_unreachable_is_one_sentence_saying_what_to_check(
        ci_project: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    import socket

    run_qa(monkeypatch, "ci:1")
    with socket.socket() as sock:  # a port nothing listens on once closed
        sock.bind(("127.0.0.1", 0))
        closed = f"http://127.0.0.1:{sock.getsockname()[1]}"
    with github() as hub:
        in_pull_request(monkeypatch, hub, ci_project)
    monkeypatch.setenv("GITHUB_API_URL", closed)
    code, out, err = cobalt(capsys, "ci", "comment", "--tag", "ci:1", "--baseline-tag", "branch:main")
    assert code == 2 and out == ""
    [line] = err.strip().splitlines()
    assert line.startswith(f"error: Cannot reach GitHub's API at {closed} (ConnectError")
    assert line.endswith("(gave up after 4 attempts); check the runner's network (and GITHUB_API_URL, if this is "
                         "GitHub Enterprise), then run the step again.")
    assert TOKEN not in err


def test_github_refusing_the_call_is_one_sentence_without_the_token(
        ci_project: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    run_qa(monkeypatch, "ci:1")
    with github() as hub:
        in_pull_request(monkeypatch, hub, ci_project)
        hub.refusals.append((403, {"message": "Resource not accessible by integration"}))
        code, out, err = cobalt(capsys, "ci", "comment", "--tag", "ci:1", "--baseline-tag", "branch:main")
        assert code == 2 and out == ""
        assert err.strip() == (f"error: GitHub answered HTTP 403 to listing the pull request's comments on "
                               f"{REPOSITORY}#{PULL}: Resource not accessible by integration; the token may not write "
                               "to pull requests; give the workflow `permissions: pull-requests: write` (a pull "
                               "request from a fork gets a read-only token).")
        assert TOKEN not in out + err and len(hub.requests) == 1  # a refusal is not retried
        hub.refusals.append((502, {"message": "Bad Gateway"}))  # a server error is retried, then goes through
        pr = pull_request_from_env()
        posted = upsert_comment(pr, TOKEN, "<!-- m -->", "<!-- m -->\nhello", timing=Timing(backoff=lambda n: 0.0))
        assert posted.created and [c["body"] for c in hub.comments][-1] == "<!-- m -->\nhello"
        assert [r["method"] for r in hub.requests[1:]] == ["GET", "GET", "GET", "GET", "POST"]


def test_a_token_the_api_echoes_back_is_never_printed(
        ci_project: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    import base64
    from urllib.parse import quote

    run_qa(monkeypatch, "ci:1")
    encoded = base64.b64encode(TOKEN.encode()).decode()
    with github() as hub:
        in_pull_request(monkeypatch, hub, ci_project)
        hub.refusals.append((401, {"message": f"Bad credentials: {TOKEN} (Authorization: token {TOKEN}, as sent: "
                                              f"{quote(TOKEN)}, {encoded})"}))
        code, out, err = cobalt(capsys, "ci", "comment", "--tag", "ci:1", "--baseline-tag", "branch:main")
    assert code == 2 and "GitHub answered HTTP 401" in err and "Bad credentials: ***" in err, err
    assert [s for s in (TOKEN, encoded) if s in out + err] == []


def test_an_item_whose_agent_call_failed_is_listed_with_its_error(
        ci_project: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    run_qa(monkeypatch, "branch:main")
    monkeypatch.setenv("RAISE", "3")
    run_qa(monkeypatch, "ci:1")
    code, out, err = cobalt(capsys, "ci", "comment", "--tag", "ci:1", "--baseline-tag", "branch:main", "--dry-run")
    assert code == 0, err
    assert "| q3 | (agent) | ok | error | RuntimeError: the tool timed out |" in out
    assert "| ❌ | error rate &lt;= 0% | error rate 4.3% (1 of 23 attempts)" in out
