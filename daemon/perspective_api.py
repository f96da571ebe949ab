"""The Perspective-compatible HTTP endpoint: `POST /v1alpha1/comments:analyze`,
`POST /v1alpha1/comments:suggestscore` and the discovery document (`modlens.perspective`).

The same door as the socket (`modlens.protocol.security.check_door`): loopback Host only (unless --allow-remote), no
web page's Origin, each of Host, Origin and the key given once, the request target a path. The key
(`?key=` as Perspective clients send it, or `X-Goog-Api-Key`) is the pairing token or the key from
`modlens pair --api-key`, compared in constant time; the access log's query strings are scrubbed
(`security.SecretScrubber`). Every refusal is in Perspective's error shape, methods other than POST
included. The body is read within BODY_TIMEOUT_S and bounded; what the call answers (its key,
its method, a batch's parts, every failure in Google's shape) is the engine's
(`modlens.perspective.calls`).
"""
from __future__ import annotations

import asyncio
import logging
import ssl
from dataclasses import dataclass, field
from typing import Any, AsyncIterator, Callable

from aiohttp import web
from aiohttp.web_protocol import RequestPayloadError

from modlens.live import LiveService
from modlens.perspective import calls, discovery, errors
from modlens.perspective.calls import ANALYZE_PATH, BATCH_PATH, KEY_HEADER, SUGGEST_PATH
from modlens.perspective.dropin import door
from modlens.perspective.errors import PerspectiveError, method_not_found
from modlens.perspective.keys import KeySource
from modlens.perspective.service import Analyzer
from modlens.protocol.security import check_door

log = logging.getLogger("modlens.daemon")

@dataclass
class PerspectiveHost:
    """What the endpoint needs of the daemon's app (`app.create_app` builds it)."""
    token: Callable[[], str]        # the pairing token, re-read on rotation
    allow_remote: bool              # --allow-remote: any Host header
    closing: Callable[[], bool]     # the daemon is shutting down
    live: Callable[[], LiveService]  # the live service: valid once the app's resources started
    api_key: KeySource = field(default_factory=KeySource)  # the daemon's log scrubber removes it too
    # the TLS contexts of `serve --perspective-proxy` (daemon/perspective_proxy.py): a connection made
    # with one of them is the drop-in's, and there, and only there, the Host is Google's
    drop_in: list[ssl.SSLContext] = field(default_factory=list)
    # ... and the request handlers of its plain connections (clients that send `POST https://...` to a proxy)
    drop_in_plain: set[Any] = field(default_factory=set)


HOST = web.AppKey("perspective_host", PerspectiveHost)
ANALYZER = web.AppKey("perspective_analyzer", Analyzer)
API_KEY = web.AppKey("perspective_api_key", KeySource)
# a client that has not sent its whole body this long after its headers is answered and dropped
# (the header and idle timeouts are the server's, `daemon.app.SERVER_OPTIONS`)
BODY_TIMEOUT_S = 10.0


def add_routes(app: web.Application, host: PerspectiveHost) -> None:
    """Registers the endpoint; its analyzer is built after the app's live service (cleanup_ctx order)."""
    app[HOST] = host
    app[API_KEY] = host.api_key
    app.cleanup_ctx.append(_analyzer_ctx)
    app.router.add_post(ANALYZE_PATH, analyze_handler)
    app.router.add_post(SUGGEST_PATH, suggest_handler)
    app.router.add_post(BATCH_PATH, batch_handler)
    for path in (ANALYZE_PATH, SUGGEST_PATH, BATCH_PATH):  # GET, PUT, ...: Google's JSON, not aiohttp's plain 405
        app.router.add_route("*", path, other_method_handler)
    for path in discovery.PATHS:
        app.router.add_get(path, discovery_handler)


async def _analyzer_ctx(app: web.Application) -> AsyncIterator[None]:
    live = app[HOST].live()
    app[ANALYZER] = Analyzer(live.study, live.engine, live.write, live.detector_ids)
    yield
    await app[ANALYZER].drain()  # scores submitted after their answer, committed before the writer stops


def _via_drop_in(request: web.Request) -> bool:
    """Did the request come through `serve --perspective-proxy` (TLS with its context, or one of its
    plain connections)?"""
    host = request.app[HOST]
    tls = request.transport.get_extra_info("sslcontext") if request.transport is not None else None
    return tls in host.drop_in or request.protocol in host.drop_in_plain


def _door(request: web.Request) -> PerspectiveError | None:
    """The socket's door (`security.check_door`: target, repeated headers, Host, Origin), answered in
    Perspective's shape. On the drop-in's connections the Host is Google's, and only there."""
    target, drop_in_host = door(request.raw_path, _via_drop_in(request))
    refusal = check_door(request.headers, target, allow_remote_host=request.app[HOST].allow_remote,
                         single=("Host", "Origin", KEY_HEADER), drop_in_host=drop_in_host)
    return None if refusal is None else errors.door_refusal(refusal.status, refusal.reason)


def _keys(app: web.Application) -> tuple[calls.Key, ...]:
    return app[HOST].token, app[API_KEY]


def _answer(err: PerspectiveError) -> web.Response:
    response = web.json_response(err.body(), status=err.code)
    if err.status == "DEADLINE_EXCEEDED":
        response.force_close()  # the rest of a body that stalled is not waited for
    return response


async def _answer_failed(request: web.Request, err: PerspectiveError) -> web.Response:
    """A call's failure answered. The 504 of a stalled body is sent now and the connection closed
    with it (the transport closes once the answer is flushed). Returning the answer alone would not
    close it: aiohttp first reads ("lingers" over) the rest of the unread body for up to its
    lingering time, 10 s more."""
    response = _answer(err)
    if err.status != "DEADLINE_EXCEEDED":
        return response
    await response.prepare(request)
    await response.write_eof()
    request.protocol.force_close()
    return response


async def _raw_body(request: web.Request, *, batch: bool = False) -> bytes:
    try:
        async with asyncio.timeout(BODY_TIMEOUT_S):
            raw = await request.read()
    except web.HTTPRequestEntityTooLarge:
        raise (errors.batch_too_long(request.client_max_size) if batch else errors.body_too_long()) from None
    except TimeoutError:
        raise errors.body_late(BODY_TIMEOUT_S) from None
    except (ConnectionError, RequestPayloadError):
        raise errors.body_cut() from None
    return raw


async def _call(request: web.Request, path: str) -> web.Response:
    offered = [*request.query.getall("key", []), *request.headers.getall(KEY_HEADER, [])]
    refusal = _door(request) or calls.key_refusal(offered, *_keys(request.app))
    if refusal is not None:
        log.warning("refused Perspective API call from %s: %s", request.remote, refusal.message)
        return _answer(refusal)
    if request.app[HOST].closing():
        return _answer(PerspectiveError("UNAVAILABLE", "the daemon is shutting down"))
    try:
        raw = await _raw_body(request)
        return web.json_response(await calls.answer(request.app[ANALYZER], path, raw, request.app[HOST].closing))
    except PerspectiveError as err:
        return await _answer_failed(request, err)


async def analyze_handler(request: web.Request) -> web.Response:
    return await _call(request, ANALYZE_PATH)


async def suggest_handler(request: web.Request) -> web.Response:
    return await _call(request, SUGGEST_PATH)


async def batch_handler(request: web.Request) -> web.Response:
    """`POST /batch` (the discovery document's `batchPath`): googleapiclient's batch, behind the
    door; each part with its own key (`calls.answer_batch`)."""
    refusal = _door(request)
    if refusal is None and request.app[HOST].closing():
        refusal = PerspectiveError("UNAVAILABLE", "the daemon is shutting down")
    if refusal is not None:
        return _answer(refusal)
    try:
        raw = await _raw_body(request, batch=True)
        content_type, data = await calls.answer_batch(request.app[ANALYZER], request.headers.get("Content-Type"), raw,
                                                      _keys(request.app), request.app[HOST].closing)
    except PerspectiveError as err:
        return await _answer_failed(request, err)
    return web.Response(body=data, headers={"Content-Type": content_type})


async def other_method_handler(request: web.Request) -> web.Response:
    """The API's paths take POST only; behind the same doors, any other method is Google's 404."""
    return _answer(_door(request) or method_not_found())


async def discovery_handler(request: web.Request) -> web.Response:
    """Public like Google's (no key needed: it holds nothing secret), behind the same Host/Origin checks."""
    refusal = _door(request)
    if refusal is not None:
        return _answer(refusal)
    return web.json_response(discovery.document(f"{request.scheme}://{request.host}/"))
