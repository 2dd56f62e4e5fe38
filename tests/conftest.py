"""Shared fixtures: the loopback LLM server and a temporary project directory."""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    import dagster as dg

sys.path.insert(0, str(Path(__file__).parent))

from fakellm import FakeLLM

from cobalt_lib import REGISTRY, Store
from cobalt_lib.monitor import MONITORS
from cobalt_lib.store._liveness import utc_now

SECRET_VARIABLES = ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "OPENROUTER_API_KEY", "OPENAI_BASE_URL",
                    "ANTHROPIC_BASE_URL")
#: A key the tests set so they can prove it never lands in results, cache or logs.
TEST_KEY = "sk-test-SECRET-0123456789abcdef"


@pytest.fixture(scope="session")
def _llm_server() -> Iterator[FakeLLM]:
    server = FakeLLM().start()
    yield server
    server.stop()


@pytest.fixture
def llm(_llm_server: FakeLLM) -> Iterator[FakeLLM]:
    """The loopback OpenAI/Anthropic server, with an empty script and zeroed counters."""
    _llm_server.reset()
    yield _llm_server
    _llm_server.reset()


@pytest.fixture(scope="session", autouse=True)
def _no_project_above_the_temporary_directories(tmp_path_factory: pytest.TempPathFactory) -> None:
    """A `.cobalt/`, `experiments/` or config file above the tests' temporary directories (a stray
    `/tmp/.cobalt` left by a command run in /tmp) would become every test project's root: stop at once."""
    from cobalt_lib.config._config import CONFIG_FILES

    base = tmp_path_factory.getbasetemp().resolve()
    for directory in base.parents:
        found = [name for name in (".cobalt", "experiments", *CONFIG_FILES) if (directory / name).exists()
                 and name != "pyproject.toml"]
        if found:
            pytest.exit(f"{directory / found[0]} is above the tests' temporary directory {base}: every test project "
                        f"would find it as its root; move it away and run again.", returncode=2)


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    for name in SECRET_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    REGISTRY.clear()
    MONITORS.clear()
    yield
    REGISTRY.clear()
    MONITORS.clear()


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty project directory, made the working directory."""
    root = tmp_path / "proj"
    root.mkdir()
    monkeypatch.chdir(root)
    return root


def shifted_store(where: Path | Store, hours: float) -> Store:
    """A Store on `where` (a file, or the store another Store object names) whose clock is `hours` off the
    wall clock: a run it starts holds a lease that ended long ago (negative) or lasts for a day (positive),
    whatever clock later reads it."""
    def now() -> datetime:
        return utc_now() + timedelta(hours=hours)

    return where.like(now=now) if isinstance(where, Store) else Store(where, now=now)


def killed_and_live_runs(root: Path) -> Store:
    """A store holding `r-killed` (its lease expired an hour ago) and `r-live` (leased for a day), both `running`."""
    path = root / ".cobalt" / "cobalt.duckdb"
    shifted_store(path, -2).start_run({"run_id": "r-killed", "experiment": "qa",
                                       "started_at": "2026-01-01T00:00:00+00:00", "tags": [], "config": {}})
    shifted_store(path, 24).start_run({"run_id": "r-live", "experiment": "qa",
                                       "started_at": "2026-01-02T00:00:00+00:00", "tags": [], "config": {}})
    return Store(path)


@contextmanager
def http_server(handler: type[BaseHTTPRequestHandler]) -> Iterator[str]:
    """A threaded HTTP server on 127.0.0.1 (a free port) answering with `handler`; yields its base URL."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def write_judge_config(root: Path, llm: FakeLLM, *, provider: str = "openai", extra: str = "") -> None:
    """A cobalt.toml pointing the judge at the loopback server (fast retries for tests)."""
    url = llm.anthropic_url if provider == "anthropic" else llm.openai_url
    (root / "cobalt.toml").write_text(
        f'[judge]\nprovider = "{provider}"\nmodel = "gpt-4o-mini"\nbase_url = "{url}"\n'
        f"max_retries = 3\nretry_max_seconds = 20\ntimeout = 5\n{extra}",
        encoding="utf-8",
    )


@pytest.fixture
def judged_project(project: Path, llm: FakeLLM, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A project whose judge is the loopback server, with a (fake) secret key set."""
    write_judge_config(project, llm)
    monkeypatch.setenv("OPENAI_API_KEY", TEST_KEY)
    monkeypatch.setenv("ANTHROPIC_API_KEY", TEST_KEY)
    return project


@pytest.fixture
def instance(tmp_path: Path) -> Iterator[dg.DagsterInstance]:
    """A fresh Dagster instance of the test's own (a temporary DAGSTER_HOME) for the Dagster-layer tests."""
    import dagster as dg  # here, not at the top: most tests never load dagster

    home = tmp_path / "dh"
    home.mkdir()
    with dg.DagsterInstance.from_config(str(home)) as inst:
        yield inst


def pytest_configure(config: pytest.Config) -> None:
    os.environ.setdefault("COBALT_TESTING", "1")
    # Python's platform.processor() runs `uname -p` once per process, and the openai SDK asks on its first
    # client: asked here, before the hook, so whichever test builds the first client starts no process.
    import platform

    platform.uname().processor  # noqa: B018
    sys.addaudithook(_note_processes)


# The fast tier is `pytest -m "not slow"`. Tests that start processes (the CLI as a user runs it, servers),
# run Dagster or drive a browser are `slow`: whole files by where they are, single tests by their own mark.
# A test outside the slow tier that starts a process fails, saying to mark it.
TESTS = Path(__file__).parent
SLOW_FILES = ("dagster_layer/", "mcp/", "cli/", "pages/test_live.py", "test_browser.py", "test_docs.py",
              "test_examples.py", "test_structure.py", "evaluators/test_plugin_package.py")
_PROCESS_EVENTS = frozenset({"subprocess.Popen", "os.posix_spawn", "os.fork", "os.exec"})
_started: list[str] = []


def _note_processes(event: str, args: tuple[object, ...]) -> None:
    if event in _PROCESS_EVENTS:
        _started.append(event)


#: Fixtures that make a test slow wherever it is: a browser, a Dagster instance.
SLOW_FIXTURES = frozenset({"browser", "page", "instance"})


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if item.path.relative_to(TESTS).as_posix().startswith(SLOW_FILES) or (
                SLOW_FIXTURES & set(getattr(item, "fixturenames", ()))):
            item.add_marker(pytest.mark.slow)


@pytest.fixture(autouse=True)
def _fast_tests_start_no_process(request: pytest.FixtureRequest) -> Iterator[None]:
    before = len(_started)
    yield
    if request.node.get_closest_marker("slow") is None and len(_started) > before:
        pytest.fail(f"this test started a process ({_started[before]}) but is not marked slow: add "
                    "@pytest.mark.slow, so that `pytest -m 'not slow'` stays the fast tier", pytrace=False)


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


from browser import browser, page  # noqa: E402,F401  (fixtures: a real Chromium through Playwright)

# The session's Postgres server and a fresh database per module, for the tests of the team store.
from pg import pg_server, pg_url  # noqa: E402, F401

# The store's tests on both backends (tests/stores.py).
from stores import make_store, store_url  # noqa: E402, F401
