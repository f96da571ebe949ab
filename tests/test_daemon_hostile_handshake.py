"""Hostile handshakes against a real `modlens serve` (the newer cases, and what already held):
raw HTTP requests on a loopback socket, so headers can be duplicated, non-ASCII or malformed in
ways no WebSocket client library would send. Nothing hostile is upgraded, nothing answers 500,
and no token (right or wrong) reaches the daemon's log."""
from __future__ import annotations

import socket
import time

import pytest

from modlens import pairing

from daemon_helpers import serve_process, write_study

WRONG = "wrong-token-Zq7xKp3mWv9"
EXT = "chrome-extension://abcdefghijklmnopabcdefghijklmnop"


@pytest.fixture(scope="module")
def daemon(tmp_path_factory):
    """(port, token, serve.log path) of one real `modlens serve`."""
    home = tmp_path_factory.mktemp("handshake-home")
    token = pairing.ensure(home / "pairing-token")
    study = write_study(home / "study.toml", [])
    proc, info = serve_process(home, "--config", str(study), "--db", str(home / "log.sqlite"))
    yield info["port"], token, home / "serve.log"
    proc.terminate()
    proc.wait(15)


def request(port: int, head: bytes) -> int:
    """Send raw request bytes; the HTTP status of the answer (0: closed without one)."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.sendall(head)
        data = b""
        while b"\r\n" not in data:
            chunk = s.recv(4096)
            if not chunk:
                return 0
            data += chunk
    return int(data.split(b" ", 2)[1])


def upgrade(port: int, *lines: str | bytes, target: str = "/ws", host: str | None = None) -> bytes:
    host = f"127.0.0.1:{port}" if host is None else host
    head = [f"GET {target} HTTP/1.1".encode(), f"Host: {host}".encode(),
            b"Upgrade: websocket", b"Connection: Upgrade", b"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==",
            b"Sec-WebSocket-Version: 13"]
    head += [x if isinstance(x, bytes) else x.encode() for x in lines]
    return b"\r\n".join(head) + b"\r\n\r\n"


def proto(token: str | bytes) -> bytes:
    return b"Sec-WebSocket-Protocol: modlens.v1, modlens.token." + (token if isinstance(token, bytes) else token.encode())


def test_a_good_handshake_is_upgraded(daemon):
    port, token, _ = daemon
    assert request(port, upgrade(port, proto(token), f"Origin: {EXT}")) == 101
    assert request(port, upgrade(port, f"Authorization: Bearer {token}")) == 101


@pytest.mark.parametrize("token", [b"\xff\xfe", "é".encode(), b"caf\xc3\xa9-\xed\xa0\x80", b"\x80" * 43])
def test_non_ascii_token_bytes_are_refused_not_a_server_error(daemon, token):
    port, _, _ = daemon
    assert request(port, upgrade(port, proto(token), f"Origin: {EXT}")) == 401
    assert request(port, upgrade(port, b"Authorization: Bearer " + token)) == 401


@pytest.mark.parametrize("origins", [
    [EXT, "https://evil.example"],
    ["https://evil.example", EXT],
    [EXT, EXT],
])
def test_two_origin_headers_are_refused(daemon, origins):
    port, token, _ = daemon
    assert request(port, upgrade(port, proto(token), *(f"Origin: {o}" for o in origins))) == 403


def test_two_host_headers_are_refused(daemon):
    port, token, _ = daemon
    assert request(port, upgrade(port, proto(token), "Host: evil.example")) in (400, 403)


@pytest.mark.parametrize("target", ["http://evil.example/ws", "http://127.0.0.1/ws", "//evil.example/ws"])
def test_absolute_form_targets_are_refused(daemon, target):
    port, token, _ = daemon
    assert request(port, upgrade(port, proto(token), target=target)) in (400, 403, 404)


# --- what already held (a review's 173 hostile handshakes: none accepted) -------------------

@pytest.mark.parametrize("host, origin, with_token", [
    ("evil.example", EXT, True),                   # DNS rebinding: the page's own name as Host
    ("localhost.evil.example", EXT, True),
    ("127.0.0.1.nip.io", EXT, True),
    ("192.168.1.4", EXT, True),
    ("", EXT, True),
    (None, "https://www.youtube.com", True),      # web pages always send their origin
    (None, "http://127.0.0.1:8765", True),
    (None, "null", True),                          # sandboxed frames
    (None, "chrome-extension://", True),
    (None, "file://", True),
    (None, EXT, False),                            # no token
])
def test_hostile_handshakes_are_refused(daemon, host, origin, with_token):
    port, token, _ = daemon
    lines = [f"Origin: {origin}"] + ([proto(token)] if with_token else [])
    assert request(port, upgrade(port, *lines, host=host)) in (400, 401, 403)


@pytest.mark.parametrize("lines", [
    [proto(WRONG)], [f"Authorization: Bearer {WRONG}"], [proto("")], ["Authorization: Basic dXNlcjpwYXNz"],
    ["X-Padding: " + "a" * 70_000],                # oversized header
    ["X-Padding: a"] * 400,                        # too many headers
])
def test_wrong_tokens_and_oversized_headers_are_refused(daemon, lines):
    port, _, _ = daemon
    assert request(port, upgrade(port, f"Origin: {EXT}", *lines)) in (400, 401, 403, 431)


# --- no secret in the log --------------------------------------------------------------------

def test_no_token_reaches_the_log(daemon):
    """The access log used to write `?token=` queries, and aiohttp's tracebacks for malformed
    requests (BadStatusLine, invalid header) quoted the raw Authorization header."""
    port, token, log_path = daemon
    for secret in (token, WRONG):
        request(port, f"GET /status?token={secret} HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                      f"Authorization: Bearer {token}\r\n\r\n".encode())
        request(port, upgrade(port, f"Origin: {EXT}", proto(token), target=f"/ws?token={secret}&x=1"))
        for raw in (f"GET /ws HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization : Bearer {secret}\r\n\r\n",
                    f"GET /ws HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {secret}\x01\r\n\r\n",
                    f"GET /ws HTTP/1.1 x\r\nAuthorization: Bearer {secret}\r\n\r\n",
                    f"GET /ws HTTP/1.1\nAuthorization: Bearer {secret}\n\x00\n\n",
                    f"GET /ws HTTP/1.1\r\nHost: 127.0.0.1\r\nSec-WebSocket-Protocol: modlens.token.{secret}\x7f\r\n\r\n",
                    f"GET /ws?token={secret}\x01 HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n",
                    f"G\x01T /ws?access_token={secret} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"):
            assert request(port, raw.encode("latin-1")) == 400
    time.sleep(0.5)  # the daemon flushes its log lines
    log = log_path.read_text(encoding="utf-8", errors="replace")
    assert "GET /status" in log and "400" in log  # the requests were logged, without their secrets
    leaked = [line for line in log.splitlines() if token in line or WRONG in line]
    assert not leaked, leaked[:5]
