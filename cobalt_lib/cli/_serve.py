"""`cobalt serve` (cobalt's pages, the Dagster webserver and daemon on 127.0.0.1) and `cobalt request`.

The Dagster UI's port is a loopback proxy (`pages._proxy`) that refuses other sites' Hosts and
state-changing requests; the webserver itself listens on a Unix socket in a directory only the user can
enter, and answers only requests carrying the proxy's secret header (`cobalt_dagster._webserver`).
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import webbrowser
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from .._errors import ConfigError
from ._app import app
from ._common import project_config, warn

if TYPE_CHECKING:
    from ..config._config import Config
    from ..pages import DagsterProxy, PagesServer

STOP_SECONDS = 10.0


#: What `cobalt serve` loads when the project has no definitions of its own: every experiment found.
DEFAULT_MODULE = "cobalt_dagster.definitions"


def dagster_target(root: Path, module: str | None = None) -> list[str]:
    """The code location arguments for `dagster-webserver` and `dagster-daemon run`, first match wins:

    1. `module` (`cobalt serve --module`, else `[dashboard] module`), importable from the project root;
    2. `workspace.yaml` in the project root (it may list several code locations);
    3. `definitions.py` in the project root (a code location merging cobalt's definitions with yours);
    4. `cobalt_dagster.definitions`: the project's experiments alone.
    """
    if module:
        if not _module_exists(root, module):
            raise ConfigError(f"No Python module {module!r} in {root} or the environment; "
                              "pass --module a module importable from the project root, such as `definitions`.")
        return ["-m", module]
    for name, flag in (("workspace.yaml", "-w"), ("definitions.py", "-f")):
        if (root / name).is_file():
            return [flag, str(root / name)]
    return ["-m", DEFAULT_MODULE]


def _module_exists(root: Path, module: str) -> bool:
    """Without importing it (that would run the user's code here): a file under the root, or an
    installed top-level package."""
    import importlib.util

    path = root.joinpath(*module.split("."))
    if path.with_suffix(".py").is_file() or (path / "__init__.py").is_file():
        return True
    try:
        return importlib.util.find_spec(module.split(".")[0]) is not None
    except (ImportError, ValueError):
        return False


def check_definitions(config: Config) -> None:
    """Build cobalt's own definitions here first: a config error (a `[schedules]` entry naming no
    experiment, an experiment file that fails to load) raises ConfigError now, where it exits 2 with
    one sentence. Inside the webserver it would only be a code-location error in a log, behind a
    dashboard that looks healthy. A user's own definitions module is theirs to load: it is not imported here."""
    from cobalt_dagster import build_definitions

    build_definitions(config.root)


def dagster_commands(target: list[str]) -> list[list[str]]:
    """The webserver (on a Unix socket, behind the proxy) and the daemon: schedules, the request and the
    record sensors."""
    from cobalt_dagster import daemon_command, webserver_command

    return [webserver_command(target), daemon_command(target)]


def serve_dashboard(config: Config, port: int | None = None, *, open_browser: bool | None = None,
                    module: str | None = None, pages_port: int | None = None, pages_only: bool = False) -> int:
    """Run cobalt's pages, and the Dagster webserver + daemon (unless `pages_only`), until Ctrl-C (or
    SIGTERM); returns the exit code."""
    port = port or config.dashboard.port
    chosen = pages_port or config.dashboard.pages_port  # else the Dagster port + 1, or any free one
    if pages_only:
        return _serve_pages_only(config, chosen or port + 1, open_browser)
    from cobalt_dagster import POLL_SECONDS, DefinitionsWatcher, dagster_home, forget_daemon, local_instance

    # A bad module, or definitions that cannot be built, is an error before anything starts.
    target = dagster_target(config.root, module or config.dashboard.module)
    if target == ["-m", DEFAULT_MODULE]:
        check_definitions(config)
    local_instance(config)  # create and migrate first: webserver and daemon racing on it corrupts it
    # Only the user can enter the socket's directory (mkdtemp makes it 0700); only the proxy knows the secret.
    hidden = Path(tempfile.mkdtemp(prefix="cobalt-dagster-"))
    socket_path, secret = str(hidden / "webserver.sock"), secrets.token_urlsafe(32)
    proxy = start_proxy(port, socket_path, secret)
    url = proxy.url
    try:
        pages = start_pages(config, chosen or port + 1, dagster=url, fallback=not chosen)
    except ConfigError:
        proxy.stop()
        shutil.rmtree(hidden, ignore_errors=True)
        raise
    from ._collect import start_collector

    collector = start_collector(config)
    env = {**os.environ, "DAGSTER_HOME": str(dagster_home(config)), "COBALT_PROJECT_DIR": str(config.root)}
    watcher = DefinitionsWatcher(config, url)  # before the load: no change missed; through the proxy, as a script
    from cobalt_dagster import WEBSERVER_SECRET_VARIABLE, WEBSERVER_SOCKET_VARIABLE, shared_code_server

    inner_env = {**env, WEBSERVER_SOCKET_VARIABLE: socket_path, WEBSERVER_SECRET_VARIABLE: secret}
    # One code server for the webserver and the daemon (`cobalt_dagster._code_server`): without it the
    # daemon starts a fresh one every minute or so, most of an idle `cobalt serve`'s CPU.
    code = shared_code_server(target, hidden, config.root)
    children = [] if code is None else [_start_code_server(code.command, env, config.root)]
    stopping = False

    def stop(signum: int, frame: object) -> None:
        nonlocal stopping
        stopping = True

    previous = {sig: signal.signal(sig, stop) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        if code is not None:
            _wait_code_server(code.socket, children, lambda: stopping)
        webserver, daemon = dagster_commands(target if code is None else code.target)
        children += [_printed(subprocess.Popen(webserver, env=inner_env, cwd=config.root, start_new_session=True,
                                               stderr=subprocess.PIPE)),
                     _printed(subprocess.Popen(daemon, env=env, cwd=config.root, start_new_session=True,
                                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE))]
        if _wait_ready(url, children, lambda: stopping):
            typer.echo(f"cobalt pages:     {pages.login_url}\ndagster UI:       {url}  (Ctrl-C stops both)")
            if collector is not None:
                typer.echo(f"OTLP traces:      {collector.url}/v1/traces  (docs/monitors.md)")
            if open_browser if open_browser is not None else config.dashboard.open:
                webbrowser.open(pages.login_url)
        next_look = time.monotonic() + POLL_SECONDS
        while not stopping and all(child.poll() is None for child in children):
            time.sleep(0.2)
            if time.monotonic() >= next_look:  # a new experiment file: reload, not an "External Asset"
                watcher.poll()
                next_look = time.monotonic() + POLL_SECONDS
    finally:
        proxy.stop()  # first: its open connections to the webserver would hold up the webserver's exit
        _stop(children)
        pages.stop()
        if collector is not None:
            collector.shutdown()
            collector.server_close()
        shutil.rmtree(hidden, ignore_errors=True)
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    forget_daemon(config)  # its last heartbeat would tell `cobalt request` the daemon still runs
    failed = [c for c in children if c.returncode not in (0, -signal.SIGINT, -signal.SIGTERM, 130, None)]
    return 0 if stopping or not failed else 1


def start_proxy(port: int, socket_path: str, secret: str) -> DagsterProxy:
    """The Dagster UI's port: the proxy on 127.0.0.1:`port` in front of the webserver on `socket_path`,
    adding the secret header it requires."""
    from cobalt_dagster import WEBSERVER_SECRET_HEADER

    from ..pages import DagsterProxy

    proxy = DagsterProxy("http://localhost", port, socket=socket_path, secret=(WEBSERVER_SECRET_HEADER, secret))
    proxy.start()
    return proxy


def start_pages(config: Config, port: int, *, dagster: str, fallback: bool = False) -> PagesServer:
    """cobalt's pages on 127.0.0.1:`port`, in a thread of this process (`fallback`: a port nobody
    chose that is taken becomes a free one, with a warning). The served URLs are exported
    (COBALT_PAGES_URL, COBALT_DAGSTER_URL) to the Dagster processes started next, so the links that
    runs launched under `cobalt serve` record, and the pages' own links to Dagster, use these ports."""
    from ..links import DAGSTER_URL_VARIABLE, PAGES_URL_VARIABLE
    from ..pages import PagesServer

    server = PagesServer(config, "127.0.0.1", port)
    try:
        server.start()
    except ConfigError:
        if not fallback:
            raise
        server = PagesServer(config, "127.0.0.1", 0)
        server.start()
        warn([f"port {port} is taken, so cobalt's pages are on {server.url}; set [dashboard] pages_port "
              "or pass --pages-port to choose."])
    os.environ[PAGES_URL_VARIABLE] = server.url
    os.environ[DAGSTER_URL_VARIABLE] = dagster
    return server


def _serve_pages_only(config: Config, port: int, open_browser: bool | None) -> int:
    """`cobalt serve --pages-only`: the pages alone (no Dagster), until Ctrl-C or SIGTERM."""
    from ..links import dagster_url

    pages = start_pages(config, port, dagster=dagster_url(config))
    stopped = threading.Event()
    previous = {sig: signal.signal(sig, lambda signum, frame: stopped.set()) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        typer.echo(f"cobalt pages:     {pages.login_url}  (Ctrl-C stops it; without Dagster: its links open "
                   "while `cobalt serve` runs)")
        if open_browser if open_browser is not None else config.dashboard.open:
            webbrowser.open(pages.login_url)
        while not stopped.wait(0.5):
            pass
    finally:
        pages.stop()
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    return 0


def _wait_code_server(socket: str, children: list[subprocess.Popen[bytes]], stopping: Callable[[], bool]) -> None:
    """Start the webserver and daemon once the shared code server listens: loading before it would show
    the code location as failed until the next reload."""
    from cobalt_dagster import wait_for_code_server

    wait_for_code_server(socket, lambda: not stopping() and all(c.poll() is None for c in children))


def _wait_ready(url: str, children: list[subprocess.Popen[bytes]], stopping: Callable[[], bool]) -> bool:
    import httpx

    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and not stopping() and all(c.poll() is None for c in children):
        try:
            if httpx.get(f"{url}/server_info", timeout=2).status_code == 200:
                return True
        except httpx.HTTPError:
            pass
        time.sleep(0.3)
    return False


def _start_code_server(command: list[str], env: dict[str, str], root: Path) -> subprocess.Popen[bytes]:
    # Ctrl-C reaches it as SIGINT even where `cobalt serve` runs as a shell's background job (SIGINT
    # ignored, which a child inherits): dagster's webserver and daemon set their own handler, it does not.
    return _printed(subprocess.Popen(command, env=env, cwd=root, start_new_session=True, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.PIPE, preexec_fn=_default_sigint))


def _printed(child: subprocess.Popen[bytes]) -> subprocess.Popen[bytes]:
    """`child`, its stderr printed on ours as it comes, a failed gate's stack trace trimmed to one line (the
    runs of Dagster's own `__ASSET_JOB` print one: `cobalt_dagster._console`)."""
    from cobalt_dagster import print_console

    if child.stderr is not None:
        print_console(child.stderr, sys.stderr)
    return child


def _default_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _stop(children: list[subprocess.Popen[bytes]]) -> None:
    """SIGINT each child (dagster ignores SIGTERM from scripts), then kill what is left after 10 s, and
    what a child started and left behind (each child leads a session of its own: its process group)."""
    for child in children:
        if child.poll() is None:
            child.send_signal(signal.SIGINT)
    deadline = time.monotonic() + STOP_SECONDS
    for child in children:
        try:
            child.wait(timeout=max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait()
    for child in children:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(child.pid, signal.SIGKILL)


@app.command()
def serve(
    port: Annotated[int | None, typer.Option(
        "--port", "-p", help="The Dagster UI's port on 127.0.0.1 (default 4000).")] = None,
    pages_port: Annotated[int | None, typer.Option(
        "--pages-port", help="The port of cobalt's pages on 127.0.0.1 (default: [dashboard] pages_port, else "
        "the Dagster port + 1).")] = None,
    pages_only: Annotated[bool, typer.Option(
        "--pages-only", help="Serve cobalt's pages alone, without Dagster (starts in a second).")] = False,
    open_browser: Annotated[bool | None, typer.Option("--open/--no-open", help="Open a browser tab.")] = None,
    module: Annotated[str | None, typer.Option(
        "--module", "-m", metavar="MODULE", help="Your Dagster definitions module (default: the project root's "
        "workspace.yaml, else its definitions.py, else cobalt's experiments alone).")] = None,
) -> None:
    """Start the dashboard: cobalt's pages (runs, run detail, compare, trends) and the Dagster webserver
    and daemon for this project, all on 127.0.0.1.

    Uses DAGSTER_HOME=.cobalt/dagster; schedules from `[schedules]` run while it is up. Loads
    `--module` if given, else `[dashboard] module` from config, else workspace.yaml, else
    definitions.py in the project root, else every
    experiment of the project (`cobalt_dagster.definitions`).

    Example: `cobalt serve --port 4000 --module my_project.definitions` (pages on 4001)
    """
    raise typer.Exit(serve_dashboard(project_config(), port, open_browser=open_browser, module=module,
                                     pages_port=pages_port, pages_only=pages_only))


@app.command()
def request(
    experiment: Annotated[str, typer.Argument(help="The experiment to run.")],
    concurrency: Annotated[int | None, typer.Option("--concurrency", "-c", min=1, help="Calls in flight.")] = None,
    add_tag: Annotated[list[str] | None, typer.Option("--add-tag", metavar="TAG", help="Add a tag to the run.")] = None,
) -> None:
    """Ask the running dashboard's daemon to run an experiment (picked up within seconds).

    Without a running `cobalt serve` the request waits, and is picked up when it starts.

    Example: `cobalt request qa-agent`
    """
    from ..ops._project import request_experiment

    requested = request_experiment(project_config(), experiment, concurrency=concurrency, add_tags=add_tag or [])
    if requested.daemon_running:
        typer.echo(f"requested a run of {experiment} ({requested.run_id}); the daemon of `cobalt serve` will start it")
    else:
        typer.echo(f"requested a run of {experiment} ({requested.run_id})")
    warn(requested.warnings)
