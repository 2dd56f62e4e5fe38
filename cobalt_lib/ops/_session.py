"""Secrets a local server shares with its user alone: kept in a file under the project's output directory that
only its owner may read (0600), made on first use. Loopback is not a user boundary (any local user can reach
127.0.0.1), so `cobalt mcp --http` requires its token (`mcp-token`) and the pages' writes require the user's
session (`pages-session`), which `cobalt serve`'s login link hands to the user's browser as a cookie."""

from __future__ import annotations

import os
import secrets
from pathlib import Path

from .._errors import ConfigError

#: The pages' session, under the output directory.
PAGES_SESSION_FILE = "pages-session"
MIN_SECRET_LENGTH = 16


def owner_only_secret(path: Path, instead: str) -> tuple[str, bool]:
    """The secret kept in `path` (made, 0600, with a new one when missing): (it, whether made now). A file
    others may read, or that is not the user's, is refused: its secret is no longer the user's alone.
    `instead` names the other way to give it (a variable), for the message."""
    path.parent.mkdir(parents=True, exist_ok=True)
    token = secrets.token_urlsafe(32)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        pass
    else:
        with os.fdopen(fd, "w", encoding="ascii") as out:
            out.write(token + "\n")
        return token, True
    status = path.stat()
    if status.st_mode & 0o077 or status.st_uid != os.getuid():
        raise ConfigError(f"{path} may be read by other users (mode {status.st_mode & 0o777:o}) or is not yours; "
                          f"delete it (a new one is made) or `chmod 600` it{f', or set {instead}' if instead else ''}.")
    found = path.read_text(encoding="ascii", errors="replace").strip()
    check_secret(found, str(path), "delete it and a new one is made")
    return found, False


def check_secret(token: str, where: str, fix: str) -> None:
    if len(token) < MIN_SECRET_LENGTH or not token.isascii() or not token.isprintable() or " " in token:
        raise ConfigError(f"{where} must be at least {MIN_SECRET_LENGTH} printable ASCII characters without "
                          f"spaces; {fix}.")


def pages_session(output_dir: Path) -> str:
    """The pages' session secret (made on first use)."""
    return owner_only_secret(output_dir / PAGES_SESSION_FILE, "")[0]
