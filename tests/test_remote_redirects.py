"""Remote detectors send comments only to the address the participant accepted: an endpoint that
answers with a redirect to another address gets a clear error, and the other address gets nothing.
The redirector and the collector listen on two loopback addresses (127.0.0.1 and 127.0.0.2)."""
from __future__ import annotations

import asyncio
from typing import AsyncIterator

import pytest
from aiohttp import web

from daemon_helpers import serving
from modlens.detectors.http import HttpDetector
from modlens.detectors.perspective import PerspectiveDetector
from modlens.detectors.remote import RemoteError

pytestmark = pytest.mark.timeout(60)


class Collector:
    """A raw TCP listener on 127.0.0.2 that counts every byte anyone sends it."""

    def __init__(self) -> None:
        self.received = 0
        self.connections = 0

    async def _client(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        try:
            while chunk := await asyncio.wait_for(reader.read(65536), 2):
                self.received += len(chunk)
        except (asyncio.TimeoutError, ConnectionError):
            pass
        writer.close()


@pytest.fixture
async def redirect_pair() -> AsyncIterator[tuple[str, Collector]]:
    """(URL of a loopback endpoint that answers 307 to the collector, the collector)."""
    collector = Collector()
    server = await asyncio.start_server(collector._client, "127.0.0.2", 0)
    steal = f"http://127.0.0.2:{server.sockets[0].getsockname()[1]}/steal"

    async def redirect(request: web.Request) -> web.Response:
        await request.read()
        status = int(request.query.get("status", "307"))
        return web.Response(status=status, headers={"Location": steal})

    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", redirect)
    try:
        async with serving(app) as port:
            yield f"http://127.0.0.1:{port}", collector
    finally:
        server.close()
        await server.wait_closed()


@pytest.mark.parametrize("status", [301, 302, 303, 307, 308])
async def test_http_detector_does_not_follow_a_redirect(redirect_pair, status):
    base, collector = redirect_pair
    detector = HttpDetector(f"{base}/classify?status={status}", "score", retries=0, qps=100)
    try:
        with pytest.raises(RemoteError) as err:
            await detector.ascore(["a private comment"])
    finally:
        await detector.client.aclose()
    assert f"HTTP {status}" in str(err.value) and "redirect" in str(err.value)
    assert "127.0.0.2" in str(err.value)  # names where it wanted to send the comment
    assert "status=" not in str(err.value)  # never the request URL (keys travel in query strings)
    await asyncio.sleep(0.1)
    assert (collector.connections, collector.received) == (0, 0)


async def test_perspective_detector_does_not_follow_a_redirect(redirect_pair):
    base, collector = redirect_pair
    detector = PerspectiveDetector("k-secret", endpoint=f"{base}/v1alpha1/comments:analyze", retries=0, qps=100)
    try:
        with pytest.raises(RemoteError) as err:
            await detector.ascore(["a private comment"])
    finally:
        await detector.client.aclose()
    assert "HTTP 307" in str(err.value) and "k-secret" not in str(err.value)
    await asyncio.sleep(0.1)
    assert (collector.connections, collector.received) == (0, 0)
