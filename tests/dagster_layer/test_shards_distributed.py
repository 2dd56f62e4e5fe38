"""Sharded runs on a real distributed engine and a real object store: Dagster's celery executor with a
Redis broker and two celery worker processes (cobalt's worker app, `cobalt_dagster.celery_app`; a solo
or a prefork pool), one of them SIGKILLed mid-shard, and an S3 exchange on moto's server, all on 127.0.0.1."""

from __future__ import annotations

import base64
import json
import os
import shutil
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import dagster as dg
import pytest
from conftest import TEST_KEY, write_judge_config
from shardjob import EXPERIMENT, ITEMS, make_project, reconstructable
from slowdown import scaled
from test_shards import SHARD_STEP, add_partition, gate_verdicts, once_each, steps

import cobalt_dagster
from cobalt_dagster._shards import SHARD_RETRIES
from cobalt_lib import Store, load_config
from cobalt_lib.store import Exchange

HERE = Path(__file__).parent
BIN = Path(sys.executable).parent
REDIS = shutil.which("redis-server") or "/usr/bin/redis-server"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_for(condition: Any, what: str, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)


def stop(proc: subprocess.Popen[bytes]) -> None:
    proc.terminate()
    try:
        proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[str]:
    """A Redis server of the test's own on a free port, stopped by its pid."""
    if not Path(REDIS).exists():
        pytest.skip("redis-server is not installed (apt-get install redis-server)")
    import redis

    port = free_port()
    proc = subprocess.Popen([REDIS, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
                             "--dir", str(tmp_path)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    client = redis.Redis(host="127.0.0.1", port=port)

    def up() -> bool:
        try:
            return bool(client.ping())
        except redis.ConnectionError:
            return False

    try:
        wait_for(up, "redis-server")
        yield f"redis://127.0.0.1:{port}/0"
    finally:
        client.close()
        stop(proc)


@pytest.fixture
def lost_after() -> float:
    """Seconds before Redis hands a dead worker's task to another: above any shard's run in these tests. Redis
    hands out a task unacknowledged for that long even while its worker still runs it (`task_acks_late`):
    at 30 s a loaded machine's first attempt was still working when a second worker took the shard."""
    return scaled(60)


@pytest.fixture
def workers(broker: str, tmp_path: Path, lost_after: float, request: pytest.FixtureRequest) -> Iterator[list[int]]:
    """Two celery worker processes of cobalt's worker app (one task at a time each; `solo` unless the test
    asks for another pool) serving Dagster's queue; their pids."""
    from celery import Celery

    conf = tmp_path / "celeryconf"
    conf.mkdir()
    (conf / "dagster_celery_config.py").write_text(
        f"broker_url = {broker!r}\nresult_backend = {broker!r}\n"
        f"broker_transport_options = {{'visibility_timeout': {lost_after!r}}}\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(conf), str(HERE), str(HERE.parent)])}
    kind = getattr(request, "param", "solo")
    pool = ["--pool", kind] + (["--concurrency", "1"] if kind == "prefork" else [])
    procs = [subprocess.Popen([str(BIN / "celery"), "-A", "cobalt_dagster.celery_app", "worker", "-Q", "dagster",
                               *pool, "-n", f"cobalt{n}@%h", "--without-gossip", "--without-mingle", "-l", "WARNING"],
                              env=env, cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
             for n in (1, 2)]
    app = Celery(broker=broker, backend=broker)
    try:
        wait_for(lambda: len(app.control.ping(timeout=0.5) or []) == 2, "two celery workers")
        yield [p.pid for p in procs]
    finally:
        app.close()
        for proc in procs:
            stop(proc)


@pytest.fixture
def sharded(tmp_path: Path, llm: Any, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("OPENAI_API_KEY", TEST_KEY)
    root = tmp_path / "proj"
    root.mkdir()
    write_judge_config(root, llm)
    return root


@pytest.mark.slow
def test_a_sharded_run_on_the_celery_executor_runs_each_shard_in_a_worker(
        sharded: Path, instance: dg.DagsterInstance, broker: str, workers: list[int]) -> None:
    make_project(sharded, (sharded / "cobalt.toml").read_text())
    partition = add_partition(instance)
    with dg.execute_job(reconstructable(sharded, executor="celery", broker=broker), instance=instance,
                        tags={"dagster/partition": partition}) as result:
        assert result.success
    records = instance.get_records_for_run(run_id=result.run_id, of_type=dg.DagsterEventType.STEP_START).records
    where = {str(r.event_log_entry.step_key): r.event_log_entry.dagster_event.pid for r in records  # type: ignore[union-attr]
             if r.event_log_entry.dagster_event is not None}
    shards = {step: pid for step, pid in where.items() if SHARD_STEP in step}
    assert len(shards) == 3 and set(shards.values()) <= set(workers)  # each shard ran in a worker process
    assert os.getpid() not in where.values()
    assert once_each(Store.for_config(load_config(sharded)), partition) == ([(i, 0) for i in range(ITEMS)], 2 * ITEMS)
    assert gate_verdicts(instance, result.run_id) == sorted([("gate_exact_min_0_75", True),
                                                             ("gate_every_evaluator_scored", True),
                                                             ("gate_error_rate_max_0", True)])


@pytest.mark.slow
@pytest.mark.timeout(900)
@pytest.mark.parametrize("workers", ["prefork", "solo"], indirect=True)
def test_a_shard_whose_celery_worker_is_killed_runs_again_from_its_committed_parts(
        sharded: Path, instance: dg.DagsterInstance, broker: str, workers: list[int],
        request: pytest.FixtureRequest) -> None:
    make_project(sharded, (sharded / "cobalt.toml").read_text())
    (sharded / "kill-once-4").touch()  # shard 1's worker process SIGKILLs itself once item 3's part is committed
    partition = add_partition(instance)
    done = threading.Event()
    # A solo worker's task comes back once Redis counts it lost (`lost_after` after it was handed out); the
    # test moves that moment to the kill instead of waiting for it (2-3 minutes on a loaded machine).
    aging = threading.Thread(target=_age_when_killed, args=(broker, sharded / "kill-once-4",
                                                            f"{SHARD_STEP}[1]", done), daemon=True)
    if request.node.callspec.params["workers"] == "solo":
        aging.start()
    try:
        with dg.execute_job(reconstructable(sharded, executor="celery", broker=broker), instance=instance,
                            tags={"dagster/partition": partition}) as result:
            assert result.success
    finally:
        done.set()
        if aging.is_alive():
            aging.join()
    assert not (sharded / "kill-once-4").exists()  # the kill happened
    pids = started(instance, result.run_id, f"{EXPERIMENT}_outputs_scores.{SHARD_STEP}[1]")
    assert len(pids) == 2 and pids[0] != pids[1], pids  # a second process ran the shard after the first died
    # The broker handed the task out again: Dagster saw one attempt, never a retry or a failure.
    assert steps(instance, result.run_id, dg.DagsterEventType.STEP_UP_FOR_RETRY) == []
    assert steps(instance, result.run_id, dg.DagsterEventType.STEP_FAILURE) == []
    parts = Exchange.for_config(load_config(sharded)).parts(partition, 1)
    assert [k for p in parts for k in p.keys] == [(3, 0), (4, 0), (5, 0)]  # item 3 kept, not run again
    assert len({p.name.rsplit("-", 1)[1] for p in parts}) == 2  # the second attempt resumed after the first's part
    assert once_each(Store.for_config(load_config(sharded)), partition) == ([(i, 0) for i in range(ITEMS)], 2 * ITEMS)
    assert Store.for_config(load_config(sharded)).run_status(partition) == "completed"


@pytest.mark.slow
@pytest.mark.timeout(900)
@pytest.mark.parametrize("workers", ["prefork"], indirect=True)  # a pool process's task comes back at once
def test_a_shard_that_kills_every_worker_is_handed_out_a_bounded_number_of_times(
        sharded: Path, instance: dg.DagsterInstance, broker: str, workers: list[int]) -> None:
    make_project(sharded, (sharded / "cobalt.toml").read_text())
    (sharded / "kill-always-7").touch()  # shard 2's worker process SIGKILLs itself on item 7, every time
    partition = add_partition(instance)
    with dg.execute_job(reconstructable(sharded, executor="celery", broker=broker), instance=instance,
                        tags={"dagster/partition": partition}) as result:
        assert not result.success  # failed, not handed out for ever
    shard2 = f"{EXPERIMENT}_outputs_scores.{SHARD_STEP}[2]"
    pids = started(instance, result.run_id, shard2)
    # Three pool processes died running it; a fourth, handed it again, gave it up; none a worker's own.
    assert len(pids) == SHARD_RETRIES + 2 and len(set(pids)) == len(pids) and not set(pids) & set(workers), pids
    [failure] = instance.get_records_for_run(run_id=result.run_id, of_type=dg.DagsterEventType.STEP_FAILURE).records
    event = failure.event_log_entry.dagster_event
    assert event is not None and event.step_key == shard2
    assert event.step_failure_data.user_failure_data.description == (  # type: ignore[union-attr]
        f"shard 2 of cobalt run {partition} (positions 6-7 of its item keys) started 3 times and its worker "
        "process died in 3 of them (SIGKILL, out of memory, its machine gone): cobalt gives up on it; find what "
        "kills it, then re-execute the run from failure, which keeps the other shards' items.")
    assert steps(instance, result.run_id, dg.DagsterEventType.STEP_UP_FOR_RETRY) == []
    assert f"{EXPERIMENT}_outputs_scores.{EXPERIMENT}_merge" not in steps(
        instance, result.run_id, dg.DagsterEventType.STEP_START)
    exchange = Exchange.for_config(load_config(sharded))
    assert [[k for p in exchange.parts(partition, n) for k in p.keys] for n in (0, 1)] == [
        [(0, 0), (1, 0), (2, 0)], [(3, 0), (4, 0), (5, 0)]]  # the other shards' items are kept for a re-execution
    assert {k for p in exchange.parts(partition, 2) for k in p.keys} <= {(6, 0)}
    store = Store.for_config(load_config(sharded))
    assert store.run_status(partition) == "incomplete"  # its lease ended with the shard given up: resumable now
    assert once_each(store, partition) == ([], 0)


def _age_when_killed(broker: str, marker: Path, step: str, done: threading.Event) -> None:
    """Once the agent has removed `marker` (it kills its worker next), the delivery time Redis keeps for the
    task of `step` is set back past the visibility timeout: the broker's clock moved on for that one task, as
    `lost_after` seconds of waiting would move it, so the remaining worker's next sweep (every 10 s,
    `celery_settings`) hands it out again. The other shards' tasks keep their times: none is handed out twice."""
    import redis
    from kombu.transport.redis import Channel

    client = redis.Redis.from_url(broker)
    try:
        while marker.exists():
            if done.wait(0.05):
                return
        while not done.wait(0.05):
            for tag, payload in client.hgetall(Channel.unacked_key).items():
                raw = json.loads(payload)[0]
                if step in base64.b64decode(raw["body"]).decode("utf-8", errors="replace"):
                    client.zadd(Channel.unacked_index_key, {tag: 0})
                    return
    finally:
        client.close()


def started(instance: dg.DagsterInstance, run_id: str, step: str) -> list[int | None]:
    """The pids of the processes that started `step` in the run, in order (a STEP_START each)."""
    records = instance.get_records_for_run(run_id=run_id, of_type=dg.DagsterEventType.STEP_START).records
    return [r.event_log_entry.dagster_event.pid for r in records  # type: ignore[union-attr]
            if r.event_log_entry.step_key == step]


@pytest.fixture
def s3(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """moto's S3-compatible server on 127.0.0.1 with a bucket `exchange`; its URL."""
    from moto.server import ThreadedMotoServer

    port = free_port()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port)
    server.start()
    url = f"http://127.0.0.1:{port}"
    for name, value in (("AWS_ENDPOINT_URL", url), ("AWS_ACCESS_KEY_ID", "test"), ("AWS_SECRET_ACCESS_KEY", "test"),
                        ("AWS_DEFAULT_REGION", "us-east-1")):
        monkeypatch.setenv(name, value)
    import boto3

    boto3.client("s3", endpoint_url=url).create_bucket(Bucket="exchange")
    try:
        yield url
    finally:
        server.stop()


@pytest.mark.slow
def test_shards_meet_in_object_storage(sharded: Path, instance: dg.DagsterInstance, s3: str) -> None:
    make_project(sharded, (sharded / "cobalt.toml").read_text(), exchange="s3://exchange/cobalt")
    partition = add_partition(instance)
    job = cobalt_dagster.build_definitions(sharded).resolve_job_def(f"{EXPERIMENT}_eval")
    assert job.execute_in_process(instance=instance, partition_key=partition).success
    import boto3

    keys = [o["Key"] for o in boto3.client("s3", endpoint_url=s3).list_objects_v2(
        Bucket="exchange", Prefix=f"cobalt/{partition}/")["Contents"]]
    assert {k.split("/")[2] for k in keys} == {"shard-00000", "shard-00001", "shard-00002"}
    assert sum(k.endswith(".outputs.parquet") for k in keys) >= 3
    assert not (sharded / ".cobalt" / "exchange").exists()  # nothing went to the local default
    assert once_each(Store.for_config(load_config(sharded)), partition) == ([(i, 0) for i in range(ITEMS)], 2 * ITEMS)
