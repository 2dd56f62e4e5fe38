"""The team store as users meet it (issue 32): `cobalt` commands in two project directories ("two
machines") on one Postgres URL; the database unreachable at a run's start; the database stopped in the
middle of a run and started again. A real Postgres server (tests/pg.py), real `cobalt` processes."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from pg import Server, server
from slowdown import scaled

from cobalt_lib import Store

COBALT = str(Path(sys.executable).parent / "cobalt")

pytestmark = pytest.mark.slow

EXPERIMENT = '''
import asyncio, os, sys
from cobalt_lib import Dataset, Evaluator, experiment

N = int(os.environ.get("N", "4"))

@experiment("team", Dataset([{"input": f"q{i}", "expected_output": f"a{i}"} for i in range(N)]), concurrency=1,
            evaluators=[Evaluator(name="exact", type="exact-match", field="expected_output")])
async def agent(ctx):
    if ctx.index == int(os.environ.get("HOLD_AT", "-1")):
        print("cobalt-testing: paused at hold", file=sys.stderr, flush=True)
        await asyncio.to_thread(lambda: open(os.environ["HOLD"]).read())
    with open(os.environ["CALLS"], "a") as fh:
        fh.write(f"{ctx.index}\\n")
    return ctx.item["expected_output"] if ctx.index % 3 else "wrong"
'''


def _project(root: Path, toml: str = "") -> Path:
    (root / "experiments").mkdir(parents=True)
    (root / "experiments" / "team.cobalt.py").write_text(EXPERIMENT)
    (root / "cobalt.toml").write_text(toml)
    return root


def _env(project: Path, url: str, **extra: str) -> dict[str, str]:
    clean = {k: v for k, v in os.environ.items() if k not in (
        "GITHUB_ACTIONS", "GITHUB_STEP_SUMMARY", "DAGSTER_HOME", "COBALT_PROJECT_DIR", "COBALT_LEASE_SECONDS")}
    return {**clean, "COBALT_TESTING": "1", "COBALT_DAGSTER_RECORD": "off", "CALLS": str(project / "calls.txt"),
            "COBALT_STORE_URL": url, **extra}


def _cobalt(project: Path, url: str, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([COBALT, *args], cwd=project, env=_env(project, url, **env), text=True,
                          capture_output=True, timeout=scaled(120))


def _calls(project: Path) -> list[int]:
    path = project / "calls.txt"
    return sorted(int(line) for line in path.read_text().split()) if path.exists() else []


def test_two_project_directories_on_one_url_share_one_history(pg_server: Server, pg_url: str,
                                                              tmp_path: Path) -> None:
    here, there = _project(tmp_path / "laptop"), _project(tmp_path / "ci")
    first = _cobalt(here, pg_url, "run", "--ci")
    second = _cobalt(there, pg_url, "run", "--ci")
    assert (first.returncode, second.returncode) == (0, 0), first.stderr + second.stderr
    history = _cobalt(there, pg_url, "history", "--json")
    assert history.returncode == 0, history.stderr
    import json

    runs = json.loads(history.stdout)
    assert len(runs) == 2 and {r["status"] for r in runs} == {"completed"}
    older, newer = runs[-1]["run_id"], runs[0]["run_id"]
    shown = _cobalt(there, pg_url, "show", older)
    assert shown.returncode == 0 and older in shown.stdout, shown.stderr
    compared = _cobalt(here, pg_url, "compare", older, newer)
    assert compared.returncode == 0, compared.stderr
    status = _cobalt(here, pg_url, "store", "status")
    assert status.returncode == 0 and "postgres" in status.stdout and pg_server.url(pg_url.rsplit("/", 1)[1],
                                                                                     password=False).split("@")[1] \
        in status.stdout, status.stdout
    for project in (here, there):
        assert not (project / ".cobalt" / "cobalt.duckdb").exists()
    said = "".join(p.stdout + p.stderr for p in (first, second, history, shown, compared, status))
    assert pg_server.password not in said
    outputs = Store(pg_url, home=here / ".cobalt").query("SELECT run_id, count(*) AS n FROM outputs GROUP BY run_id")
    assert sorted(r["n"] for r in outputs) == [4, 4]


def test_an_unreachable_store_at_the_start_is_one_sentence_and_no_agent_call(pg_server: Server,
                                                                            tmp_path: Path) -> None:
    project = _project(tmp_path / "proj", "[store]\nlock_timeout = 1\n")
    import socket

    with socket.socket() as sock:  # a port nothing listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    url = f"postgresql://cobalt:{pg_server.password}@127.0.0.1:{port}/team"
    done = _cobalt(project, url, "run", "--ci")
    assert done.returncode == 2
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and f"postgresql://127.0.0.1:{port}/team" in lines[0], done.stderr
    assert lines[0].startswith("error: Cannot reach the results store")
    assert pg_server.password not in done.stdout + done.stderr
    assert _calls(project) == []
    assert not (project / ".cobalt" / "cobalt.duckdb").exists()


def test_the_database_stopped_mid_run_then_started_keeps_every_item_once(tmp_path: Path) -> None:
    with server() as db:
        url = db.create_database("midrun")
        project = _project(tmp_path / "proj", "[store]\nlock_timeout = 1\n")
        hold = tmp_path / "hold"
        os.mkfifo(hold)
        proc = subprocess.Popen([COBALT, "run", "--ci"], cwd=project, text=True, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, env=_env(project, url, N="300", HOLD_AT="150",
                                                                 HOLD=str(hold)))
        assert proc.stderr is not None
        while "paused at hold" not in (line := proc.stderr.readline()):
            assert line, "the run ended before item 150"
        db.stop()
        with hold.open("w") as fh:
            fh.write("go\n")
        out, err = proc.communicate(timeout=scaled(300))
        assert proc.returncode == 0, err
        assert "could not be reached" in err and "rows wait in" in err, err
        assert db.password not in out + err
        db.start()
        listed = _cobalt(project, url, "history", "--json")
        assert listed.returncode == 0, listed.stderr
        import json

        [run] = json.loads(listed.stdout)
        assert run["status"] == "completed"
        store = Store(url, home=project / ".cobalt")
        counts = store.query("SELECT item_index, count(*) AS n FROM outputs GROUP BY item_index")
        assert len(counts) == 300 and {r["n"] for r in counts} == {1}
        assert store.query("SELECT count(*) AS n FROM scores")[0]["n"] == 300
        assert _calls(project) == list(range(300))
        synced = _cobalt(project, url, "store", "sync")
        assert synced.returncode == 0 and synced.stdout.startswith("0 row(s)"), synced.stdout + synced.stderr


def test_a_local_history_copied_twice_is_there_once_and_an_older_schema_is_migrated(
        pg_server: Server, tmp_path: Path) -> None:
    import json

    url = pg_server.create_database("copied")
    project = _project(tmp_path / "proj")
    for _ in range(2):
        assert _cobalt(project, "", "run", "--ci").returncode == 0
    local = Store(project / ".cobalt" / "cobalt.duckdb")
    local.add_labels([{"experiment": "team", "evaluator": "exact", "item_id": "x", "value": 1.0, "who": "ana",
                       "set_at": "2026-01-01T00:00:00+00:00"}])
    local.add_dataset_version("qa", {"hash": "a", "split_hash": "s", "items": 1, "splits": {}},
                              [{"position": 0, "item_id": "i0", "item_hash": "h0", "split": None, "item": {"q": 1},
                                "origin": None}])
    counts = []
    for _ in range(2):
        done = _cobalt(project, "", "store", "copy", "--to", url, "--json")
        assert done.returncode == 0, done.stderr
        counts.append(json.loads(done.stdout))
        assert pg_server.password not in done.stdout + done.stderr
    assert [(c["runs"], c["skipped"], c["labels"], c["dataset_versions"]) for c in counts] == [(2, 0, 1, 1),
                                                                                            (0, 2, 0, 0)]
    team = Store(url, home=project / ".cobalt")
    assert team.query("SELECT count(*) AS n FROM outputs")[0]["n"] == 8
    assert team.query("SELECT count(*) AS n FROM runs")[0]["n"] == 2
    assert len(team.labels("team", "exact")) == 1
    assert [i["item"] for i in team.dataset_items("qa", 1)] == [{"q": 1}]

    # the store as an older cobalt left it (no version recorded): refused by name, then migrated
    with team._transaction() as con:
        con.execute("DROP TABLE cobalt_schema")
    refused = _cobalt(project, url, "history")
    assert refused.returncode == 2
    assert "has schema version 1, older than this cobalt's (2); run `cobalt store migrate`" in refused.stderr
    migrated = _cobalt(project, url, "store", "migrate")
    assert migrated.returncode == 0 and "now has schema version 2 (was 1)" in migrated.stdout, migrated.stderr
    assert json.loads(_cobalt(project, url, "history", "--json").stdout)[0]["status"] == "completed"
