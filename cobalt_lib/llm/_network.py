"""What the environment says about reaching a server, read as httpx reads it (and so as the openai
and anthropic SDKs did): `SSL_CERT_FILE` / `SSL_CERT_DIR` (httpx `_config.py`), and `HTTP_PROXY`,
`HTTPS_PROXY`, `ALL_PROXY`, `NO_PROXY` (httpx `_utils.py` `get_environment_proxies` and `URLPattern`).
`safe_url` (the one way a URL is shown) lives in `cobalt_lib._secrets`."""

from __future__ import annotations

import ipaddress
import os
import re
import ssl
from urllib.parse import urlsplit
from urllib.request import getproxies


def ssl_context() -> ssl.SSLContext:
    """The context verifying HTTPS servers: `SSL_CERT_FILE`, else `SSL_CERT_DIR`, else certifi's
    bundle (else the system's), as httpx builds it. Raises `OSError`/`ssl.SSLError` for a bad file."""
    if cafile := os.environ.get("SSL_CERT_FILE"):
        return ssl.create_default_context(cafile=cafile)
    if capath := os.environ.get("SSL_CERT_DIR"):
        return ssl.create_default_context(capath=capath)
    try:
        import certifi
    except ImportError:
        return ssl.create_default_context()
    return ssl.create_default_context(cafile=certifi.where())


def certificate_source() -> str:
    """Which certificates verified the server, for a TLS failure's message."""
    for variable in ("SSL_CERT_FILE", "SSL_CERT_DIR"):
        if value := os.environ.get(variable):
            return f"{variable}={value}"
    return "certifi's bundle (SSL_CERT_FILE and SSL_CERT_DIR are not set)"


def environment_proxy(url: str) -> str | None:
    """The proxy the environment names for `url`, or None for a direct connection: `NO_PROXY` first
    (`*`, hosts, `.domain` suffixes, IPs, `scheme://host:port`), then the scheme's `<SCHEME>_PROXY`,
    then `ALL_PROXY`; lowercase variables win (urllib's `getproxies`). A proxy without a scheme is http."""
    found = getproxies()
    parts = urlsplit(url)
    for entry in (e.strip() for e in found.get("no", "").split(",")):
        if entry == "*":
            return None
        if entry and _bypassed(entry, parts.scheme, (parts.hostname or "").lower(), parts.port):
            return None
    for key in (parts.scheme, "all"):
        if proxy := found.get(key):
            return proxy if "://" in proxy else f"http://{proxy}"
    return None


def _bypassed(entry: str, scheme: str, host: str, port: int | None) -> bool:
    if "://" in entry:
        pattern = urlsplit(entry)
        if pattern.scheme not in ("all", scheme) or (pattern.port and pattern.port != port):
            return False
        return _host_matches((pattern.hostname or "").lower(), host)
    if _is_ip(entry) or entry.lower() == "localhost":
        return entry.lower().strip("[]") == host
    return _host_matches("*" + entry.lower(), host)


def _host_matches(pattern: str, host: str) -> bool:
    """httpx's URLPattern: `*.example.com` its subdomains, `*example.com` it and them, else exactly."""
    if not pattern or pattern == "*":
        return True
    if pattern.startswith("*."):
        return re.fullmatch(rf".+\.{re.escape(pattern[2:])}", host) is not None
    if pattern.startswith("*"):
        return re.fullmatch(rf"(.+\.)?{re.escape(pattern[1:])}", host) is not None
    return pattern == host


def _is_ip(text: str) -> bool:
    try:
        ipaddress.ip_address(text.strip("[]").split("/")[0])
    except ValueError:
        return False
    return True
