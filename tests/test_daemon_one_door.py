"""One handshake check for every route of the daemon: the socket (`/ws`) and `/status` are refused
by the same middleware with the same status and reason, and the Perspective endpoint puts its own
key behind the same door (target, repeated headers, Host, Origin), answered in Google's shape.
Raw HTTP on a real loopback socket, so headers can be repeated and targets absolute."""
from __future__ import annotations

import asyncio
import json

import pytest

from daemon_helpers import TOKEN, running_daemon

WEB = "https://evil.example"
ANALYZE = "/v1alpha1/comments:analyze"


async def _ask(port: int, target: str, *lines: str, host: str | None = None, body: bytes = b"") -> tuple[int, dict]:
    """(status, JSON body) of one raw request."""
    head = [f"{'POST' if body else 'GET'} {target} HTTP/1.1", f"Host: {host or f'127.0.0.1:{port}'}",
            "Connection: close", *lines] + ([f"Content-Length: {len(body)}", "Content-Type: application/json"]
                                             if body else [])
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(("\r\n".join(head) + "\r\n\r\n").encode() + body)
    await writer.drain()
    data = await asyncio.wait_for(reader.read(), 10)
    writer.close()
    head_bytes, _, payload = data.partition(b"\r\n\r\n")
    return int(head_bytes.split(b" ", 2)[1]), json.loads(payload or b"null")


HOSTILE = [  # (extra header lines, Host, target suffix, expected status)
    ([f"Authorization: Bearer {TOKEN}"], "evil.example", "", 403),       # DNS rebinding
    ([f"Authorization: Bearer {TOKEN}", f"Origin: {WEB}"], None, "", 403),  # a web page
    ([f"Authorization: Bearer {TOKEN}", "Origin: chrome-extension://abcdefghijklmnopabcdefghijklmnop",
      f"Origin: {WEB}"], None, "", 403),                                  # two Origin headers
    ([], None, "", 401),                                                  # no token
    (["Authorization: Bearer wrong-token-0000"], None, "", 401),          # a wrong token
    ([f"Authorization: Bearer {TOKEN}"], None, "absolute", 400),          # absolute-form target
]


@pytest.mark.parametrize("lines,host,form,expected", HOSTILE)
async def test_the_socket_and_status_refuse_alike(tmp_path, lines, host, form, expected):
    async with running_daemon(tmp_path) as (url, _app):
        port = int(url.rsplit(":", 1)[1].split("/")[0])
        answers = []
        for path in ("/ws", "/status"):
            target = f"http://127.0.0.1:{port}{path}" if form == "absolute" else path
            answers.append(await _ask(port, target, *lines, host=host))
    assert answers[0] == answers[1] and answers[0][0] == expected, answers
    assert answers[0][1]["error"]


async def test_a_paired_client_gets_its_status(tmp_path):
    async with running_daemon(tmp_path) as (url, _app):
        port = int(url.rsplit(":", 1)[1].split("/")[0])
        status, body = await _ask(port, "/status", f"Authorization: Bearer {TOKEN}")
    assert status == 200 and body["server"] == "modlens" and body["queue"]["connections"] == 0


@pytest.mark.parametrize("lines,host,form,expected", [h for h in HOSTILE if h[3] != 401])
async def test_the_perspective_endpoint_has_the_same_door(tmp_path, lines, host, form, expected):
    async with running_daemon(tmp_path) as (url, _app):
        port = int(url.rsplit(":", 1)[1].split("/")[0])
        status_target = f"http://127.0.0.1:{port}/status" if form == "absolute" else "/status"
        socket_status, socket_body = await _ask(port, status_target, *lines, host=host)
        target = f"http://127.0.0.1:{port}{ANALYZE}?key={TOKEN}" if form == "absolute" else f"{ANALYZE}?key={TOKEN}"
        lines = [line for line in lines if not line.startswith("Authorization")]
        status, body = await _ask(port, target, *lines, host=host, body=b'{"comment": {"text": "hi"}}')
    assert status == expected == socket_status
    assert body["error"]["message"] == socket_body["error"]  # the same reason, in Google's shape
