"""One input policy for every listener of the daemon (docs/PROTOCOL.md, at the top): invalid
UTF-8 in a text frame is answered with `bad_json` and the socket stays open; a malformed HTTP
request gets a 400 and one counted log line, no traceback; a client that sends its request head a
byte at a time is closed by the header timeout. Loopback only, a few sockets, bounded in time."""
from __future__ import annotations

import asyncio
import json
import logging
import time

import aiohttp
import pytest

from daemon_helpers import TOKEN, Client, connect, running_daemon

import modlens.daemon.app as daemon_app

pytestmark = pytest.mark.timeout(90)


async def _raw(port: int, data: bytes, read_s: float = 5.0) -> bytes:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(data)
    await writer.drain()
    try:
        return await asyncio.wait_for(reader.read(4096), read_s)
    finally:
        writer.close()


async def test_invalid_utf8_text_frame_gets_bad_json_and_the_socket_stays_open(tmp_path):
    async with running_daemon(tmp_path) as (url, _app):
        async with connect(url) as ws:
            client = Client(ws)
            await client.hello()
            for raw in (b"\xff\xfe not utf-8", b'{"type": "ping", "id": "p\xc3"}', b"\xed\xa0\x80"):  # the last: a surrogate
                await ws.send(raw, text=True)  # a TEXT frame whose payload is not UTF-8
                answer = await client.recv()
                assert answer["type"] == "error" and answer["code"] == "bad_json" and "UTF-8" in answer["message"]
            pong = await client.request({"type": "ping", "id": "still-open"})
            assert pong["type"] == "pong"


MALFORMED = [
    b"GET /status HTTP/1.1 extra\r\nHost: 127.0.0.1\r\n\r\n",           # bad request line
    b"G\x01T /status HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n",              # bad method
    b"GET /status HTTP/1.1\r\nHost : 127.0.0.1\r\n\r\n",                # space before the colon
    b"GET /status HTTP/1.1\r\nHost: 127.0.0.1\r\nX: a\x00b\r\n\r\n",   # NUL in a header value
    b"GET /" + b"a" * 70_000 + b" HTTP/1.1\r\n\r\n",                    # request line too long
    b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03",                    # TLS on the plain port
]


async def test_malformed_requests_are_one_counted_line_each_without_traceback(tmp_path, caplog):
    caplog.set_level(logging.DEBUG)
    async with running_daemon(tmp_path) as (url, app):
        port = int(url.split(":")[2].split("/")[0])
        for raw in MALFORMED:
            assert (await _raw(port, raw)).split(b" ")[1] == b"400"
        async with aiohttp.ClientSession() as s:
            async with s.get(f"http://127.0.0.1:{port}/status",
                             headers={"Origin": "chrome-extension://abcdefghijklmnopabcdefghijklmnop",
                                      "Authorization": f"Bearer {TOKEN}"}) as r:
                status = json.loads(await r.text()) if r.status == 200 else None
    assert app[daemon_app.STATE].malformed_requests == len(MALFORMED)
    if status is not None:  # /status shows the count to whoever may read it
        assert status["malformed_requests"] == len(MALFORMED)
    lines = [r for r in caplog.records if r.getMessage().startswith("malformed HTTP request")]
    assert len(lines) == len(MALFORMED)
    assert not [r for r in caplog.records if r.name == "aiohttp.access" and '"UNKNOWN /' in r.getMessage()]
    assert all(r.exc_info is None and "\n" not in r.getMessage() for r in lines)
    assert "Traceback" not in caplog.text and "Error handling request" not in caplog.text


async def test_a_slow_header_client_is_closed_by_the_header_timeout(tmp_path, monkeypatch):
    monkeypatch.setattr(daemon_app, "HEADER_TIMEOUT_S", 1.5)  # the mechanism; the bench times the real one
    async with running_daemon(tmp_path) as (url, _app):
        port = int(url.split(":")[2].split("/")[0])
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        started, closed_after = time.monotonic(), None
        try:
            for byte in b"GET /status HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: " + b"a" * 40:
                writer.write(bytes([byte]))
                await writer.drain()
                try:  # the server closing shows as EOF
                    if await asyncio.wait_for(reader.read(1), 0.4) == b"":
                        closed_after = time.monotonic() - started
                        break
                except asyncio.TimeoutError:
                    pass
        except ConnectionError:
            closed_after = time.monotonic() - started
        finally:
            writer.close()
    assert closed_after is not None and 1.4 <= closed_after <= 3.5, closed_after


async def test_an_idle_connection_is_closed_and_a_busy_one_is_not(tmp_path, monkeypatch):
    """The timer is for waiting on a request head: an open WebSocket (a request being served) is
    never closed by it."""
    monkeypatch.setattr(daemon_app, "HEADER_TIMEOUT_S", 1.0)
    async with running_daemon(tmp_path) as (url, _app):
        port = int(url.split(":")[2].split("/")[0])
        async with connect(url) as ws:
            client = Client(ws)
            await client.hello()
            # an idle connection opened after the WebSocket: once the timer has closed it, the WebSocket's
            # own timer, had it one, would have fired too (the signal that the wait is long enough)
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
            assert await asyncio.wait_for(reader.read(1), 4) == b""  # idle, no request: closed
            writer.close()
            assert (await client.request({"type": "ping", "id": "p"}))["type"] == "pong"


async def test_a_stalled_perspective_body_gets_504_and_the_socket_is_closed_with_it(tmp_path, monkeypatch, caplog):
    """docs/PERSPECTIVE.md: a body that has not arrived BODY_TIMEOUT_S after its headers gets 504
    DEADLINE_EXCEEDED and the connection is closed then, not after aiohttp's lingering read of the
    rest (10 s more)."""
    from modlens.daemon import perspective_api

    caplog.set_level(logging.DEBUG)
    monkeypatch.setattr(perspective_api, "BODY_TIMEOUT_S", 1.0)
    async with running_daemon(tmp_path) as (url, _app):
        port = int(url.split(":")[2].split("/")[0])
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(f"POST {perspective_api.ANALYZE_PATH}?key={TOKEN} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
                     "Content-Type: application/json\r\nContent-Length: 400\r\n\r\n".encode() + b'{"comment": ')
        await writer.drain()
        started, received, answered, closed = time.monotonic(), b"", None, None
        try:
            while closed is None:
                chunk = await asyncio.wait_for(reader.read(4096), 15)
                now = time.monotonic() - started
                if not chunk:
                    closed = now
                received += chunk
                if answered is None and b"\r\n\r\n" in received:
                    answered = now
        except ConnectionError:
            closed = time.monotonic() - started
        finally:
            writer.close()
    assert received.startswith(b"HTTP/1.1 504") and b"DEADLINE_EXCEEDED" in received, received[:300]
    assert answered is not None and 0.9 <= answered <= 3.0, answered
    assert closed - answered <= 0.5, (answered, closed)
    assert "Traceback" not in caplog.text and "Error handling request" not in caplog.text
