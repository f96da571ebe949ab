"""Test support for the daemon tests: a tiny deterministic detector, a daemon on a real
loopback port inside the test's event loop, and a websockets client that speaks v1.

The messages are the protocol client's (`modlens.protocol.client`: hello, comments, rating and the
offered subprotocols, built from the pydantic models), so their shapes are defined once; the
`Client` here works with the frames themselves as dicts, and sends a str or a dict as it is, so
a test can also send what no model would build (hostile frames)."""
from __future__ import annotations

import asyncio
import json
import threading
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any, AsyncIterator, Sequence

import websockets
from aiohttp import web

from modlens.config import StudyConfig, parse_study
from modlens.detectors.base import Detector
from modlens.protocol import client as protocol_client

from modlens.daemon.app import create_app

TOKEN = "test-token-0123456789"
EXT_ORIGIN = "chrome-extension://abcdefghijklmnopabcdefghijklmnop"


class WordListDetector(Detector):
    """Toxicity = share of words on a small list (deterministic, instant). Counts its calls
    so tests can see batching."""

    name = "wordlist"
    version = "test-1"
    labels = ("clean", "toxic")
    toxicity_label = "toxic"
    max_batch = 64

    WORDS = {"idiot", "stupid", "hate", "worthless", "dumb"}

    def __init__(self, delay_s: float = 0.0):
        self.delay_s = delay_s
        self.calls: list[int] = []
        self._lock = threading.Lock()

    def score(self, texts: Sequence[str]):
        with self._lock:
            self.calls.append(len(texts))
        if self.delay_s:
            threading.Event().wait(self.delay_s)
        out = []
        for t in texts:
            words = [w.strip(".,!?").lower() for w in t.split()] or [""]
            tox = sum(w in self.WORDS for w in words) / len(words)
            out.append({"clean": 1 - tox, "toxic": tox})
        return out

    def config(self):
        return {"words": sorted(self.WORDS)}


def study(**overrides: Any) -> StudyConfig:
    # The tests hand the daemon a WordListDetector under the key "wordlist"; the study names a
    # registered plugin (unknown names do not validate) and gives it that key.
    data: dict[str, Any] = {"study_id": "test", "detectors": [{"name": "profanity-check", "id": "wordlist"}],
                            "normalizer": {"enabled": False}, "perturbation": {"enabled": False}}
    data.update(overrides)
    return parse_study(data)


@asynccontextmanager
async def serving(app: web.Application, host: str = "127.0.0.1", **runner_options: Any) -> AsyncIterator[int]:
    """Any aiohttp application served on `host`:<free port>; yields the port, cleans up after."""
    runner = web.AppRunner(app, **runner_options)
    await runner.setup()
    site = web.TCPSite(runner, host, 0)
    await site.start()
    try:
        yield site._server.sockets[0].getsockname()[1]
    finally:
        await runner.cleanup()


@asynccontextmanager
async def running_daemon(tmp_path: Path, study_cfg: StudyConfig | None = None, *, detectors=None, **options):
    """The real application on 127.0.0.1:<free port>; yields (url, app)."""
    study_cfg = study_cfg or study()
    detectors = detectors if detectors is not None else {"wordlist": WordListDetector()}
    app = create_app(study_cfg, tmp_path / "study.sqlite", TOKEN, detectors=detectors, **options)
    async with serving(app, shutdown_timeout=2) as port:
        yield f"ws://127.0.0.1:{port}/ws", app


@contextmanager
def daemon_thread(tmp_path: Path, cfg: StudyConfig):
    """The real daemon app on its own thread and event loop, for a test that runs a command which
    runs its own asyncio.run (`modlens feed`); yields the socket's URL."""
    ready, url = threading.Event(), {}
    loop = asyncio.new_event_loop()
    stop = asyncio.Event()

    async def serve():
        async with running_daemon(tmp_path, cfg) as (ws_url, _app):
            url["ws"] = ws_url
            ready.set()
            await stop.wait()

    thread = threading.Thread(target=lambda: loop.run_until_complete(serve()), daemon=True)
    thread.start()
    assert ready.wait(30), "daemon did not start"
    try:
        yield url["ws"]
    finally:
        loop.call_soon_threadsafe(stop.set)
        thread.join(20)
        loop.close()


def consent_sha256(app) -> str:
    """What a participant who agreed to the running study's consent text sends at hello (`consent_sha256`)."""
    from modlens.daemon.app import PIPELINE
    from modlens.protocol import consent_text_sha256

    return consent_text_sha256(app[PIPELINE].client_settings()["consent_text"])


def connect(url: str, token: str | None = TOKEN, origin: str | None = EXT_ORIGIN, **kw):
    return websockets.connect(url, subprotocols=protocol_client.subprotocols(token), origin=origin, max_size=None, **kw)


class Client:
    """Request/response over one socket; keeps every message it received."""

    def __init__(self, ws):
        self.ws = ws
        self.inbox: list[dict] = []

    async def send(self, msg: dict | str) -> None:
        await self.ws.send(msg if isinstance(msg, str) else json.dumps(msg))

    async def recv(self, timeout: float = 10.0) -> dict:
        msg = json.loads(await asyncio.wait_for(self.ws.recv(), timeout))
        self.inbox.append(msg)
        return msg

    async def until(self, pred, timeout: float = 10.0) -> dict:
        for m in self.inbox:
            if pred(m):
                self.inbox.remove(m)
                return m
        while True:
            m = await self.recv(timeout)
            if pred(m):
                self.inbox.remove(m)
                return m

    async def request(self, msg: dict, answer_type: str | None = None, timeout: float = 10.0) -> dict:
        await self.send(msg)
        return await self.until(lambda m: m.get("id") == msg["id"] and (answer_type is None or m["type"] in (answer_type, "error")), timeout)

    async def hello(self, rater: str = "rater-1", **extra) -> dict:
        msg = protocol_client.hello_message("h1", TOKEN, rater, client="test", client_version="0", **extra)
        return await self.request(protocol_client.wire(msg), "hello_ok")


def comments_msg(mid: str, items: list[tuple[str, str]], platform: str = "youtube", page_key: str = "video-1", **extra) -> dict:
    page = {"url": f"https://www.youtube.com/watch?v={page_key}", "platform": platform, "page_key": page_key,
            "title": "a video"}
    items_ = [{"key": k, "text": t, "author_hash": "a" * 16} for k, t in items]
    return protocol_client.wire(protocol_client.comments_message(mid, page, items_, **extra))


def rating_msg(rid: str, key: str, platform: str = "youtube", anchors=("more", "less"), **values) -> dict:
    values = values or {"formality": "informal", "respectfulness": "disrespectful",
                        "stereotypes": "not present", "toxicity": "toxic"}
    return protocol_client.wire(protocol_client.rating_message({
        "id": rid, "comment": {"platform": platform, "key": key}, "values": values,
        "anchors": None if anchors is None else {"vs_hard": anchors[0], "vs_extreme": anchors[1]},
        "time_spent_ms": 4200}))


# --- the real `modlens serve` in a subprocess ------------------------------------------------

def serve_process(home: Path, *args: str, timeout: float = 60.0):
    """Start `python -m modlens serve --port 0 ...` with MODLENS_HOME=home; returns (proc, runtime
    info) once it listens. The caller stops it."""
    from modlens.runtime import start_serve

    return start_serve(home, *args, timeout=timeout, poll_s=0.05)


def write_study(path: Path, detectors: list[str], **limits) -> Path:
    lines = ['study_id = "cli-test"', f"detectors = [{', '.join(f'{{ name = {json.dumps(d)} }}' for d in detectors)}]",
             "[normalizer]", "enabled = false", "[perturbation]", "enabled = false"]
    if limits:
        lines += ["[limits]", *(f"{k} = {v}" for k, v in limits.items())]
    path.write_text("\n".join(lines) + "\n")
    return path
