"""What must never leave the process, and the one way text is cleaned of it.

The process's secrets are the values of its secret-named environment variables (`*_API_KEY`, `*_TOKEN`,
`*_SECRET`, `*_PASSWORD`, `GITHUB_TOKEN` ...), the passwords and query values of the URLs it was given
(`HTTPS_PROXY=http://user:pw@proxy`, `OPENAI_BASE_URL=...?api-key=...`, `OTEL_EXPORTER_OTLP_ENDPOINT=...?token=`,
a store URL), the values of `OTEL_EXPORTER_OTLP_*HEADERS`, and whatever the code registers (a judge's key and
`base_url` from a config file). A server may echo any of them back in any encoding: as written, percent-encoded
(`%2B`, `+` for a space), JSON-escaped, base64 (a `Basic` header). `scrub` replaces every one of those forms with
`***`, and the user info of any URL in the text; `safe_url` is how a URL is shown. Every message (`CobaltError`),
the CLI's stdout and stderr, store rows, results files, the judge cache, log records (`ScrubbingFilter`) and
the servers' answers go through them.
"""

from __future__ import annotations

import base64
import json
import logging
import os
import re
import threading
from collections.abc import Iterable, Mapping
from typing import Any
from urllib.parse import quote, quote_plus, unquote, unquote_plus, urlsplit

#: What a secret is replaced with.
MASK = "***"
#: Shorter values are not treated as secrets: masking every `true` or port number would garble messages.
MIN_LENGTH = 8
_SECRET_NAME = re.compile(r"(?:^|_)(?:API_?KEY|KEY|TOKEN|SECRET|PASSWORD|PASSWD|PASS|PAT|CREDENTIALS?)(?:_|$)",
                          re.IGNORECASE)
_HEADERS_NAME = re.compile(r"^OTEL_EXPORTER_OTLP_(?:\w+_)?HEADERS$", re.IGNORECASE)
#: The user info of a URL written in text (`s3://key:secret@bucket`, `http://user:pw@host`).
_USERINFO = re.compile(r"(?<=://)([^/\s@:'\"<>]*)(:[^/\s@'\"<>]*)?@")

_registered: set[str] = set()
_lock = threading.Lock()
#: The scrubbers made, by (environment, registered secrets, extra): a run asks for two at least in turn (the
#: rows' with no extra, the judge's with its endpoint's secrets), and one cached scrubber rebuilt both on
#: every call (issue 35's library-path regression: about 1 ms a judge call).
_cache: dict[tuple[Any, ...], Scrubber] = {}
#: Scrubbers kept at most: a few endpoints' in a process, each environment change making new ones.
_CACHE_SIZE = 16


def safe_url(url: str, *, path: bool = True) -> str:
    """`url` without user info, query or fragment (where secrets sit): safe for any message. With
    `path=False` the path is shown as `/…` (a webhook's path is often its token)."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    host = f"[{host}]" if ":" in host else host
    try:
        port = f":{parts.port}" if parts.port else ""
    except ValueError:
        port = ""
    shown = parts.path if path or parts.path in ("", "/") else "/…"
    return f"{parts.scheme}://{host}{port}{shown}"


def url_secrets(url: str | None) -> list[str]:
    """The secrets a URL carries: its password (and `user:password`, as a Basic header encodes it) and
    each query value, as written and decoded."""
    if not url or "://" not in url:
        return []
    try:
        parts = urlsplit(url.strip())
        username, password = parts.username, parts.password
    except ValueError:
        return []
    found: list[str] = []
    if password is not None:
        found += [password, unquote(password), f"{unquote(username or '')}:{unquote(password)}"]
    elif username:  # a token as the user alone (`https://TOKEN@host`)
        found.append(username)
    for pair in parts.query.split("&"):
        value = pair.partition("=")[2]
        if value:
            found += [value, unquote(value), unquote_plus(value)]
    return found


def header_secrets(headers: str) -> list[str]:
    """The values of an `OTEL_EXPORTER_OTLP_HEADERS`-style list (`authorization=Bearer%20xyz,x-key=abc`), and
    the credentials after a `Bearer ` or `Basic ` in them."""
    found: list[str] = []
    for pair in headers.split(","):
        value = unquote(pair.partition("=")[2]).strip()
        if value:
            found.append(value)
            scheme, _, credentials = value.partition(" ")
            if credentials and scheme.lower() in ("bearer", "basic", "token"):
                found.append(credentials.strip())
    return found


def register(*secrets: str | None) -> None:
    """Add values that must never be shown (a key read from a config, say) to the process's secrets."""
    new = {s for s in secrets if s and len(s) >= MIN_LENGTH} - _registered
    if new:
        with _lock:
            _registered.update(new)


def register_url(url: str | None) -> None:
    """Add a URL's password and query values to the process's secrets."""
    register(*url_secrets(url))


def environment_secrets(environ: Mapping[str, str] | None = None) -> list[str]:
    """The secrets the environment holds: secret-named variables, the credentials and query values of
    URL-valued ones, and the OTLP headers' values."""
    found: list[str] = []
    for name, value in (os.environ if environ is None else environ).items():
        if not value:
            continue
        if _HEADERS_NAME.match(name):
            found += header_secrets(value)
        elif _SECRET_NAME.search(name):
            found.append(value)
        if "://" in value:
            found += url_secrets(value)
    return found


def forms(secret: str) -> set[str]:
    """The ways `secret` can be written back: as is, URL-decoded and percent- or form-encoded (`+`, `%2B`),
    JSON- and repr-escaped, and base64 (a `Basic` header's `user:password`)."""
    values = {secret, unquote(secret), unquote_plus(secret)}
    found: set[str] = set()
    for value in values:
        found |= {value, quote(value, safe=""), quote(value), quote_plus(value, safe=""), quote_plus(value),
                  json.dumps(value)[1:-1], json.dumps(value, ensure_ascii=False)[1:-1], repr(value)[1:-1],
                  json.dumps(json.dumps(value)[1:-1])[1:-1]}
        raw = value.encode("utf-8", "surrogatepass")
        found |= {base64.b64encode(raw).decode(), base64.urlsafe_b64encode(raw).decode(),
                  base64.b64encode(raw).decode().rstrip("=")}
    return {f for f in found if len(f) >= MIN_LENGTH}


class Scrubber:
    """Replaces every form of a set of secrets, longest first (a secret inside a longer one goes with it)."""

    def __init__(self, secrets: Iterable[str]) -> None:
        shown: set[str] = set()
        for secret in secrets:
            if secret and len(secret) >= MIN_LENGTH:
                shown |= forms(secret)
        self.forms = tuple(sorted(shown, key=len, reverse=True))

    def __call__(self, text: str) -> str:
        for form in self.forms:
            if form in text:
                text = text.replace(form, MASK)
        if "@" in text and "://" in text:
            text = _USERINFO.sub(_masked_userinfo, text)
        return text

    def value(self, value: Any) -> Any:
        """`value` with every string in it scrubbed (dicts, lists and tuples walked)."""
        if isinstance(value, str):
            return self(value)
        if isinstance(value, dict):
            return {k: self.value(v) for k, v in value.items()}
        if isinstance(value, list | tuple):
            return type(value)(self.value(v) for v in value)
        return value


def _masked_userinfo(match: re.Match[str]) -> str:
    """`user:***@` for a user and password; `***@` for a user alone (often a token: `https://TOKEN@host`)."""
    return f"{match[1]}:{MASK}@" if match[2] is not None else f"{MASK}@"


def scrubber(*extra: str) -> Scrubber:
    """The scrubber of the process's secrets as they stand now (plus `extra`); cached while they stay."""
    key = (_environment_generation(), len(_registered), extra)
    made = _cache.get(key)
    if made is not None:
        return made
    made = Scrubber([*environment_secrets(), *_registered, *extra])
    with _lock:
        if len(_cache) >= _CACHE_SIZE:
            _cache.pop(next(iter(_cache)))  # the oldest: an environment since changed, most likely
        _cache[key] = made
    return made


#: The environment as last seen, and how many times it was seen to change.
_environment: list[Any] = [None, 0]


def _environment_generation() -> int:
    """A number that changes whenever the environment does: the rows of every item ask for a scrubber, and
    comparing os.environ's own bytes mapping with a copy is a C loop over unchanged objects, where building
    and hashing a tuple of it per call cost about 13 us."""
    raw = getattr(os.environ, "_data", None)
    now = raw if isinstance(raw, dict) else dict(os.environ)
    seen, generation = _environment
    if seen != now:
        with _lock:
            _environment[:] = [dict(now), generation + 1]
            return generation + 1
    return int(generation)


def scrub(text: str, *extra: str) -> str:
    """`text` with every form of the process's secrets (and of `extra`) replaced by `***`."""
    return scrubber(*extra)(text)


class ScrubbingFilter(logging.Filter):
    """Scrubs a log record's message (its arguments merged in) and its exception text: a library's logging
    (the OpenTelemetry exporter's, Dagster's) must not print an endpoint's token."""

    def filter(self, record: logging.LogRecord) -> bool:
        clean = scrubber()
        try:
            message = record.getMessage()
        except Exception:  # a record whose arguments do not fit its format: logging reports it itself
            return True
        record.msg, record.args = clean(message), None
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = clean(record.exc_text)
        record.exc_info = None if record.exc_text else record.exc_info
        return True


def scrub_loggers(prefix: str) -> None:
    """Put a `ScrubbingFilter` on the logger `prefix` and on every logger under it that exists now (a
    logger's filters see only its own records, not its children's): import the library first."""
    names = [prefix, *(n for n in list(logging.Logger.manager.loggerDict) if n.startswith(prefix + "."))]
    for name in names:
        logger = logging.getLogger(name)
        if not any(isinstance(f, ScrubbingFilter) for f in logger.filters):
            logger.addFilter(ScrubbingFilter())


class ScrubbedStream:
    """A text stream (stdout, stderr) that scrubs what is written to it; everything else is the stream's."""

    def __init__(self, stream: Any) -> None:
        self._stream = stream

    def write(self, text: str) -> int:
        self._stream.write(scrub(text) if len(text) >= MIN_LENGTH else text)
        return len(text)

    def writelines(self, lines: Iterable[str]) -> None:
        for line in lines:
            self.write(line)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


def scrub_stream(stream: Any) -> Any:
    """`stream` wrapped in a `ScrubbedStream` (once)."""
    return stream if isinstance(stream, ScrubbedStream) else ScrubbedStream(stream)
