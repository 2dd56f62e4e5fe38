"""Real servers on 127.0.0.1 for the judge's HTTP rules: a scripted judge (plain or TLS), a counting
forward/CONNECT proxy, and a test CA made with `cryptography`."""

from __future__ import annotations

import datetime
import ipaddress
import json
import select
import socket
import socketserver
import ssl
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar

JUDGEMENT = json.dumps({"score": 0.9, "reason": "fine"})


@dataclass
class Say:
    """One scripted answer: a status, headers and a body (default: a judgement in the path's format)."""

    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    body: bytes | None = None


class Drop:
    """Close the connection without answering."""


class Endless:
    """A 200 whose body never ends (until the client hangs up)."""


class HalfHeaders:
    """The status line and half a header, then the connection closes."""


class CutBody:
    """A 200 announcing 100 bytes of body, 11 sent, then the connection closes."""


class NotHTTP:
    """Bytes that are no HTTP status line, then the connection closes."""


Script = Say | Drop | Endless | HalfHeaders | CutBody | NotHTTP


def judgement(path: str) -> bytes:
    if path.endswith("/v1/messages"):
        return json.dumps({"content": [{"type": "text", "text": JUDGEMENT}], "model": "m",
                           "usage": {"input_tokens": 3, "output_tokens": 2}}).encode()
    return json.dumps({"choices": [{"message": {"role": "assistant", "content": JUDGEMENT}}], "model": "m",
                       "usage": {"prompt_tokens": 3, "completion_tokens": 2}}).encode()


class Judge(BaseHTTPRequestHandler):
    """Answers each request with the next scripted reply (then judgements); keeps what it received
    and, for an endless body, how many bytes it got out before the client hung up."""

    script: ClassVar[list[Script]]
    received: ClassVar[list[dict[str, Any]]]
    sent: ClassVar[list[int]]
    #: Set once an endless body's client has hung up (and `sent` says how much got out).
    hung_up: ClassVar[threading.Event]

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        type(self).received.append({"method": self.command, "path": self.path,
                                    "headers": {k.lower(): v for k, v in self.headers.items()}})
        reply = type(self).script.pop(0) if type(self).script else Say()
        if isinstance(reply, Drop):
            self.close_connection = True
        elif isinstance(reply, HalfHeaders):
            self.wfile.write(b"HTTP/1.1 200 OK\r\nContent-Type: appl")
            self.wfile.flush()
            self.close_connection = True
        elif isinstance(reply, CutBody | NotHTTP):
            self.wfile.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n"
                             b'{"choices":' if isinstance(reply, CutBody) else b"\x00\x01garbage\r\n\r\n")
            self.wfile.flush()
            self.close_connection = True
        elif isinstance(reply, Endless):
            self._endless()
        else:
            body = reply.body if reply.body is not None else judgement(self.path) if reply.status < 300 else \
                json.dumps({"error": {"message": f"scripted {reply.status}"}}).encode()
            self.send_response(reply.status)
            for name, value in {"Content-Type": "application/json", **reply.headers}.items():
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    do_GET = do_POST

    def _endless(self) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        chunk, sent = b"[" + b" " * 65535, 0
        try:
            while sent < 2**31:
                self.wfile.write(chunk)
                sent += len(chunk)
        except OSError:
            pass
        type(self).sent.append(sent)
        type(self).hung_up.set()

    def log_message(self, *args: object) -> None:
        pass


@dataclass
class Server:
    url: str
    port: int
    handler: type[Judge]

    @property
    def received(self) -> list[dict[str, Any]]:
        return self.handler.received


@contextmanager
def judge_server(*script: Script, tls: ssl.SSLContext | None = None) -> Iterator[Server]:
    """A scripted judge on 127.0.0.1 (HTTPS with `tls`); its URL has no path."""
    handler = type("Scripted", (Judge,), {"script": list(script), "received": [], "sent": [],
                                               "hung_up": threading.Event()})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    if tls is not None:
        server.socket = tls.wrap_socket(server.socket, server_side=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    port = server.server_address[1]
    try:
        yield Server(f"{'https' if tls else 'http'}://127.0.0.1:{port}", port, handler)
    finally:
        server.shutdown()
        server.server_close()


class _Proxy(socketserver.StreamRequestHandler):
    """CONNECT host:port (a tunnel) or an absolute-form request (forwarded with `Connection: close`)."""

    seen: ClassVar[list[str]]
    #: A careless proxy: passes its own `Proxy-Authorization` on to the server (which may echo it).
    forward_credentials: ClassVar[bool] = False
    #: A proxy that refuses every request: 407, its body echoing the request's headers.
    refuse: ClassVar[bool] = False
    #: A proxy that reads each request and closes the connection without a word.
    hang_up: ClassVar[bool] = False

    def handle(self) -> None:
        head = self.rfile.readline().decode("latin-1").strip()
        headers = []
        while (line := self.rfile.readline()) not in (b"\r\n", b"\n", b""):
            headers.append(line.decode("latin-1").strip())
        type(self).seen.append(head)
        method, target, _ = head.split(" ", 2)
        if type(self).hang_up:
            return
        if type(self).refuse:
            body = json.dumps({"error": {"message": f"proxy authentication refused for {headers}"}}).encode()
            self.wfile.write(b"HTTP/1.1 407 Proxy Authentication Required\r\nContent-Type: application/json\r\n"
                             b"Proxy-Authenticate: Basic realm=proxy\r\nConnection: close\r\n"
                             + f"Content-Length: {len(body)}\r\n\r\n".encode() + body)
            return
        if method == "CONNECT":
            host, port = target.rsplit(":", 1)
            upstream = socket.create_connection((host, int(port)))
            self.wfile.write(b"HTTP/1.1 200 Connection established\r\n\r\n")
            self._pipe(upstream)
            return
        rest = target.split("://", 1)[1]
        hostport, _, path = rest.partition("/")
        host, _, port = hostport.partition(":")
        length = next((int(h.split(":", 1)[1]) for h in headers if h.lower().startswith("content-length:")), 0)
        body = self.rfile.read(length)
        dropped = ("connection:", "keep-alive:") if type(self).forward_credentials else (
            "connection:", "proxy-", "keep-alive:")
        kept = [h for h in headers if not h.lower().startswith(dropped)]
        upstream = socket.create_connection((host, int(port or 80)))
        upstream.sendall(f"{method} /{path} HTTP/1.1\r\n".encode() + "".join(f"{h}\r\n" for h in kept).encode()
                         + b"Connection: close\r\n\r\n" + body)
        self._pipe(upstream)

    def _pipe(self, upstream: socket.socket) -> None:
        client = self.connection
        with upstream:
            while True:
                ready, _, _ = select.select([client, upstream], [], [], 5)
                if not ready:
                    return
                for source in ready:
                    data = source.recv(65536)
                    if not data:
                        return
                    (upstream if source is client else client).sendall(data)


@contextmanager
def counting_proxy(*, forward_credentials: bool = False, refuse: bool = False,
                   hang_up: bool = False) -> Iterator[tuple[str, list[str]]]:
    """An HTTP proxy on 127.0.0.1; yields its URL and the request lines it was sent."""
    handler = type("Counting", (_Proxy,), {"seen": [], "forward_credentials": forward_credentials,
                                           "refuse": refuse, "hang_up": hang_up})
    server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", handler.seen
    finally:
        server.shutdown()
        server.server_close()


@dataclass(frozen=True)
class LocalCA:
    """A CA (`ca_file`, `ca_dir` hashed as OpenSSL looks it up) and a server context for 127.0.0.1."""

    ca_file: Path
    ca_dir: Path
    server: ssl.SSLContext


def make_ca(directory: Path) -> LocalCA:
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    now = datetime.datetime.now(datetime.UTC)

    def build(subject: str, issuer: str, key: Any, signer: Any, *, ca: bool) -> Any:
        builder = (x509.CertificateBuilder()
                   .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, subject)]))
                   .issuer_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, issuer)]))
                   .public_key(key.public_key()).serial_number(x509.random_serial_number())
                   .not_valid_before(now - datetime.timedelta(days=1)).not_valid_after(now + datetime.timedelta(days=1))
                   .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True))
        if ca:
            builder = builder.add_extension(x509.KeyUsage(
                digital_signature=True, content_commitment=False, key_encipherment=False, data_encipherment=False,
                key_agreement=False, key_cert_sign=True, crl_sign=True, encipher_only=False, decipher_only=False),
                critical=True)
            builder = builder.add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), False)
        else:
            builder = builder.add_extension(
                x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), critical=False)
            builder = builder.add_extension(
                x509.AuthorityKeyIdentifier.from_issuer_public_key(signer.public_key()), False)
        return builder.sign(signer, hashes.SHA256())

    ca_key, server_key = ec.generate_private_key(ec.SECP256R1()), ec.generate_private_key(ec.SECP256R1())
    ca_cert = build("cobalt test CA", "cobalt test CA", ca_key, ca_key, ca=True)
    server_cert = build("127.0.0.1", "cobalt test CA", server_key, ca_key, ca=False)
    pem = serialization.Encoding.PEM
    (directory / "ca.pem").write_bytes(ca_cert.public_bytes(pem))
    (directory / "server.pem").write_bytes(server_cert.public_bytes(pem))
    (directory / "server.key").write_bytes(server_key.private_bytes(
        pem, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()))
    ca_dir = directory / "certs"
    ca_dir.mkdir()
    (ca_dir / f"{_subject_hash(ca_cert):08x}.0").write_bytes(ca_cert.public_bytes(pem))
    server = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server.load_cert_chain(directory / "server.pem", directory / "server.key")
    return LocalCA(directory / "ca.pem", ca_dir, server)


def _subject_hash(cert: Any) -> int:
    """OpenSSL's `X509_NAME_hash` (what `openssl x509 -hash` prints): how a CA directory is looked up."""
    import subprocess

    from cryptography.hazmat.primitives import serialization

    pem = cert.public_bytes(serialization.Encoding.PEM)
    out = subprocess.run(["openssl", "x509", "-hash", "-noout"], input=pem, capture_output=True, check=True)
    return int(out.stdout.strip(), 16)
