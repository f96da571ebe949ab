"""The Perspective-compatible HTTP endpoint: `POST /v1alpha1/comments:analyze`,
`POST /v1alpha1/comments:suggestscore` and the discovery document (`modlens.perspective`).

The same doors as the socket (`security`): loopback Host only (unless --allow-remote), no web
page's Origin, each of Host, Origin and the key given once, the request target a path. The key
(`?key=` as Perspective clients send it, or `X-Goog-Api-Key`) is the pairing token or the key from
`modlens pair --api-key`, compared in constant time; the access log's query strings are scrubbed
(`security.SecretScrubber`). Every refusal is in Perspective's error shape, methods other than POST
included. The body is read within BODY_TIMEOUT_S and bounded before it is decoded
(`perspective.body`): no input gets a 500.
"""
from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, field
from typing import Any, AsyncIterator, Awaitable, Callable

from aiohttp import web
from aiohttp.web_protocol import RequestPayloadError

from modlens.perspective import body as pbody, discovery, request as preq
from modlens.perspective.errors import PerspectiveError, invalid, key_invalid, key_missing, method_not_found
from modlens.perspective.keys import KeySource, accepted
from modlens.perspective.service import Analyzer
from modlens.daemon.security import origin_allowed
from modlens.live import LiveService
from modlens.netutil import host_header_is_loopback as host_is_loopback

log = logging.getLogger("modlens.daemon")

@dataclass
class PerspectiveHost:
    """What the endpoint needs of the daemon's app (`app.create_app` builds it)."""
    token: Callable[[], str]        # the pairing token, re-read on rotation
    allow_remote: bool              # --allow-remote: any Host header
    closing: Callable[[], bool]     # the daemon is shutting down
    live: Callable[[], LiveService]  # the live service: valid once the app's resources started
    api_key: KeySource = field(default_factory=KeySource)  # the daemon's log scrubber removes it too


HOST = web.AppKey("perspective_host", PerspectiveHost)
ANALYZER = web.AppKey("perspective_analyzer", Analyzer)
API_KEY = web.AppKey("perspective_api_key", KeySource)
ANALYZE_PATH = "/v1alpha1/comments:analyze"
SUGGEST_PATH = "/v1alpha1/comments:suggestscore"
KEY_HEADER = "X-Goog-Api-Key"
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
    for path in (ANALYZE_PATH, SUGGEST_PATH):  # GET, PUT, ...: Google's JSON, not aiohttp's plain 405
        app.router.add_route("*", path, other_method_handler)
    for path in discovery.PATHS:
        app.router.add_get(path, discovery_handler)


async def _analyzer_ctx(app: web.Application) -> AsyncIterator[None]:
    live = app[HOST].live()
    app[ANALYZER] = Analyzer(live.study, live.engine, live.write, live.detector_ids)
    yield
    await app[ANALYZER].drain()  # scores submitted after their answer, committed before the writer stops


def _door(request: web.Request) -> PerspectiveError | None:
    """The socket's Host/Origin/target checks, answered in Perspective's shape."""
    target = request.raw_path
    if not target.startswith("/") or target.startswith("//"):
        return invalid("the request target must be a path such as /v1alpha1/comments:analyze")
    for name in ("Host", "Origin", KEY_HEADER):
        if len(request.headers.getall(name, [])) > 1:
            return PerspectiveError("PERMISSION_DENIED", f"header {name} given more than once")
    if not request.app[HOST].allow_remote and not host_is_loopback(request.headers.get("Host")):
        return PerspectiveError("PERMISSION_DENIED", "Host must be a loopback address (127.0.0.1, localhost, [::1])")
    if not origin_allowed(request.headers.get("Origin")):
        return PerspectiveError("PERMISSION_DENIED", "requests from web pages are refused: call the API from a "
                                "program, not from a page's JavaScript")
    return None


def _key_refusal(request: web.Request) -> PerspectiveError | None:
    offered = [*request.query.getall("key", []), *request.headers.getall(KEY_HEADER, [])]
    if not offered:
        return key_missing()
    if len(offered) > 1 or not accepted(offered[0], request.app[HOST].token(), request.app[API_KEY]()):
        return key_invalid()
    return None


def _answer(err: PerspectiveError) -> web.Response:
    response = web.json_response(err.body(), status=err.code)
    if err.status == "DEADLINE_EXCEEDED":
        response.force_close()  # the rest of a body that stalled is not waited for
    return response


async def _answer_and_close(request: web.Request, err: PerspectiveError) -> web.Response:
    """The 504 of a stalled body, sent now and the connection closed with it (the transport closes
    once the answer is flushed). Returning the answer alone would not close it: aiohttp first reads
    ("lingers" over) the rest of the unread body for up to its lingering time, 10 s more."""
    response = _answer(err)
    await response.prepare(request)
    await response.write_eof()
    request.protocol.force_close()
    return response


async def _body(request: web.Request) -> Any:
    try:
        async with asyncio.timeout(BODY_TIMEOUT_S):
            raw = await request.read()
    except web.HTTPRequestEntityTooLarge:
        raise invalid("Comment text too long: the request body is larger than this server accepts.",
                      "COMMENT_TOO_LONG") from None
    except TimeoutError:
        raise PerspectiveError("DEADLINE_EXCEEDED", f"The request body did not arrive within {BODY_TIMEOUT_S:g} s.") from None
    except (ConnectionError, RequestPayloadError):  # the client left before its Content-Length was sent
        raise invalid("The request body ended before its declared length.") from None
    return pbody.decode(raw)


async def _call(request: web.Request, answer: Callable[[Analyzer, Any], Awaitable[dict[str, Any]]]) -> web.Response:
    refusal = _door(request) or _key_refusal(request)
    if refusal is not None:
        log.warning("refused Perspective API call from %s: %s", request.remote, refusal.message)
        return _answer(refusal)
    if request.app[HOST].closing():
        return _answer(PerspectiveError("UNAVAILABLE", "the daemon is shutting down"))
    try:
        return web.json_response(await answer(request.app[ANALYZER], await _body(request)))
    except PerspectiveError as err:
        return await _answer_and_close(request, err) if err.status == "DEADLINE_EXCEEDED" else _answer(err)
    except Exception as err:  # a bug: the client gets Perspective's 500, the log the traceback
        log.exception("internal error on %s", request.path)
        return _answer(PerspectiveError("INTERNAL", f"{type(err).__name__}: {err}"))


async def analyze_handler(request: web.Request) -> web.Response:
    async def answer(analyzer: Analyzer, body: Any) -> dict[str, Any]:
        return await analyzer.analyze(preq.parse_analyze(body, analyzer.config.max_text_bytes, analyzer.names))
    return await _call(request, answer)


async def suggest_handler(request: web.Request) -> web.Response:
    async def answer(analyzer: Analyzer, body: Any) -> dict[str, Any]:
        return await analyzer.suggest(preq.parse_suggest(body, analyzer.config.max_text_bytes, analyzer.names))
    return await _call(request, answer)


async def other_method_handler(request: web.Request) -> web.Response:
    """The API's paths take POST only; behind the same doors, any other method is Google's 404."""
    return _answer(_door(request) or method_not_found())


async def discovery_handler(request: web.Request) -> web.Response:
    """Public like Google's (no key needed: it holds nothing secret), behind the same Host/Origin checks."""
    refusal = _door(request)
    if refusal is not None:
        return _answer(refusal)
    return web.json_response(discovery.document(f"{request.scheme}://{request.host}/"))
