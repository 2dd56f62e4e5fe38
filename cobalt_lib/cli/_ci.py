"""`cobalt ci comment`: keep one comment on the pull request with the CI job's runs against their baseline."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Annotated

import typer

from ._app import Group, _App, app
from ._common import print_json, project_config, warn

if TYPE_CHECKING:
    from ..ci._pull_request import PullRequest

ci_app = _App(name="ci", help="Commands for CI jobs: the pull request comment.", cls=Group, no_args_is_help=True,
              rich_markup_mode="markdown")
app.add_typer(ci_app, name="ci")


@ci_app.command()
def comment(
    tag: Annotated[str | None, typer.Option(
        "--tag", metavar="TAG", help="Comment on the newest run of each experiment carrying this tag (what "
        "`cobalt run --add-tag TAG` gave this job's runs).")] = None,
    run: Annotated[list[str] | None, typer.Option(
        "--run", metavar="RUN", help="Comment on this run (an id, a prefix or `latest`); repeat for several.")] = None,
    baseline_tag: Annotated[str | None, typer.Option(
        "--baseline-tag", metavar="TAG", help="Baselines are the newest runs carrying this tag that completed and "
        "passed their gates (default: `branch:<the pull request's base branch>`).")] = None,
    report_url: Annotated[str | None, typer.Option(
        "--report-url", metavar="URL", help="Link to the HTML report (the uploaded artifact's URL; default: the "
        "workflow run's page).")] = None,
    comment_key: Annotated[str | None, typer.Option(
        "--comment-key", metavar="KEY", help="Keep a separate comment per KEY (several workflows on one pull "
        "request).")] = None,
    fail_on_regression: Annotated[bool, typer.Option(
        "--fail-on-regression", help="Exit 1 after commenting when a run regressed against its baseline: an "
        "evaluator's verdict is regressed, scores were lost to errors, the baseline was measured differently or "
        "items of it are missing.")] = False,
    accept_identity_change: Annotated[bool, typer.Option(
        "--accept-identity-change", help="Compare with a baseline measured differently (dataset, judge prompt or "
        "model, evaluator options) all the same; the differences are still listed.")] = False,
    dry_run: Annotated[bool, typer.Option(
        "--dry-run", help="Print the comment's Markdown instead of posting it (needs no token; a pull request event in "
        "GITHUB_EVENT_PATH still gives its base branch, commit and link).")] = False,
    json_output: Annotated[bool, typer.Option("--json", help="Print what was posted as JSON.")] = False,
) -> None:
    """Create or update the pull request's one cobalt comment: each run's gates, its deltas against the
    baseline with their paired interval and verdict, regressed items with reasons, cost, and what was
    measured differently.

    Reads GITHUB_EVENT_PATH (a `pull_request` event), GITHUB_REPOSITORY, GITHUB_TOKEN and GITHUB_API_URL.

    Example: `cobalt ci comment --tag ci:$GITHUB_RUN_ID --report-url "$ARTIFACT_URL" --fail-on-regression`

    Exit codes: 0 posted, 1 a regression with --fail-on-regression (after posting), 2 bad usage, not a
    pull request event, no token, or GitHub refused the call.
    """
    from ..ci._pull_request import github_token, pull_request_from_env, upsert_comment
    from ..ops._pr_comment import pr_comment

    config = project_config()
    pr = _dry_run_pull_request() if dry_run else pull_request_from_env()
    token = None if dry_run else github_token()  # checked before any work: a missing token is said at once
    base = baseline_tag or (f"branch:{pr.base_ref}" if pr is not None and pr.base_ref else None)
    if base is None:
        from .._errors import ConfigError

        raise ConfigError("Give --baseline-tag TAG: without a pull request event there is no base branch to "
                          "default to.")
    outcome = pr_comment(config, baseline_tag=base, tag=tag, runs=run, commit=pr.head_sha if pr else None,
                         report_url=report_url or (pr.run_url if pr else None),
                         baseline_branch=base.removeprefix("branch:") if base.startswith("branch:") else None,
                         accept_identity_change=accept_identity_change, comment_key=comment_key)
    warn(outcome.warnings)
    if pr is None or token is None:
        sys.stdout.write(outcome.body)
    else:
        posted = upsert_comment(pr, token, outcome.marker, outcome.body)
        if json_output:
            print_json({**posted.model_dump(), "runs": outcome.runs, "regressions": outcome.regressions,
                        "failed": outcome.failed})
        else:
            verb = "created" if posted.created else "updated"
            where = f"{pr.repository}#{pr.number}" + (f": {posted.url}" if posted.url else "")
            print(f"{verb} the cobalt comment on {where}")
    if fail_on_regression and outcome.regressions:
        for name, reasons in outcome.regressions.items():
            print(f"{name}: {'; '.join(reasons)} (--fail-on-regression)", file=sys.stderr)
        raise typer.Exit(1)


def _dry_run_pull_request() -> PullRequest | None:
    """With --dry-run, the pull request of a set GITHUB_EVENT_PATH still gives the comment its base branch, commit
    and link (an event about no pull request, or none set, gives none)."""
    import os

    from ..ci._pull_request import NotAPullRequest, pull_request_from_env

    if not os.environ.get("GITHUB_EVENT_PATH"):
        return None
    try:
        return pull_request_from_env()
    except NotAPullRequest:
        return None
