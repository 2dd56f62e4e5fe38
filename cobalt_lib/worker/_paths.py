"""Where this user's run workers listen, and the fingerprint that says which worker may serve a run.

Standard library only, and no import of what it fingerprints: the `cobalt` console script calls this
before anything else, so it must cost a few milliseconds.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import stat
import sys
from pathlib import Path

#: Where workers listen instead of the default (tests; a user who wants them elsewhere).
DIR_VARIABLE = "COBALT_WORKER_DIR"
#: `off` (or 0, no, false): never hand a run to a worker, never start one.
SWITCH_VARIABLE = "COBALT_WORKER"
#: A Unix socket path longer than this does not fit `sockaddr_un` (108 bytes with the NUL on Linux,
#: 104 on macOS): such a directory gets no worker.
MAX_SOCKET_PATH = 100
_PACKAGES = ("cobalt_lib", "cobalt_dagster")
#: The locale decides the default encoding of files the run opens: a worker started under another one
#: must not serve the run. Likewise the interpreter's startup variables (`PYTHON*`), except the two a
#: child applies itself (warnings filters, the std streams' encoding).
_LOCALE_VARIABLES = ("LC_ALL", "LC_CTYPE", "LANG")
_APPLIED_IN_CHILD = ("PYTHONWARNINGS", "PYTHONIOENCODING")


def switched_off() -> bool:
    return os.environ.get(SWITCH_VARIABLE, "").strip().lower() in ("off", "0", "no", "false")


def supported() -> bool:
    """Forking, Unix sockets and passing file descriptors: else every run stays in process."""
    import socket

    return hasattr(os, "fork") and hasattr(socket, "AF_UNIX") and hasattr(socket, "send_fds")


def worker_dir() -> Path:
    """`COBALT_WORKER_DIR`, else `$XDG_RUNTIME_DIR/cobalt`, else `<tmp>/cobalt-<uid>`."""
    explicit = os.environ.get(DIR_VARIABLE)
    if explicit:
        return Path(explicit)
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    if runtime and os.path.isdir(runtime):
        return Path(runtime) / "cobalt"
    tmp = next((os.environ[n] for n in ("TMPDIR", "TEMP", "TMP") if os.environ.get(n)), "/tmp")
    return Path(tmp) / f"cobalt-{os.getuid()}"


def private_dir(create: bool) -> Path | None:
    """The worker directory when it is this user's alone (mode 0700, owned by us), made so when
    `create`; None when it is missing, someone else's or open to others."""
    path = worker_dir()
    if create:
        try:
            path.mkdir(mode=0o700, parents=True, exist_ok=True)
        except OSError:
            return None
    try:
        info = path.lstat()
    except OSError:
        return None
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid() or info.st_mode & 0o077:
        return None
    return path


def _source_files(package: str) -> list[str]:
    spec = importlib.util.find_spec(package) if package not in sys.modules else sys.modules[package].__spec__
    if spec is None or not spec.submodule_search_locations:
        return []
    files: list[str] = []
    for location in spec.submodule_search_locations:
        for folder, dirs, names in os.walk(location):
            dirs[:] = sorted(d for d in dirs if d != "__pycache__")
            files.extend(os.path.join(folder, n) for n in sorted(names) if n.endswith(".py"))
    return files


def _dagster_version_file() -> str:
    spec = importlib.util.find_spec("dagster") if "dagster" not in sys.modules else sys.modules["dagster"].__spec__
    if spec is None or not spec.origin:
        return ""
    return os.path.join(os.path.dirname(spec.origin), "version.py")


def fingerprint() -> str:
    """The interpreter, the path, size and mtime of every cobalt source file and of Dagster's version
    file, the locale and the `PYTHON*` variables: a worker that imported anything else, or under
    another interpreter setup, must not run this process's run."""
    parts = [sys.executable, sys.version, *(f"{n}={os.environ.get(n, '')}" for n in _LOCALE_VARIABLES)]
    parts += sorted(f"{k}={v}" for k, v in os.environ.items() if k.startswith("PYTHON") and k not in _APPLIED_IN_CHILD)
    for path in [*(f for p in _PACKAGES for f in _source_files(p)), _dagster_version_file()]:
        try:
            info = os.stat(path)
        except OSError:
            parts.append(f"{path}:missing")
            continue
        parts.append(f"{path}:{info.st_size}:{info.st_mtime_ns}")
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()


def socket_path(directory: Path, digest: str) -> Path:
    return directory / f"w-{digest[:16]}.sock"


def log_path(directory: Path, digest: str) -> Path:
    return directory / f"w-{digest[:16]}.log"


def modules_path(directory: Path, digest: str) -> Path:
    """The modules a Dagster-tracked run imported, found once per fingerprint by the warm-up run."""
    return directory / f"w-{digest[:16]}.modules"
