"""One comment on a GitHub pull request, kept up to date: found by its hidden marker, created the first time,
edited in place after.

It reads what a workflow step has: `GITHUB_EVENT_PATH` (a `pull_request` or `pull_request_target`
event), `GITHUB_REPOSITORY`, `GITHUB_TOKEN` and `GITHUB_API_URL` (GitHub Enterprise, or a test's
loopback server). It speaks the REST endpoints for issue comments (a pull request is an issue there):
list (paginated by `Link: rel="next"`), create, update. Calls are retried as the judge's are (429,
5xx, `Retry-After`). The token goes in the Authorization header to the API's own host only, and never
into a message.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from pydantic import BaseModel

from .._aio import run_anywhere
from .._errors import CobaltError, ConfigError
from .._secrets import safe_url
from ..llm._retry import DEFAULT_TIMING, Failure, Timing, retry_after_seconds, retryable_status, retrying

#: The REST API version the calls are written against.
API_VERSION = "2022-11-28"
#: Comments listed per page (GitHub's maximum).
PER_PAGE = 100
#: Pages of comments read at most while looking for the marker (10,000 comments).
MAX_PAGES = 100


class GitHubError(CobaltError):
    """GitHub refused or failed a call about the pull request comment."""


class NotAPullRequest(ConfigError):
    """The workflow's event (a push, a schedule) is about no pull request."""


class PullRequest(BaseModel):
    """The pull request a workflow run is for, and where its API is."""

    repository: str
    number: int
    base_ref: str
    head_sha: str | None = None
    api_url: str = "https://api.github.com"
    #: The workflow run's page, a fallback link when there is no report artifact link.
    run_url: str | None = None


class PostedComment(BaseModel):
    """The comment as GitHub holds it after the call."""

    id: int
    created: bool
    url: str | None = None


def pull_request_from_env(env: Mapping[str, str] | None = None) -> PullRequest:
    """The pull request of the workflow run, from the event file and variables GitHub Actions sets."""
    env = os.environ if env is None else env
    event_path = env.get("GITHUB_EVENT_PATH")
    if not event_path:
        raise ConfigError("GITHUB_EVENT_PATH is not set: `cobalt ci comment` runs in a GitHub Actions step of a "
                          "workflow triggered by `pull_request`.")
    try:
        event = json.loads(Path(event_path).read_text(encoding="utf-8"))
    except OSError as exc:
        raise ConfigError(f"Cannot read the event file GITHUB_EVENT_PATH={event_path}: "
                          f"{exc.strerror or exc}.") from None
    except ValueError as exc:
        raise ConfigError(f"The event file GITHUB_EVENT_PATH={event_path} is not JSON ({exc}).") from None
    pr = event.get("pull_request") if isinstance(event, dict) else None
    if not isinstance(pr, dict) or not isinstance(pr.get("number"), int):
        name = env.get("GITHUB_EVENT_NAME")
        raise NotAPullRequest(f"{f'The {name} event' if name else 'This workflow event'} is not about a pull request "
                              f"(its event file {event_path} has no `pull_request.number`), so there is no pull "
                              "request to comment on; run `cobalt ci comment` on `pull_request` events only (`if: "
                              "github.event_name == 'pull_request'`), or add --dry-run to print the comment instead.")
    repository = env.get("GITHUB_REPOSITORY", "")
    if repository.count("/") != 1 or not all(repository.split("/")):
        raise ConfigError(f"GITHUB_REPOSITORY={repository!r} is not `owner/name`; GitHub Actions sets it.")
    api_url = (env.get("GITHUB_API_URL") or "https://api.github.com").rstrip("/")
    if urlsplit(api_url).scheme not in ("http", "https"):
        raise ConfigError(f"GITHUB_API_URL={safe_url(api_url)} is not an http(s) URL.")
    server, run_id = env.get("GITHUB_SERVER_URL"), env.get("GITHUB_RUN_ID")
    base, head = (side if isinstance(side := pr.get(key), dict) else {} for key in ("base", "head"))
    run_url = f"{server.rstrip('/')}/{repository}/actions/runs/{run_id}" if server and run_id else None
    return PullRequest(repository=repository, number=pr["number"], base_ref=str(base.get("ref") or ""),
                       head_sha=head.get("sha"), api_url=api_url, run_url=run_url)


def github_token(env: Mapping[str, str] | None = None) -> str:
    """The token from GITHUB_TOKEN; a missing one says how to pass it."""
    token = (os.environ if env is None else env).get("GITHUB_TOKEN", "").strip()
    if not token:
        raise ConfigError("GITHUB_TOKEN is not set; give the step `env: GITHUB_TOKEN: ${{ github.token }}` and the "
                          "workflow `permissions: pull-requests: write`.")
    return token


def upsert_comment(pr: PullRequest, token: str, marker: str, body: str, *, timing: Timing = DEFAULT_TIMING,
                   timeout: float = 30.0) -> PostedComment:
    """Edit the pull request's comment whose body starts with `marker`, or create it (`body` starts with it)."""
    return run_anywhere(aupsert_comment(pr, token, marker, body, timing=timing, timeout=timeout))


async def aupsert_comment(pr: PullRequest, token: str, marker: str, body: str, *, timing: Timing = DEFAULT_TIMING,
                          timeout: float = 30.0) -> PostedComment:
    import httpx

    if not body.startswith(marker):
        raise ValueError("the comment body must start with its marker, or it could not be found again")
    headers = {"Authorization": f"Bearer {token}", "Accept": "application/vnd.github+json",
               "X-GitHub-Api-Version": API_VERSION, "User-Agent": "cobalt-evals"}
    async with httpx.AsyncClient(headers=headers, timeout=timeout) as client:
        api = _Api(client, pr, timing)
        found = await api.find(marker)
        if found is None:
            answer = await api.call("POST", f"/repos/{pr.repository}/issues/{pr.number}/comments",
                                    "creating the comment", {"body": body})
            return PostedComment(id=int(answer["id"]), created=True, url=answer.get("html_url"))
        answer = await api.call("PATCH", f"/repos/{pr.repository}/issues/comments/{found}", "updating the comment",
                                {"body": body})
        return PostedComment(id=int(answer["id"]), created=False, url=answer.get("html_url"))


class _Attempt(Failure):
    def __init__(self, problem: str, *, retryable: bool, retry_after: float | None = None,
                 unreachable: bool = False) -> None:
        super().__init__(problem)
        self.retryable, self.retry_after, self.unreachable = retryable, retry_after, unreachable


class _Api:
    """The calls, on one client, each retried; the token only ever goes to the API's host."""

    def __init__(self, client: Any, pr: PullRequest, timing: Timing) -> None:
        self.client, self.pr, self.timing = client, pr, timing
        self.origin = _origin(pr.api_url)

    async def find(self, marker: str) -> int | None:
        """The id of the first comment whose body starts with `marker`, reading every page of comments."""
        url: str | None = f"{self.pr.api_url}/repos/{self.pr.repository}/issues/{self.pr.number}/comments" \
                          f"?per_page={PER_PAGE}"
        for _ in range(MAX_PAGES):
            if url is None:
                return None
            page, url = await self._page(url)
            for comment in page:
                if isinstance(comment, dict) and str(comment.get("body") or "").lstrip().startswith(marker):
                    return int(comment["id"])
        return None

    async def _page(self, url: str) -> tuple[list[Any], str | None]:
        response = await self._send("GET", url, "listing the pull request's comments", None)
        page = response.json()
        if not isinstance(page, list):
            raise GitHubError(f"GitHub answered the list of comments of {self.pr.repository}#{self.pr.number} with "
                              "something other than a list; is GITHUB_API_URL the REST API's address?")
        following = response.links.get("next", {}).get("url")
        if following and _origin(following) != self.origin:  # never send the token to another host
            raise GitHubError(f"GitHub's next page of comments is on another host ({safe_url(following)}); "
                              "cobalt sends the token to GITHUB_API_URL's host only.")
        return page, following

    async def call(self, method: str, path: str, what: str, payload: dict[str, Any]) -> dict[str, Any]:
        response = await self._send(method, self.pr.api_url + path, what, payload)
        answer = response.json()
        if not isinstance(answer, dict) or "id" not in answer:
            raise GitHubError(f"GitHub's answer to {what} on {self.pr.repository}#{self.pr.number} has no comment id.")
        return answer

    async def _send(self, method: str, url: str, what: str, payload: dict[str, Any] | None) -> Any:
        import httpx

        async def attempt(deadline: float) -> Any:
            try:
                response = await self.client.request(method, url, json=payload)
            except httpx.HTTPError as exc:
                said = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
                raise _Attempt(f"Cannot reach GitHub's API at {safe_url(self.pr.api_url)} ({said})", retryable=True,
                               unreachable=True) from None
            status = response.status_code
            if status < 300:
                return response
            retryable = status in (403, 429) and response.headers.get("retry-after") is not None
            retryable = retryable or (status != 403 and retryable_status(status, response.headers))
            raise _Attempt(_problem(response, what, self.pr), retryable=retryable,
                           retry_after=retry_after_seconds(response.headers))

        try:
            return await retrying(attempt, retries=3, budget=120.0, budget_name="the comment's calls",
                                  timing=self.timing)
        except _Attempt as exc:
            if exc.unreachable:
                raise GitHubError(f"{exc}; check the runner's network (and GITHUB_API_URL, if this is GitHub "
                                  "Enterprise), then run the step again.") from None
            raise GitHubError(str(exc)) from None


def _origin(url: str) -> tuple[str, str, int | None]:
    parts = urlsplit(url)
    return parts.scheme, (parts.hostname or "").lower(), parts.port


def _problem(response: Any, what: str, pr: PullRequest) -> str:
    """GitHub's refusal in one sentence, with what usually fixes it."""
    try:
        said = response.json().get("message")
    except (ValueError, AttributeError):
        said = None
    status = response.status_code
    head = f"GitHub answered HTTP {status} to {what} on {pr.repository}#{pr.number}" + (f": {said}" if said else "")
    hint = {401: "the token was refused; pass `${{ github.token }}` (or a valid token) as GITHUB_TOKEN",
            403: "the token may not write to pull requests; give the workflow `permissions: pull-requests: write` "
                 "(a pull request from a fork gets a read-only token)",
            404: "check GITHUB_REPOSITORY and the pull request number, and that the token can see the repository"}
    return head + (f"; {hint[status]}." if status in hint else ".")
