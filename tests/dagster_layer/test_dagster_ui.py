"""What the Dagster UI shows after a scripted session, asked over the GraphQL API of a real `cobalt serve`.

One session for the module (starting the webserver and daemon is the expensive part): two CLI runs of
the example's support bot (tags `v4 nightly`, then a broken one tagged `v4` whose gate fails), a run
the daemon starts for `cobalt request --add-tag requested`, and an experiment file added while serving.
Screenshots of the asset's Partitions tab and of the failed run go to test-screenshots/.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from browser import screenshot
from slowdown import deadline as deadline_in
from test_dagster_serve import EXAMPLE, descendants, free_port, poll, still_running

# The module fixture starts `cobalt serve` and waits for the daemon's runs: minutes on a loaded machine.
pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]

COBALT = str(Path(sys.executable).parent / "cobalt")
LOCATION = {"repositoryName": "__repository__", "repositoryLocationName": "definitions.py"}
#: An experiment file added while serving; its one item fails its gate (launched from the asset graph below).
LATE = '''from cobalt_lib import Dataset, Evaluator, experiment, threshold

@experiment("late-bot", Dataset([{"input": "hi", "expected_output": "bye"}]),
            evaluators=[Evaluator(name="exact", type="exact-match")], assertions=[threshold("exact", 0.75)])
def late_bot(ctx):
    return ctx.input
'''


@dataclass
class Session:
    url: str
    root: Path
    runs: dict[str, str]  # name -> cobalt run id: passing, failing, requested

    def query(self, text: str, **variables: Any) -> dict[str, Any]:
        response = httpx.post(f"{self.url}/graphql", json={"query": text, "variables": variables}, timeout=30)
        body = response.json()
        assert "errors" not in body, body["errors"]
        return dict(body["data"])

    def runs_with(self, key: str, value: str) -> dict[str, dict[str, str]]:
        """cobalt run id -> tags of every Dagster run carrying the tag `key: value`."""
        data = self.query("""query($key: String!, $value: String!) {
            runsOrError(filter: {tags: [{key: $key, value: $value}]}) { ... on Runs { results {
              runId tags { key value } } } } }""", key=key, value=value)
        found = {}
        for run in data["runsOrError"]["results"]:
            tags = {t["key"]: t["value"] for t in run["tags"]}
            found[tags["dagster/partition"]] = tags | {"dagster_run_id": run["runId"]}
        return found


def _cli_runs(root: Path, which: tuple[tuple[str, list[str], bool], ...]) -> dict[str, str]:
    """The CLI's runs, in process through the ops layer `cobalt run` calls (as fast as can be), with the
    default `[dagster] record = "daemon"`: the daemon's record sensor records them."""
    from cobalt_lib import load_config
    from cobalt_lib.ops import RunOptions, Selection, run_experiments

    config = load_config(root)
    selection = Selection(files=[root / "experiments" / "support_bot.cobalt.py"])
    runs = {}
    for name, tags, broken in which:
        os.environ["SUPPORT_BOT_BROKEN"] = "1" if broken else "0"
        try:
            [report] = run_experiments(config, selection, RunOptions(add_tags=tags)).reports
        finally:
            del os.environ["SUPPORT_BOT_BROKEN"]
        assert report.passed is not broken
        runs[name] = report.id
    return runs


@pytest.fixture(scope="module")
def session(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Session]:
    root = tmp_path_factory.mktemp("ui") / "proj"
    shutil.copytree(EXAMPLE, root, ignore=shutil.ignore_patterns(".cobalt", "__pycache__"))
    port = free_port()
    env = {k: v for k, v in os.environ.items() if k not in ("DAGSTER_HOME", "COBALT_PROJECT_DIR")}
    # Requested before serving: the request waits, and the daemon picks it up as it starts (what a user
    # without a running `cobalt serve` sees), which overlaps the run with the webserver's start.
    requested = subprocess.run([COBALT, "request", "support-bot", "--add-tag", "requested"], cwd=root, env=env,
                               capture_output=True, text=True, check=True)
    runs = {"requested": requested.stdout.split("(")[1].split(")")[0]}
    log = (root.parent / "serve.log").open("wb")
    proc = subprocess.Popen([COBALT, "serve", "--port", str(port), "--no-open"], cwd=root, env=env,
                            stdout=log, stderr=subprocess.STDOUT)
    seen: dict[int, str] = {}
    try:
        # Made before the daemon is up (it starts with the webserver): recorded when it starts.
        runs.update(_cli_runs(root, (("passing", ["v4", "nightly"], False), ("failing", ["v4"], True))))
        url = f"http://127.0.0.1:{port}"
        served = Session(url, root, runs)
        poll("the webserver", deadline_in(120), lambda: _answers(served) or proc.poll() is not None)
        assert proc.poll() is None, (root.parent / "serve.log").read_text(errors="replace")
        runs.update(_cli_runs(root, (("while_up", ["v5"], False),)))  # made while it is up
        (root / "experiments" / "late_bot.cobalt.py").write_text(LATE, encoding="utf-8")
        for name in runs:  # the daemon's requested run, and the record sensor's recordings
            poll(f"the Dagster run of {name}", deadline_in(120), lambda n=name: _finished(served, runs[n]),
                 interval=1.0)
        seen = descendants(proc.pid)
        yield served
    finally:
        seen = seen or descendants(proc.pid)
        if proc.poll() is None:  # stopping it gently is test_dagster_serve's business: kill, quicker
            proc.kill()
            proc.wait()
        for pid in still_running(seen):  # only what this module started
            os.kill(pid, 9)
        log.close()


def _answers(session: Session) -> bool:
    try:
        return bool(session.query("{ version }"))
    except (httpx.HTTPError, ValueError):
        return False


def _finished(session: Session, cobalt_run: str) -> bool:
    found = session.runs_with("dagster/partition", cobalt_run)
    statuses = [session.query("query($id: ID!) { runOrError(runId: $id) { ... on Run { status } } }",
                              id=tags["dagster_run_id"])["runOrError"]["status"] for tags in found.values()]
    return bool(statuses) and all(s in ("SUCCESS", "FAILURE") for s in statuses)


def test_every_run_is_under_its_job_and_in_the_timeline(session: Session) -> None:
    data = session.query("""query($params: PipelineSelector!) { pipelineOrError(params: $params) {
        ... on Pipeline { runs { tags { key value } } } } }""",
                         params={**LOCATION, "pipelineName": "support_bot_eval"})
    in_job = {t["value"] for run in data["pipelineOrError"]["runs"] for t in run["tags"]
              if t["key"] == "dagster/partition"}
    assert in_job == set(session.runs.values())  # the job's Runs tab: CLI runs and the daemon's

    timeline = session.query("""{ runsOrError { ... on Runs { results { pipelineName
        repositoryOrigin { repositoryName repositoryLocationName } tags { key value } } } } }""")
    for run in timeline["runsOrError"]["results"]:  # the Overview timeline groups runs by this origin
        assert run["repositoryOrigin"] == LOCATION, run
        assert {"key": "dagster/code_location", "value": "definitions.py"} in run["tags"]

    partitions = session.query("""query($repo: RepositorySelector!) {
        partitionSetOrError(repositorySelector: $repo, partitionSetName: "support_bot_eval_partition_set") {
          ... on PartitionSet { partitionStatusesOrError { ... on PartitionStatuses { results {
            partitionName runStatus } } } } } }""", repo=LOCATION)
    statuses = {r["partitionName"]: r["runStatus"]
                for r in partitions["partitionSetOrError"]["partitionStatusesOrError"]["results"]}
    runs = session.runs
    # the job's Partitions tab
    assert statuses == {runs["passing"]: "SUCCESS", runs["failing"]: "FAILURE", runs["requested"]: "SUCCESS",
                        runs["while_up"]: "SUCCESS"}


def test_cli_runs_are_recorded_once_each_and_the_store_knows_their_dagster_runs(session: Session) -> None:
    from cobalt_lib import Store, load_config

    runs = session.runs
    recorded = {name: session.runs_with("dagster/partition", run_id) for name, run_id in runs.items()}
    assert {name: len(found) for name, found in recorded.items()} == {name: 1 for name in runs}
    assert {name: found[runs[name]].get("cobalt/record") for name, found in recorded.items()} == {
        "requested": None, "passing": "true", "failing": "true", "while_up": "true"}  # requested: executed
    held = Store.for_config(load_config(session.root)).dagster_runs_of(list(runs.values()))
    assert held == {run_id: recorded[name][run_id]["dagster_run_id"] for name, run_id in runs.items()}


def test_each_partition_is_materialised_and_carries_its_gate_verdict(session: Session) -> None:
    data = session.query("""{ assetNodeOrError(assetKey: {path: ["support_bot", "aggregates"]}) { ... on AssetNode {
        assetPartitionStatuses { ... on DefaultPartitionStatuses { materializedPartitions } }
        assetChecksOrError { ... on AssetChecks { checks { name partitionStatuses {
          ... on AssetCheckDefaultPartitionStatuses { succeededPartitions failedPartitions } } } } } } } }""")
    node = data["assetNodeOrError"]
    runs = session.runs
    assert set(node["assetPartitionStatuses"]["materializedPartitions"]) == set(runs.values())
    checks = {c["name"]: c["partitionStatuses"] for c in node["assetChecksOrError"]["checks"]}
    gate = checks["gate_exact_min_0_75"]
    assert set(gate["failedPartitions"]) == {runs["failing"]}
    assert set(gate["succeededPartitions"]) == set(runs.values()) - {runs["failing"]}
    assert set(checks["gate_every_evaluator_scored"]["succeededPartitions"]) == set(runs.values())


def test_filtering_by_one_tag_finds_exactly_the_runs_carrying_it(session: Session) -> None:
    runs = session.runs
    every = set(runs.values())
    assert set(session.runs_with("cobalt.tag/nightly", "nightly")) == {runs["passing"]}
    assert set(session.runs_with("cobalt.tag/v4", "v4")) == {runs["passing"], runs["failing"]}
    assert set(session.runs_with("cobalt.tag/v5", "v5")) == {runs["while_up"]}
    assert set(session.runs_with("cobalt.tag/requested", "requested")) == {runs["requested"]}
    # the experiment's own tag, on every run however it started (CLI or daemon)
    assert set(session.runs_with("cobalt.tag/dagster-example", "dagster-example")) == every
    assert set(session.runs_with("cobalt/trigger", "request")) == {runs["requested"]}


def test_metadata_has_units_links_and_the_verdict(session: Session) -> None:
    failing = session.runs["failing"]
    data = session.query("""query($p: [String!]) {
        aggregates: assetNodeOrError(assetKey: {path: ["support_bot", "aggregates"]}) { ... on AssetNode {
          assetMaterializations(partitions: $p) { metadataEntries { label __typename
            ... on FloatMetadataEntry { floatValue } ... on IntMetadataEntry { intValue }
            ... on UrlMetadataEntry { url } ... on MarkdownMetadataEntry { mdStr } } } } }
        scores: assetNodeOrError(assetKey: {path: ["support_bot", "scores"]}) { ... on AssetNode {
          assetMaterializations(partitions: $p) { metadataEntries { label __typename
            ... on TableMetadataEntry { table { records } } } } } } }""", p=[failing])
    [materialisation] = data["aggregates"]["assetMaterializations"]
    entries = {e["label"]: e for e in materialisation["metadataEntries"]}
    assert entries["exact_pass_rate_pct"]["floatValue"] == 0.0
    assert entries["latency_p95_ms"]["__typename"] == "FloatMetadataEntry"
    assert entries["run_page"]["url"].endswith(f"/runs/{failing}")
    assert entries["items_flipped"]["intValue"] == 4  # every item went from pass to fail
    assert "| exact | 1.000 | 0.000 | -1.000 | 4 |" in entries["diff_with_previous"]["mdStr"]
    worst = entries["worst_items"]["mdStr"]
    assert "How do I reset password?" in worst and "Please try again later." in worst  # input and output
    assert "Use the 'Forgot password' link on the sign-in page." in worst  # expected, not cut short
    [scores] = data["scores"]["assetMaterializations"]
    [table] = [e for e in scores["metadataEntries"] if e["label"] == "items"]
    assert len(table["table"]["records"]) == 4

    run = session.runs_with("dagster/partition", failing)[failing]
    events = session.query("""query($id: ID!) { logsForRun(runId: $id) { ... on EventConnection { events {
        __typename ... on ExecutionStepFailureEvent { stepKey failureMetadata { description } }
        ... on RunFailureEvent { message } } } } }""", id=run["dagster_run_id"])["logsForRun"]["events"]
    [failure] = [e for e in events if e["__typename"] == "ExecutionStepFailureEvent"]
    assert failure["failureMetadata"]["description"] == (
        f"Quality gate exact >= 0.75 failed for run {failing}: exact = 0, must be at least 0.75")


def _late_bot_loaded(session: Session) -> list[str]:
    """The jobs of the added experiment's assets, once the code location loaded them (the first is the one the
    asset graph's "Materialize" launches)."""
    def loaded() -> list[str] | None:
        data = session.query("""{ assetNodeOrError(assetKey: {path: ["late_bot", "aggregates"]}) {
            __typename ... on AssetNode { jobNames } } }""")["assetNodeOrError"]
        return data.get("jobNames") or None

    return list(poll("the new experiment's assets", deadline_in(60), loaded))


def test_an_experiment_file_added_while_serving_is_loaded_not_external(session: Session) -> None:
    assert _late_bot_loaded(session) == ["__ASSET_JOB", "late_bot_eval"]  # by name: the UI launches the first


def test_screenshots_of_the_partitions_tab_and_the_failed_run(session: Session, page: Any) -> None:
    failing = session.runs["failing"]
    page.goto(f"{session.url}/assets/support_bot/aggregates?view=partitions")
    _skip_welcome(page)
    page.get_by_text(failing).first.click(timeout=60_000)  # its detail: the materialisation and the checks
    page.get_by_text("worst_items").first.wait_for(timeout=60_000)
    screenshot(page, "dagster-asset-partitions")
    run = session.runs_with("dagster/partition", failing)[failing]
    page.goto(f"{session.url}/runs/{run['dagster_run_id']}")
    page.get_by_text("must be at least 0.75").first.wait_for(timeout=60_000)
    screenshot(page, "dagster-failed-run")


def _skip_welcome(page: Any) -> None:
    """Dagster's first-visit "Join the Dagster community" dialog would cover the screenshots."""
    with contextlib.suppress(Exception):  # not shown (it is once per browser profile): nothing to dismiss
        page.get_by_role("button", name="Skip").click(timeout=5_000)


def test_the_serve_terminal_prints_info_and_above_and_a_failed_gate_on_one_line(session: Session) -> None:
    """What `cobalt serve` printed of the daemon's runs (the request's, the record sensor's recordings)."""
    log, failing = session.root.parent / "serve.log", session.runs["failing"]
    # The run is finished in Dagster's storage a moment before its process's last lines reach the terminal. The
    # step's line is cobalt's logger's, written past the step's log capture (whose `tail` may lose it).
    [step] = poll("the failed gate's line in the terminal", deadline_in(60), lambda: [
        line for line in log.read_text(errors="replace").splitlines()
        if " - STEP_FAILURE - " in line and failing in line])
    printed = log.read_text(errors="replace")
    assert " - INFO - support_bot_eval - " in printed
    assert " - DEBUG - " not in printed
    assert "Traceback" not in printed and "Stack Trace" not in printed
    assert step.endswith(f"Quality gate exact >= 0.75 failed for run {failing}: exact = 0, must be at least 0.75")


ADD_PARTITION = """mutation($repo: RepositorySelector!, $name: String!, $key: String!) {
    addDynamicPartition(repositorySelector: $repo, partitionsDefName: $name, partitionKey: $key) { __typename } }"""
LAUNCH_RUN = """mutation($params: ExecutionParams!) { launchPipelineExecution(executionParams: $params) {
    __typename ... on PythonError { message } } }"""
LAUNCH_BACKFILL = """mutation($params: LaunchBackfillParams!) { launchPartitionBackfill(backfillParams: $params) {
    __typename ... on PythonError { message } } }"""
#: What the asset graph's "Materialize all" of the support bot's group selects: cobalt's four assets and deploy.
GROUP = [{"path": ["support_bot", stage]} for stage in ("dataset", "outputs", "scores", "aggregates", "deploy")]
STAGES = ("dataset", "outputs", "scores", "aggregates")


def _add_partition(session: Session, key: str) -> None:
    """The partitions dialog's "Add partition" (the run id is the partition key)."""
    added = session.query(ADD_PARTITION, repo=LOCATION, name="support_bot_runs", key=key)
    assert added["addDynamicPartition"]["__typename"] == "AddDynamicPartitionSuccess", added


def _pages_url(session: Session) -> str:
    """Where `cobalt serve` says its pages are: the Dagster port + 1, unless that port was taken (another
    suite on the machine), when it picks a free one and prints it."""
    printed = (session.root.parent / "serve.log").read_text(errors="replace")
    [url] = re.findall(r"^cobalt pages: +(http://127\.0\.0\.1:\d+)/", printed, flags=re.MULTILINE)
    return url


def _launch_asset_job(session: Session, key: str, experiment: str, stages: tuple[str, ...]) -> None:
    """The asset graph's "Materialize" of one new partition, as the UI sends it: a run of `__ASSET_JOB` (the first
    of the assets' jobs by name, docs/dagster.md) on the assets and their checks, with the partition's tag."""
    checks = [{"assetKey": {"path": [experiment, "aggregates"]}, "name": name}
              for name in ("gate_exact_min_0_75", "gate_every_evaluator_scored", "gate_error_rate_max_0")]
    launched = session.query(LAUNCH_RUN, params={
        "mode": "default", "executionMetadata": {"tags": [{"key": "dagster/partition", "value": key}]},
        "runConfigData": "{}", "selector": {**LOCATION, "pipelineName": "__ASSET_JOB", "assetCheckSelection": checks,
                                            "assetSelection": [{"path": [experiment, s]} for s in stages]}})
    assert launched["launchPipelineExecution"]["__typename"] == "LaunchRunSuccess", launched


def test_a_partition_materialised_from_the_asset_graph_is_a_run_of_the_experiment_with_its_tags(
        session: Session) -> None:
    """The UI's two launches from the asset graph, as it sends them: one new partition (`launchPipelineExecution`
    of Dagster's `__ASSET_JOB`, the job the UI picks there), and several (`launchPartitionBackfill` on the asset
    selection, which the backfill daemon runs as `__ASSET_JOB` runs)."""
    from cobalt_lib import Store, load_config
    from cobalt_lib.run import new_run_id

    one, backfilled, late = new_run_id(), new_run_id(), new_run_id()
    for key in (one, backfilled):
        _add_partition(session, key)
    _launch_asset_job(session, one, "support_bot", ("dataset", "outputs", "scores", "aggregates", "deploy"))
    backfill = session.query(LAUNCH_BACKFILL, params={"tags": [], "assetSelection": GROUP,
                                                      "partitionNames": [backfilled], "fromFailure": False})
    assert backfill["launchPartitionBackfill"]["__typename"] == "LaunchBackfillSuccess", backfill
    # The experiment file added while serving, its gate failing: Dagster's own console logger prints the run.
    _late_bot_loaded(session)
    added = session.query(ADD_PARTITION, repo=LOCATION, name="late_bot_runs", key=late)
    assert added["addDynamicPartition"]["__typename"] == "AddDynamicPartitionSuccess", added
    _launch_asset_job(session, late, "late_bot", STAGES)
    for key in (one, backfilled, late):
        poll(f"the Dagster run of partition {key}", deadline_in(300), lambda k=key: _finished(session, k),
             interval=1.0)

    store = Store.for_config(load_config(session.root))
    for key, trigger in ((one, "launch"), (backfilled, "backfill"), (late, "launch")):
        [tags] = session.runs_with("dagster/partition", key).values()
        assert tags["cobalt/trigger"] == trigger and tags.get("cobalt.tag/dagster-example") == (
            None if key == late else "dagster-example")
        stored = store.get_run(key)
        assert stored is not None and stored["status"] == "completed"
        assert ("dagster-example" in stored["tags"]) is (key != late)
        assert store.dagster_runs_of([key]) == {key: tags["dagster_run_id"]}
        pages = _pages_url(session)
        page = httpx.get(f"{pages}/runs/{key}", timeout=30)
        assert page.status_code == 200 and key in page.text and 'id="not-recorded"' not in page.text
        assert tags["dagster_run_id"] in page.text  # its Dagster run, linked

    # A failed gate of an `__ASSET_JOB` run is one line in the terminal, as on the experiment's job.
    verdict = f"Quality gate exact >= 0.75 failed for run {late}: exact = 0, must be at least 0.75"
    log = session.root.parent / "serve.log"
    # Its step's failure and the run's failure (which repeats the step's error) each print as one line. The step's
    # line of an `__ASSET_JOB` run comes from Dagster's own console logger, through the step's log capture, whose
    # `tail` is killed before it copies the last lines (dagster-io/dagster#23336): the run's line, written by the
    # run's process outside any capture, always arrives, so either counts. (Cobalt's logger, on the experiment's
    # job, writes past the capture: test_the_serve_terminal_prints_info_and_above... waits for the step's line.)
    steps = poll("the late run's failed gate in the terminal", deadline_in(60), lambda: [
        line for line in log.read_text(errors="replace").splitlines()
        if (" - STEP_FAILURE - " in line or " - RUN_FAILURE - " in line) and late in line])
    assert {(" - __ASSET_JOB - " in line, line.endswith(verdict)) for line in steps} == {(True, True)}
    printed = log.read_text(errors="replace")
    assert "Traceback" not in printed and "Stack Trace" not in printed and " - DEBUG - " not in printed
