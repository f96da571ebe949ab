"""The drop-in's socket for clients that hard-code `https://commentanalyzer.googleapis.com`
(`modlens serve --perspective-proxy`): an HTTPS proxy on loopback that answers `CONNECT` for that
one host, and only by answering itself (what it answers and refuses: `modlens.perspective.dropin`).
It never opens a connection anywhere: after `200 Connection established` the client's TLS is
terminated here with the certificate of the local, name-constrained authority
(`modlens.perspective.tls`) and its requests go to the daemon's own app, over that TLS connection,
like any other call (key, Origin, body limits, logging).

The daemon's app accepts the Host `commentanalyzer.googleapis.com` only on the connections made
here (`perspective_api.PerspectiveHost.drop_in`); on its plain port the Host must still be a
loopback address.
"""
from __future__ import annotations

import asyncio
import logging
import socket
import ssl
from typing import Any, Callable

from modlens.daemon.perspective_api import HOST
from modlens.netutil import is_loopback
from modlens.perspective import tls
from modlens.perspective.dropin import (CONNECTED, HEAD_LIMIT, INCOMPLETE, TLS_HELLO, check_connect, head as head_of,
                                        refusal)

log = logging.getLogger("modlens.daemon")
HEAD_TIMEOUT_S = 10.0    # as for the daemon's own request heads


class DropIn:
    """The proxy's listening socket and its connections (one task each until TLS is set up)."""

    def __init__(self, protocol_factory: Callable[[], Any], context: ssl.SSLContext,
                 plain: set[Any] | None = None) -> None:
        self.protocol_factory = protocol_factory  # the daemon's aiohttp server (AppRunner.server)
        self.context = context
        # the request handlers of plain (absolute-form) drop-in connections: the endpoint's doors
        # accept Google's Host on them (`PerspectiveHost.drop_in_plain`)
        # (aiohttp's handlers take no weak references: the closed ones are dropped as new ones come)
        self.plain = plain if plain is not None else set()
        self._sock: socket.socket | None = None
        self._accepting: asyncio.Task[None] | None = None
        self._pending: set[asyncio.Task[None]] = set()
        self.material: Any = None  # the tls.Material it answers with (start_drop_in)

    @property
    def port(self) -> int:
        assert self._sock is not None
        return int(self._sock.getsockname()[1])

    def start(self, host: str, port: int) -> None:
        if not is_loopback(host):
            raise ValueError(f"the Perspective drop-in listens on loopback only, not {host}")
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        self._sock = socket.create_server((host, port), family=family)
        self._sock.setblocking(False)
        self._accepting = asyncio.get_running_loop().create_task(self._accept())

    async def close(self) -> None:
        if self._accepting is not None:
            self._accepting.cancel()
        for task in list(self._pending):
            task.cancel()
        await asyncio.gather(*([self._accepting] if self._accepting else []), *self._pending, return_exceptions=True)
        if self._sock is not None:
            self._sock.close()

    async def _accept(self) -> None:
        loop = asyncio.get_running_loop()
        assert self._sock is not None
        while True:
            conn, peer = await loop.sock_accept(self._sock)
            task = loop.create_task(self._connection(conn, peer))
            self._pending.add(task)
            task.add_done_callback(self._pending.discard)

    async def _connection(self, conn: socket.socket, peer: Any) -> None:
        loop = asyncio.get_running_loop()
        handed_over = False
        try:
            if not is_loopback(str(peer[0])):  # listening on loopback makes this impossible; kept as a door
                return
            try:
                async with asyncio.timeout(HEAD_TIMEOUT_S):
                    head = await _peek_head(conn)
            except TimeoutError:
                return
            if head is None:
                await loop.sock_sendall(conn, refusal(400, "Bad Request", "request head too long or incomplete"))
                return
            if head == TLS_HELLO:
                # TLS straight to the proxy, the request inside naming Google's URL (axios 0.18 under
                # the npm client does this with an http:// proxy): answered like a tunnel's
                await loop.connect_accepted_socket(self.protocol_factory, conn, ssl=self.context,
                                                   ssl_handshake_timeout=HEAD_TIMEOUT_S)
                handed_over = True
                return
            refused = check_connect(head)
            if refused is not None:
                log.warning("Perspective drop-in refused %s", head.split(b"\r\n", 1)[0][:120].decode("latin-1"))
                await _consume(loop, conn, len(head))
                _discard_buffered(conn)  # a body sent with it: read, so the close is not a reset
                await loop.sock_sendall(conn, refused)
                return
            if not head.startswith(b"CONNECT "):
                # a plain request for Google's URL: the daemon's own server reads it from the socket
                # (it was only peeked at), and its doors know the connection by its handler
                def handler() -> Any:
                    protocol = self.protocol_factory()
                    self.plain.difference_update([p for p in self.plain if getattr(p, "transport", None) is None])
                    self.plain.add(protocol)
                    return protocol
                await loop.connect_accepted_socket(handler, conn)
                handed_over = True
                return
            await _consume(loop, conn, len(head))  # CONNECT's head, peeked; nothing follows until our answer
            await loop.sock_sendall(conn, CONNECTED)
            await loop.connect_accepted_socket(self.protocol_factory, conn, ssl=self.context,
                                               ssl_handshake_timeout=HEAD_TIMEOUT_S)
            handed_over = True
        except (OSError, ssl.SSLError, ConnectionError) as err:  # a client that left, or did not trust us
            log.info("Perspective drop-in connection from %s ended: %s", peer, err)
        except Exception:  # a bug: the connection is closed, the traceback logged
            log.exception("Perspective drop-in connection from %s failed", peer)
        finally:
            if not handed_over:
                conn.close()


async def _peek_head(conn: socket.socket) -> bytes | None:
    """The request head up to its blank line, read without consuming it (a plain request is then
    read again, whole, by the daemon's server); None when it is too long or the client left."""
    while True:
        try:
            data = conn.recv(HEAD_LIMIT + 4, socket.MSG_PEEK)
        except BlockingIOError:
            data = None
        if data == b"":
            return None
        found = head_of(data) if data else INCOMPLETE
        if found != INCOMPLETE:
            return found
        await asyncio.sleep(0.005)  # the rest of the head is on its way (peeking leaves the socket readable)


def _discard_buffered(conn: socket.socket) -> None:
    try:
        while conn.recv(65536):
            pass
    except (BlockingIOError, InterruptedError):
        pass


async def _consume(loop: asyncio.AbstractEventLoop, conn: socket.socket, n: int) -> None:
    while n > 0:
        got = await loop.sock_recv(conn, n)
        if not got:
            raise ConnectionError("the client left")
        n -= len(got)


async def start_drop_in(app: Any, runner: Any, host: str, port: int) -> DropIn:
    """Starts the drop-in beside a started daemon: its TLS context registered with the endpoint's
    doors, its connections handed to the daemon's own aiohttp server."""
    material = tls.ensure()
    context = tls.server_context(material)
    app[HOST].drop_in.append(context)
    drop_in = DropIn(runner.server, context, app[HOST].drop_in_plain)
    drop_in.material = material
    drop_in.start(host, port)
    return drop_in
