"""The aiohttp application: one WebSocket endpoint (`/ws`) in front of the pipeline.

Background resources live in `cleanup_ctx`, so they start before the first connection and
stop in reverse order on shutdown: the study-log writer (drained last), the engine (its
detectors and batchers), then the pipeline that registers study and detectors.

Every listener keeps one input policy, set on the application itself (`handler_args`), so every
runner of it (`modlens serve`, the tests, the benches) serves with it: a connection that has not
sent a whole request head within HEADER_TIMEOUT_S of opening or of its last answer is closed; a
malformed request (bad request line or header) gets aiohttp's 400 and one log line, counted in
`/status`, never a traceback; bodies and frames are bounded before they are decoded.
"""
from __future__ import annotations

import asyncio
import json
import logging
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, AsyncIterator, Awaitable, Callable

from aiohttp import WSCloseCode, WSMsgType, web
from aiohttp.http_exceptions import HttpProcessingError
from aiohttp.web_log import AccessLogger

from modlens.config import StudyConfig
from modlens.detectors.base import Detector
from modlens.engine import Engine
from modlens.studylog.store import LogWriter

from modlens import protocol as p
from modlens.study.calibration import calibration_items
from modlens.study.assignment import load_plan
from modlens.services.comment_media import is_media_frame, media_frame_bytes
from modlens.media.store import MediaStore
from modlens.daemon.pipeline import Accepted, Pipeline
from modlens.daemon.perspective_api import PerspectiveHost, add_routes as add_perspective_routes
from modlens.perspective.keys import KeySource
from modlens.protocol import ErrorCode, ProtocolError
from modlens.daemon.security import check_handshake, install_log_scrubber
from modlens.daemon.recovery import recovery_ctx
from modlens.daemon.session import Session

log = logging.getLogger("modlens.daemon")

# Frames up to this multiple of limits.max_message_bytes get a `too_large` answer; beyond it
# aiohttp closes the socket (code 1009) rather than buffer unbounded input.
HARD_FRAME_FACTOR = 4
# aiohttp's keep-alive timer: armed when a connection opens and after each answer, it closes a
# connection still waiting for a complete request head (a slow-header client, an idle keep-alive)
HEADER_TIMEOUT_S = 10.0


@dataclass
class DaemonOptions:
    db_path: Path
    token: Callable[[], str]
    allow_remote: bool = False
    detectors: dict[str, Detector] | None = None  # None: load the study's detectors
    engine: Engine | None = None                  # a prebuilt engine (not closed by the app)
    batch_delay_ms: float = 10.0
    writer_max_batch: int = 256
    writer_max_delay_ms: float = 20.0
    max_pending_per_connection: int = 8
    variant_concurrency: int = 1
    # Called after the extension joined a study pack, so the caller restarts on it (`modlens
    # serve` without --config). None: the study is fixed (--config, tests); join is refused.
    restart_on_join: Callable[[], None] | None = None
    # where comment images are kept when the study keeps their bytes (None: `media/` beside the log)
    media_root: Path | None = None
    # False: `modlens serve --perspective-only`, the Perspective-compatible API without the extension's socket
    extension_protocol: bool = True
    # the folder of the study file: its itemset.json + assignment.json, if any (study/assignment.py)
    study_dir: Path | None = None


@dataclass
class DaemonState:
    sockets: dict[web.WebSocketResponse, Session] = field(default_factory=dict)
    closing: bool = False
    malformed_requests: int = 0  # refused by aiohttp's HTTP parser (one log line each)
    started_at: str = field(default_factory=lambda: datetime.now(timezone.utc).isoformat(timespec="seconds"))


STUDY = web.AppKey("study", StudyConfig)
OPTIONS = web.AppKey("options", DaemonOptions)
STATE = web.AppKey("state", DaemonState)
WRITER = web.AppKey("writer", LogWriter)
ENGINE = web.AppKey("engine", Engine)
PIPELINE = web.AppKey("pipeline", Pipeline)


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

async def _writer_ctx(app: web.Application) -> AsyncIterator[None]:
    opts = app[OPTIONS]
    writer = LogWriter(opts.db_path, max_batch=opts.writer_max_batch, max_delay_ms=opts.writer_max_delay_ms)
    await writer.start()
    app[WRITER] = writer
    yield
    await writer.stop()  # drains queued writes and commits before the process exits


async def _engine_ctx(app: web.Application) -> AsyncIterator[None]:
    opts = app[OPTIONS]
    owned = opts.engine is None
    engine: Engine
    if owned:
        # Loading models blocks for seconds; keep the loop free meanwhile.
        engine = await asyncio.get_running_loop().run_in_executor(
            None, lambda: Engine(app[STUDY], opts.detectors, max_delay_ms=opts.batch_delay_ms))
    else:
        assert opts.engine is not None
        engine = opts.engine
    for s in engine.statuses:
        if s.status != "loaded":
            log.warning("detector %s not loaded (%s): %s — fix: %s", s.name, s.status, s.message, s.fix)
    app[ENGINE] = engine
    yield
    if owned:
        await engine.close()


async def _pipeline_ctx(app: web.Application) -> AsyncIterator[None]:
    opts = app[OPTIONS]
    plan = load_plan(opts.study_dir, app[STUDY]) if opts.study_dir is not None else None
    pipeline = Pipeline(app[STUDY], app[ENGINE], app[WRITER], variant_concurrency=opts.variant_concurrency,
                        media_store=MediaStore(opts.media_root or opts.db_path.parent / "media"), plan=plan)
    await pipeline.prepare()
    await pipeline.record_calibration_items()  # gold + anchors, for the calibration round
    await pipeline.record_itemset_items()  # the item set's comments, for itemset.html
    app[PIPELINE] = pipeline
    yield
    await pipeline.close()  # the variant worker, before the engine's batchers stop


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
        self.pipeline = app[PIPELINE]
        self.limits = app[STUDY].limits

    async def send(self, message: dict[str, Any]) -> None:
        if self.ws.closed:
            return
        async with self.session._send_lock:
            try:
                await self.ws.send_str(_frame_text(message))
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
        limit = self.limits.max_message_bytes
        if size > limit and is_media_frame(raw):
            limit = media_frame_bytes(self.app[STUDY])  # room for one image of media.max_bytes
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
        wait = self.session.admit(msg.type)
        if wait:
            return await self.error(ProtocolError(
                ErrorCode.rate_limited, "too many messages or too much queued work; slow down", msg.id, wait))
        if self.app[STATE].closing:
            return await self.error(ProtocolError(ErrorCode.unavailable, "the daemon is shutting down", msg.id))
        if msg.type != "hello" and not self.session.ready:
            return await self.error(ProtocolError(ErrorCode.hello_required, "send hello first", msg.id))
        try:
            await self.dispatch(msg)
        except ProtocolError as err:
            await self.error(err)
        except Exception as err:
            log.exception("internal error on %s %s", msg.type, msg.id)
            await self.error(ProtocolError(ErrorCode.internal, f"{type(err).__name__}: {err}", msg.id))

    async def dispatch(self, msg: p.ClientRequest) -> None:
        if isinstance(msg, p.Hello):
            if not self.app[OPTIONS].token() or not _token_ok(msg.token, self.app[OPTIONS].token()):
                raise ProtocolError(ErrorCode.bad_token, "token is not the current pairing token (`modlens pair`)", msg.id)
            if self.session.ready:
                raise ProtocolError(ErrorCode.invalid_fields, "hello: this connection already said hello", msg.id)
            await self.send((await self.pipeline.open_session(self.session, msg)).dump())
        elif isinstance(msg, p.Comments):
            items = self.pipeline.accept(msg)
            recorded = self.pipeline.record_comments(self.session, msg, items)
            await self.send(p.CommentsOk(id=msg.id, accepted=len(items),
                                         truncated=[a.key for a in items if a.truncated]).dump())
            self.session.pending += 1
            self.session.spawn(self._comments(msg, items, recorded))
        elif isinstance(msg, p.Rating):
            self.session.spawn(self._guarded(msg, self._rating(msg)))
        elif isinstance(msg, p.Ping):
            await self.send(p.Pong(id=msg.id, server_time=datetime.now(timezone.utc).isoformat()).dump())
        elif isinstance(msg, p.Status):
            self.session.spawn(self._guarded(msg, self._status(msg)))
        elif isinstance(msg, p.JoinStudy):
            await self._join_study(msg)
        elif isinstance(msg, p.CommentMedia):
            self.session.spawn(self._guarded(msg, self._comment_media(msg)))

    async def _join_study(self, msg: p.JoinStudy) -> None:
        import shlex

        from modlens.study import join, pack

        restart = self.app[OPTIONS].restart_on_join
        if restart is None:
            raise ProtocolError(ErrorCode.join_refused, f"this daemon serves study {self.app[STUDY].study_id!r} "
                                "given with --config; stop it, run `modlens join STUDY.modlens` and start "
                                "`modlens serve` without --config", msg.id)
        name = msg.file_name or "study.modlens"
        try:
            joined = pack.parse(msg.pack, name)
            if joined.signer is None:  # `modlens join` asks a person at a terminal; nobody is asked here
                raise pack.PackError(
                    f"{name}: unsigned pack refused; nothing shows who made or changed it — fix: ask the researcher "
                    f"for a signed pack, or, if you trust where it came from, run `modlens join "
                    f"{shlex.quote(name)} --allow-unsigned` in a terminal")
            before = join.joined()
            # remote detectors stay off (no yes was asked for); a yes given at a terminal to this
            # very pack stands
            same = before is not None and before["pack_sha256"] == joined.sha256
            accepted = list(before.get("accepted_remote") or []) if before is not None and same else []
            join.join(joined, f"the extension's options page ({name})", replace=msg.replace, accepted_remote=accepted)
        except (pack.PackError, join.JoinError) as err:
            raise ProtocolError(ErrorCode.join_refused, str(err), msg.id) from None
        unchanged = same and self.app[STUDY].study_id == joined.study_id
        log.info("joined study %s from the extension (%s)", joined.study_id, "unchanged" if unchanged else "restarting")
        await self.send(p.JoinStudyOk(id=msg.id, study_id=joined.study_id, title=joined.study.title,
                                      tasks=len(joined.study.tasks), restarting=not unchanged, signer=joined.signer,
                                      remote_off=sorted(join.all_destinations(joined.study) - set(accepted))).dump())
        if not unchanged:
            restart()

    async def _guarded(self, msg: p.ClientRequest, coro: Awaitable[Any]) -> None:
        try:
            await coro
        except ProtocolError as err:
            await self.error(err)
        except asyncio.CancelledError:
            raise
        except Exception as err:
            log.exception("internal error on %s %s", msg.type, msg.id)
            await self.error(ProtocolError(ErrorCode.internal, f"{type(err).__name__}: {err}", msg.id))

    async def _comments(self, msg: p.Comments, items: list[Accepted], recorded: "asyncio.Future[list[int]]") -> None:
        try:
            await self._guarded(msg, self.pipeline.process_comments(self.session, msg, items, recorded, self.send))
        finally:
            self.session.pending -= 1

    async def _comment_media(self, msg: p.CommentMedia) -> None:
        await self.send((await self.pipeline.comment_media(self.session, msg)).dump())

    async def _rating(self, msg: p.Rating) -> None:
        await self.send((await self.pipeline.rate(self.session, msg)).dump())

    async def _status(self, msg: p.Status) -> None:
        queue = {"connections": len(self.app[STATE].sockets), "pending_comments": self.session.pending,
                 **self.pipeline.queue()}
        await self.send(p.StatusOk(id=msg.id, detectors=self.pipeline.detector_statuses(),
                                   counts=await self.pipeline.counts(), queue=queue,
                                   components=self.pipeline.engine.component_errors).dump())


def _frame_text(message: dict[str, Any]) -> str:
    """JSON for a text frame. A str that cannot be encoded as UTF-8 (a lone surrogate that slipped
    into an answer) would make aiohttp raise while sending: it is escaped as `\\udXXX` instead."""
    text = json.dumps(message, ensure_ascii=False)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        text = json.dumps(message)  # ASCII only: surrogates become JSON escapes
    return text


def _token_ok(presented: str, expected: str) -> bool:
    from modlens.pairing import matches
    return matches(presented, expected)


async def websocket_handler(request: web.Request) -> web.StreamResponse:
    app = request.app
    opts, state = app[OPTIONS], app[STATE]
    refusal = check_handshake(request.headers, opts.token(), allow_remote_host=opts.allow_remote,
                              target=request.raw_path)  # as sent: an absolute-form URL stays one
    if refusal is not None:
        log.warning("refused handshake from %s: %s", request.remote, refusal.reason)
        return web.json_response({"error": refusal.reason}, status=refusal.status)
    if state.closing:
        return web.json_response({"error": "shutting down"}, status=503)
    limits = app[STUDY].limits
    # compress=False: the socket is loopback only, where permessage-deflate costs CPU on both ends
    # (zlib was the largest item of the event loop's profile under load) and saves nothing
    # decode_text=False: text frames arrive as bytes and are decoded by the protocol's parser, so
    # invalid UTF-8 is answered with `bad_json` (aiohttp would close the socket with 1007)
    ws = web.WebSocketResponse(protocols=(p.SUBPROTOCOL,), heartbeat=30.0, compress=False, decode_text=False,
                               max_msg_size=max(limits.max_message_bytes * HARD_FRAME_FACTOR, media_frame_bytes(app[STUDY])))
    await ws.prepare(request)
    session = Session(limits, max_pending=opts.max_pending_per_connection)
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
    """`GET /status` for `modlens status`: same checks as the socket, no session is recorded."""
    app = request.app
    opts = app[OPTIONS]
    refusal = check_handshake(request.headers, opts.token(), allow_remote_host=opts.allow_remote,
                              target=request.raw_path)  # as sent: an absolute-form URL stays one
    if refusal is not None:
        return web.json_response({"error": refusal.reason}, status=refusal.status)
    pipeline, state = app[PIPELINE], app[STATE]
    return web.json_response({
        "server": "modlens", "protocol": p.PROTOCOL_VERSION, "study_id": app[STUDY].study_id,
        "db": str(opts.db_path), "started_at": state.started_at,
        "detectors": pipeline.detector_statuses(), "components": pipeline.engine.component_errors,
        "counts": await pipeline.counts(), "queue": {"connections": len(state.sockets), **pipeline.queue()},
        "malformed_requests": state.malformed_requests,
    })


def create_app(study: StudyConfig, db_path: str | Path, token: str | Callable[[], str], **options: Any) -> web.Application:
    """The daemon's application. `token` is the pairing token or a callable returning the
    current one (re-read on rotation); `options` are `DaemonOptions` fields."""
    token_fn = token if callable(token) else (lambda: token)
    api_key = KeySource()  # the Perspective API's own key (`modlens pair --api-key`): scrubbed like the token
    install_log_scrubber(token_fn, api_key)  # before the first request can be logged
    calibration_items(study)  # refuse bad gold/anchor items before any resource starts
    if options.get("study_dir") is not None:
        load_plan(Path(options["study_dir"]), study)  # and an item set that does not fit the study
    state = DaemonState()
    app = web.Application(client_max_size=study.limits.max_message_bytes, handler_args=server_options(state))
    app[STUDY] = study
    app[OPTIONS] = DaemonOptions(db_path=Path(db_path), token=token_fn, **options)
    app[STATE] = state
    app.cleanup_ctx.extend([_writer_ctx, _engine_ctx, _pipeline_ctx,
                            recovery_ctx(lambda a: a[PIPELINE], lambda a: a[STATE].sockets.values())])
    app.on_shutdown.append(_close_sockets)
    if app[OPTIONS].extension_protocol:
        app.router.add_get("/ws", websocket_handler)
    app.router.add_get("/status", status_handler)
    add_perspective_routes(app, PerspectiveHost(token_fn, app[OPTIONS].allow_remote, lambda: app[STATE].closing,
                                                lambda: (app[STUDY], app[ENGINE], app[PIPELINE]), api_key))
    return app
