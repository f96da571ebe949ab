"""The aiohttp application: one WebSocket endpoint (`/ws`) in front of the live service
(`modlens.live`), `/status`, and the Perspective-compatible API (`perspective_api.py`).

The daemon is the transport: one middleware checks the handshake of its own routes (`paired_only`,
`modlens.protocol.security.check_handshake`); it reads and bounds frames, parses them with `modlens.protocol`,
rate-limits each connection (`session.py`) and routes each message by its type (`HANDLERS`) to
the live service, which does the work. The service and its resources
(study-log writer, engine, recovery) live in one `cleanup_ctx` entry, so they start before the
first connection and stop in reverse order on shutdown.

Every listener keeps one input policy, set on the application itself (`handler_args`), so every
runner of it (`modlens serve`, the tests, the benches) serves with it: a connection that has not
sent a whole request head within HEADER_TIMEOUT_S of opening or of its last answer is closed; a
malformed request (bad request line or header) gets aiohttp's 400 and one log line, counted in
`/status`, never a traceback; bodies and frames are bounded before they are decoded.
"""
from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, AsyncIterator, Awaitable, Callable, Final

from aiohttp import WSCloseCode, WSMsgType, web
from aiohttp.http_exceptions import HttpProcessingError
from aiohttp.web_log import AccessLogger

from modlens import protocol as p
from modlens.config import StudyConfig
from modlens.daemon.perspective_api import PerspectiveHost, add_routes as add_perspective_routes
from modlens.daemon.session import Session
from modlens.detectors.base import Detector
from modlens.engine import Engine
from modlens.live import LiveOptions, LiveService, check_study, join_study, running
from modlens.live.join import StartedOn
from modlens.pairing import matches
from modlens.perspective.keys import KeySource
from modlens.protocol import ErrorCode, ProtocolError
from modlens.protocol.parse import frame_text
from modlens.protocol.security import check_handshake, install_log_scrubber
from modlens.studylog.connection import LogUnwritable

log = logging.getLogger("modlens.daemon")

# Frames up to this multiple of limits.max_message_bytes get a `too_large` answer; beyond it
# aiohttp closes the socket (code 1009) rather than buffer unbounded input.
HARD_FRAME_FACTOR = 4
# aiohttp's keep-alive timer: armed when a connection opens and after each answer, it closes a
# connection still waiting for a complete request head (a slow-header client, an idle keep-alive)
HEADER_TIMEOUT_S = 10.0
# comments messages of one connection in the pipeline at once (`session.py`: back-pressure)
MAX_PENDING_PER_CONNECTION: Final = 8


@dataclass(frozen=True)
class DaemonOptions:
    """The transport's settings (`create_app`'s keyword arguments); `live`: the live service's."""
    token: Callable[[], str]
    live: LiveOptions
    allow_remote: bool
    restart_on_join: Callable[[], None] | None
    started_on: StartedOn | None = None  # the joined pack the study came from (None: none); `join_study` compares

    @property
    def can_join(self) -> bool:
        """Whether the extension may join a study pack here (not `serve --config`): only then does
        a socket read a `join_study` frame as large as a pack."""
        return self.restart_on_join is not None


@dataclass
class DaemonState:
    sockets: dict[web.WebSocketResponse, Session] = field(default_factory=dict)
    closing: bool = False
    malformed_requests: int = 0  # refused by aiohttp's HTTP parser (one log line each)
    join_lock: asyncio.Lock = field(default_factory=asyncio.Lock)  # one join_study at a time
    started_at: str = field(default_factory=lambda: datetime.now(timezone.utc).isoformat(timespec="seconds"))


STUDY = web.AppKey("study", StudyConfig)
OPTIONS = web.AppKey("options", DaemonOptions)
STATE = web.AppKey("state", DaemonState)
ENGINE = web.AppKey("engine", Engine)
PIPELINE = web.AppKey("pipeline", LiveService)  # the live service


class RequestErrorLog:
    """The server logger aiohttp's request handler is given: a malformed request (its parser's
    HttpProcessingError: bad request line, bad header, line too long) is one line, counted; any
    other error keeps its traceback. Logs as `modlens.daemon`, whose scrubber removes secrets."""

    def __init__(self, state: DaemonState) -> None:
        self.state = state

    def _malformed(self, args: tuple[Any, ...], exc_info: Any) -> bool:
        if not isinstance(exc_info, HttpProcessingError):
            return False
        self.state.malformed_requests += 1
        log.info("malformed HTTP request from %s refused (%d): %s", args[0] if args else "?", exc_info.code or 400,
                 ascii(exc_info.message)[:200])
        return True

    def exception(self, msg: str, *args: Any, exc_info: Any = True, **kw: Any) -> None:
        if not self._malformed(args, exc_info):
            log.error(msg, *args, exc_info=exc_info, **kw)

    def debug(self, msg: str, *args: Any, exc_info: Any = None, **kw: Any) -> None:
        if not self._malformed(args, exc_info):  # aiohttp logs a first request's bad method at debug
            log.debug(msg, *args, exc_info=exc_info, **kw)

    def info(self, msg: str, *args: Any, **kw: Any) -> None:
        log.info(msg, *args, **kw)

    def warning(self, msg: str, *args: Any, **kw: Any) -> None:
        log.warning(msg, *args, **kw)

    def error(self, msg: str, *args: Any, **kw: Any) -> None:
        log.error(msg, *args, **kw)


class _AccessLog(AccessLogger):
    """aiohttp's access log, less its second line for a malformed request (a 400 to the
    placeholder request "UNKNOWN /"): RequestErrorLog's line says what was wrong with it."""

    def log(self, request: web.BaseRequest, response: web.StreamResponse, time: float) -> None:
        if not (request.method == "UNKNOWN" and response.status == 400):
            super().log(request, response, time)


def server_options(state: DaemonState) -> dict[str, Any]:
    """aiohttp request-handler options of every listener (see the module's docstring)."""
    return {"keepalive_timeout": HEADER_TIMEOUT_S, "logger": RequestErrorLog(state), "access_log_class": _AccessLog}


# --- background resources -------------------------------------------------------------------

async def _live_ctx(app: web.Application) -> AsyncIterator[None]:
    async with running(app[STUDY], app[OPTIONS].live) as live:
        app[PIPELINE], app[ENGINE] = live, live.engine
        yield


async def _close_sockets(app: web.Application) -> None:
    state = app[STATE]
    state.closing = True
    for ws in list(state.sockets):
        await ws.close(code=WSCloseCode.GOING_AWAY, message=b"modlens daemon shutting down")


# --- the socket --------------------------------------------------------------------------

class Connection:
    """Reads frames from one socket, answers each, runs slow work in tasks."""

    def __init__(self, app: web.Application, ws: web.WebSocketResponse, session: Session):
        self.app, self.ws, self.session = app, ws, session
        self.live = app[PIPELINE]

    async def send(self, message: dict[str, Any]) -> None:
        if self.ws.closed:
            return
        async with self.session.send_lock:
            try:
                await self.ws.send_str(frame_text(message))
            except (ConnectionError, RuntimeError):
                pass  # the client went away; what it sent is already being logged

    async def error(self, err: ProtocolError) -> None:
        self.session.stats["refused"] += 1
        if err.code is ErrorCode.rate_limited:
            self.session.stats["rate_limited"] += 1
        await self.send(err.to_message())

    async def frame(self, raw: str | bytes, binary: bool = False) -> None:
        """Answer one frame. Whatever it holds, the answer is a result or an `error`: nothing a
        client sends may end its socket (only a frame past HARD_FRAME_FACTOR, in aiohttp)."""
        self.session.stats["messages"] += 1
        try:
            await self._frame(raw, binary)
        except Exception as err:  # a bug; the socket stays open and the next frame is read
            log.exception("internal error on a %d-byte frame", len(raw))
            await self.error(ProtocolError(ErrorCode.internal, f"{type(err).__name__}: {err}", p.sniff_id(raw)))

    async def _frame(self, raw: str | bytes, binary: bool) -> None:
        if binary:
            wait = self.session.bucket.take()  # junk costs a token too
            return await self.error(
                ProtocolError(ErrorCode.rate_limited, "too many messages", p.sniff_id(raw), wait) if wait else
                ProtocolError(ErrorCode.bad_json, "binary frames are not accepted: send each message as a JSON "
                              "text frame", p.sniff_id(raw)))
        size = len(raw.encode("utf-8", "surrogatepass")) if isinstance(raw, str) else len(raw)
        joinable = self.app[OPTIONS].can_join
        limit = self.live.frame_limit(raw, size, ready=self.session.ready, joinable=joinable)
        if size > limit:
            return await self.error(ProtocolError(
                ErrorCode.too_large, f"message is {size} bytes; the limit is {limit}", p.sniff_id(raw)))
        try:
            msg = p.parse_client_message(raw)
        except ProtocolError as err:
            wait = self.session.bucket.take()  # junk costs a token too
            if wait:
                err = ProtocolError(ErrorCode.rate_limited, "too many messages", err.id, wait)
            return await self.error(err)
        limit = self.live.message_limit(msg.type, joinable=joinable)  # a larger frame's allowance is its own type's only
        if size > limit:
            return await self.error(ProtocolError(
                ErrorCode.too_large, f"message is {size} bytes; the limit is {limit}", msg.id))
        wait = self.session.admit(msg.type)
        if wait:
            return await self.error(ProtocolError(
                ErrorCode.rate_limited, "too many messages or too much queued work; slow down", msg.id, wait))
        if self.app[STATE].closing:
            return await self.error(ProtocolError(ErrorCode.unavailable, "the daemon is shutting down", msg.id))
        if msg.type != "hello" and not self.session.ready:
            return await self.error(ProtocolError(ErrorCode.hello_required, "send hello first", msg.id))
        await self._guarded(msg, HANDLERS[msg.type](self, msg))

    async def _guarded(self, msg: p.ClientRequest, coro: Awaitable[Any]) -> None:
        """A handler, or its slow work in a task of the session: a failure is answered with its
        error. A study log that cannot be written is `unavailable` (the writer logs that condition
        once, not a traceback per write); anything else unexpected is `internal`, a bug."""
        try:
            await coro
        except ProtocolError as err:
            await self.error(err)
        except asyncio.CancelledError:
            raise
        except LogUnwritable as err:
            await self.error(ProtocolError(ErrorCode.unavailable, f"nothing was stored: {err.message}; "
                                           "send it again later", msg.id))
        except Exception as err:
            log.exception("internal error on %s %s", msg.type, msg.id)
            await self.error(ProtocolError(ErrorCode.internal, f"{type(err).__name__}: {err}", msg.id))

    def _later(self, msg: p.ClientRequest, answer: Awaitable[p.Message]) -> None:
        """Answer `msg` from a task once `answer` is ready, so the next frame is read meanwhile."""
        async def send_answer() -> None:
            await self.send((await answer).dump())
        self.session.spawn(self._guarded(msg, send_answer()))

    # --- one handler per message type (HANDLERS) -----------------------------------------------
    async def hello(self, msg: p.Hello) -> None:
        token = self.app[OPTIONS].token()
        if not token or not matches(msg.token, token):
            raise ProtocolError(ErrorCode.bad_token, "token is not the current pairing token (`modlens pair`)", msg.id)
        if self.session.ready:
            raise ProtocolError(ErrorCode.invalid_fields, "hello: this connection already said hello", msg.id)
        await self.send((await self.live.open_session(self.session, msg)).dump())

    async def comments(self, msg: p.Comments) -> None:
        # the write starts now, so the next frame (a rating of these comments) finds it; its
        # comments_ok follows the commit, from the task, while the next frames are read
        self.session.spawn(self._guarded(msg, self.live.take_comments(self.session, msg, self.send)))

    async def rating(self, msg: p.Rating) -> None:
        self._later(msg, self.live.rate(self.session, msg))

    async def comment_media(self, msg: p.CommentMedia) -> None:
        self._later(msg, self.live.comment_media(self.session, msg))

    async def ping(self, msg: p.Ping) -> None:
        await self.send(p.Pong(id=msg.id, server_time=datetime.now(timezone.utc).isoformat()).dump())

    async def status(self, msg: p.Status) -> None:
        self._later(msg, self._status(msg))

    async def _status(self, msg: p.Status) -> p.StatusOk:
        queue = {"connections": len(self.app[STATE].sockets), "pending_comments": self.session.pending}
        return p.StatusOk(id=msg.id, **await self.live.status(queue))

    async def sync(self, msg: p.Sync) -> None:
        self._later(msg, self.live.sync(self.session, msg))

    async def join_study(self, msg: p.JoinStudy) -> None:
        restart, started = self.app[OPTIONS].restart_on_join, self.app[OPTIONS].started_on
        study = self.app[STUDY]
        # checking and writing a pack (up to 16 MiB) takes seconds: in an executor, so every other
        # socket is answered meanwhile; joins still run one after another, as they did on the loop
        async with self.app[STATE].join_lock:
            answer = await asyncio.get_running_loop().run_in_executor(
                None, lambda: join_study(msg, study, can_join=restart is not None, running_pack=started))
            await self.send(answer.dump())  # before the restart, so the extension learns why the socket closes
            if answer.restarting and restart is not None:
                restart()


# message type -> its handler: every client message of the protocol has one (tests/test_daemon_protocol.py)
HANDLERS: dict[str, Callable[[Connection, Any], Awaitable[None]]] = {
    "hello": Connection.hello, "comments": Connection.comments, "rating": Connection.rating,
    "comment_media": Connection.comment_media, "ping": Connection.ping, "status": Connection.status,
    "join_study": Connection.join_study, "sync": Connection.sync,
}


@web.middleware
async def paired_only(request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]],
                      ) -> web.StreamResponse:
    """The one handshake check of the daemon's own routes (`PAIRED`: the socket and /status),
    before the upgrade: loopback Host, no web page, the pairing token, the paired extension
    (`security.check_handshake`). The Perspective routes keep their own key behind the same door
    (`security.check_door`), answered in Google's shape (`perspective_api.py`)."""
    if request.match_info.handler in PAIRED:
        opts = request.app[OPTIONS]
        refusal = check_handshake(request.headers, opts.token(), allow_remote_host=opts.allow_remote,
                                  target=request.raw_path)  # as sent: an absolute-form URL stays one
        if refusal is not None:
            log.warning("refused %s from %s: %s", request.path, request.remote, refusal.reason)
            return web.json_response({"error": refusal.reason}, status=refusal.status)
    return await handler(request)


async def websocket_handler(request: web.Request) -> web.StreamResponse:
    app = request.app
    state = app[STATE]
    if state.closing:
        return web.json_response({"error": "shutting down"}, status=503)
    limits = app[STUDY].limits
    # compress=False: the socket is loopback only, where permessage-deflate costs CPU on both ends
    # (zlib was the largest item of the event loop's profile under load) and saves nothing
    # decode_text=False: text frames arrive as bytes and are decoded by the protocol's parser, so
    # invalid UTF-8 is answered with `bad_json` (aiohttp would close the socket with 1007)
    # max_msg_size: the most aiohttp buffers of one frame, fixed here for the socket's life (aiohttp
    # reads it at prepare(), before hello), so a daemon that can join reads a pack-sized frame of any
    # type from any paired socket and refuses it unless it is a join_study after hello (`_frame`)
    cap = app[PIPELINE].max_frame_bytes(joinable=app[OPTIONS].can_join)
    ws = web.WebSocketResponse(protocols=(p.SUBPROTOCOL,), heartbeat=30.0, compress=False, decode_text=False,
                               max_msg_size=max(limits.max_message_bytes * HARD_FRAME_FACTOR, cap))
    await ws.prepare(request)
    session = Session(limits, max_pending=MAX_PENDING_PER_CONNECTION)
    conn = Connection(app, ws, session)
    state.sockets[ws] = session
    failed = True
    try:
        async for m in ws:
            if m.type in (WSMsgType.TEXT, WSMsgType.BINARY):
                await conn.frame(m.data, binary=m.type == WSMsgType.BINARY)
            elif m.type == WSMsgType.ERROR:
                log.info("socket error: %s", ws.exception())
                break
        failed = False
    finally:
        state.sockets.pop(ws, None)
        session.closed = True
        await session.cancel_tasks()
        try:
            await app[PIPELINE].close_session(session, "shutdown" if state.closing else "client")
        except LogUnwritable:
            pass  # this daemon's stop ends it, else recovery at the next start; the writer logged the condition
        except Exception:
            log.exception("could not close session %s", session.session_id)
        # Close whatever ended the loop: an unclosed socket keeps its heartbeat timer, which keeps
        # the socket, its request and parser (about 12 KB) alive after the client is gone.
        if not ws.closed:
            try:
                await ws.close(code=WSCloseCode.INTERNAL_ERROR if failed else WSCloseCode.OK,
                               message=b"modlens daemon error" if failed else b"")
            except Exception:
                log.debug("could not close a failed socket", exc_info=True)
        # aiohttp 3.14 re-arms the heartbeat timer when the client's reply to our close frame
        # arrives after ws.close(); that timer alone would keep the socket alive for 30 s more.
        cancel_heartbeat = getattr(ws, "_cancel_heartbeat", None)
        if cancel_heartbeat is not None:
            cancel_heartbeat()
    return ws


async def status_handler(request: web.Request) -> web.Response:
    """`GET /status` for `modlens status`: no session is recorded. A study log that cannot be read
    (its lock held by another writer) gives counts None: the status still answers."""
    app, state = request.app, request.app[STATE]
    return web.json_response({
        "server": "modlens", "protocol": p.PROTOCOL_VERSION, "study_id": app[STUDY].study_id,
        "db": str(app[OPTIONS].live.db_path), "started_at": state.started_at,
        **await app[PIPELINE].status({"connections": len(state.sockets)}, counts_or_none=True),
        "malformed_requests": state.malformed_requests,
    })


PAIRED = (websocket_handler, status_handler)  # the routes behind `paired_only`


def create_app(study: StudyConfig, db_path: str | Path, token: str | Callable[[], str], *,
               detectors: dict[str, Detector] | None = None, engine: Engine | None = None,
               study_dir: Path | None = None, batch_delay_ms: float = LiveOptions.batch_delay_ms,
               writer_max_delay_ms: float = LiveOptions.writer_max_delay_ms, allow_remote: bool = False,
               restart_on_join: Callable[[], None] | None = None, extension_protocol: bool = True,
               started_on: StartedOn | None = None) -> web.Application:
    """The daemon's application (aiohttp's app factory; its state under typed `web.AppKey`s).

    `token`: the pairing token, or a callable returning the current one (re-read on rotation).
    The live service's: `detectors` (None: load the study's), a prebuilt `engine` (not closed by
    the service), `study_dir` (its itemset.json and assignment.json), the batching windows.
    The transport's: `allow_remote` (any Host header: `serve --allow-remote`), `restart_on_join`
    (called once the extension joined a study pack, so the caller restarts on it; None: the study
    is fixed and join is refused), `started_on` (the joined pack `study` came from, read with it:
    `live.run.served_study`; a join of another pack restarts), `extension_protocol` (False: `serve
    --perspective-only`, the Perspective-compatible API without the extension's socket)."""
    token_fn = token if callable(token) else (lambda: token)
    api_key = KeySource()  # the Perspective API's own key (`modlens pair --api-key`): scrubbed like the token
    install_log_scrubber(token_fn, api_key)  # before the first request can be logged
    live = LiveOptions(db_path=Path(db_path), detectors=detectors, engine=engine, batch_delay_ms=batch_delay_ms,
                       writer_max_delay_ms=writer_max_delay_ms, study_dir=Path(study_dir) if study_dir else None)
    # bad gold/anchor items or item set: refused before any resource starts; the service starts on the plan read here
    live.plan = check_study(study, live.study_dir)
    state = DaemonState()
    app = web.Application(client_max_size=study.limits.max_message_bytes, handler_args=server_options(state),
                          middlewares=[paired_only])
    app[STUDY] = study
    app[OPTIONS] = DaemonOptions(token=token_fn, live=live, allow_remote=allow_remote, restart_on_join=restart_on_join,
                                  started_on=started_on)
    app[STATE] = state
    app.cleanup_ctx.append(_live_ctx)
    app.on_shutdown.append(_close_sockets)
    if extension_protocol:
        app.router.add_get("/ws", websocket_handler)
    app.router.add_get("/status", status_handler)
    add_perspective_routes(app, PerspectiveHost(token_fn, allow_remote, lambda: app[STATE].closing,
                                                lambda: app[PIPELINE], api_key))
    return app
