"""Recovery at start: the real `modlens serve`, killed with SIGKILL after it logged a page
and acknowledged a rating but before it recorded the page's scores (its detector, an HTTP API
served here, had not answered yet), then started again on the same log. The next start closes
the dead daemon's sessions (`ended_by` 'recovery', `ended_at` its last activity) and scores, in
the background, the comments of the study that lack a score; a clean stop closes live sessions
as 'shutdown', a client that leaves closes its own as 'client'."""
from __future__ import annotations

import asyncio
import json
import signal
import sqlite3
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from modlens import pairing

from daemon_helpers import serve_process

TEXTS = {"k1": "a perfectly kind remark", "k2": "you are an idiot", "k3": "see the description for parts"}


class FakeApi:
    """A toxicity API on loopback: answers {"score": ...}, or holds every request while `hold` is set."""

    def __init__(self) -> None:
        self.hold = threading.Event()
        self.hold.set()
        api = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 (http.server's name)
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                while api.hold.is_set():
                    time.sleep(0.05)
                out = json.dumps({"score": 0.9 if "idiot" in body["text"] else 0.1}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(out)))
                self.end_headers()
                try:
                    self.wfile.write(out)
                except BrokenPipeError:
                    pass  # held for a daemon that was killed meanwhile

            def log_message(self, *args) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/score"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.hold.clear()
        self.server.shutdown()


def _study(path, api_url: str):
    path.write_text(f"""study_id = "recovery-test"
[[detectors]]
name = "http"
id = "api"
options = {{ url = "{api_url}", score_path = "score", timeout_s = 120, retries = 0, qps = 1000 }}
[normalizer]
enabled = false
[perturbation]
enabled = false
""")
    return path


def _rows(db, sql, params=()):
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=10)
    con.row_factory = sqlite3.Row
    try:
        return [dict(r) for r in con.execute(sql, params)]
    finally:
        con.close()


UNSCORED_RATED = """SELECT DISTINCT c.comment_key FROM ratings r JOIN comments c ON c.comment_id = r.comment_id
    WHERE NOT EXISTS (SELECT 1 FROM scores s WHERE s.text_id = c.text_id)"""
UNSCORED = "SELECT c.comment_key FROM comments c WHERE NOT EXISTS (SELECT 1 FROM scores s WHERE s.text_id = c.text_id)"


async def _open(url: str, token: str, rater: str):
    import websockets

    ws = await websockets.connect(url, subprotocols=["modlens.v1", f"modlens.token.{token}"])
    await ws.send(json.dumps({"type": "hello", "id": "h", "protocol": 1, "client": "recovery-test",
                              "token": token, "rater_id": rater}))
    hello = json.loads(await ws.recv())
    assert hello["type"] == "hello_ok", hello
    return ws, hello["session_id"]


async def _until(ws, kind: str, mid: str) -> dict:
    while True:
        msg = json.loads(await asyncio.wait_for(ws.recv(), 30))
        if msg.get("type") == "error":
            raise AssertionError(msg)
        if msg.get("type") == kind and msg.get("id") == mid:
            return msg


async def _page_and_rating(url: str, token: str) -> str:
    """Send a page, rate one comment, return once the rating is acknowledged (scores still pending)."""
    ws, session_id = await _open(url, token, "rater-crashed")
    await ws.send(json.dumps({"type": "comments", "id": "page1", "variants": False,
                              "page": {"url": "https://www.youtube.com/watch?v=v1", "platform": "youtube", "page_key": "v1"},
                              "items": [{"key": k, "text": t} for k, t in TEXTS.items()]}))
    await _until(ws, "comments_ok", "page1")
    await ws.send(json.dumps({"type": "rating", "id": "r1", "comment": {"platform": "youtube", "key": "k2"},
                              "values": {"toxicity": "toxic"}, "anchors": None}))
    await _until(ws, "rating_ok", "r1")
    return session_id  # the socket is left open: the daemon dies under it


def _wait(predicate, timeout: float, what: str):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        got = predicate()
        if got:
            return got
        time.sleep(0.1)
    raise AssertionError(f"timed out after {timeout:.0f}s waiting for {what}")


@pytest.mark.slow
def test_kill_9_before_scores_are_recorded_is_repaired_at_next_start(modlens_home, tmp_path):
    api = FakeApi()
    study = _study(tmp_path / "study.toml", api.url)
    db = tmp_path / "log.sqlite"
    token = pairing.ensure()
    try:
        proc, info = serve_process(modlens_home, "--config", str(study), "--db", str(db))
        try:
            crashed = asyncio.run(asyncio.wait_for(_page_and_rating(info["url"], token), 60))
        finally:
            proc.send_signal(signal.SIGKILL)
            proc.wait(10)
        # the crash left what the issue describes: an acked rating of an unscored comment, an open session
        assert [r["client_rating_id"] for r in _rows(db, "SELECT client_rating_id FROM ratings")] == ["r1"]
        assert sorted(r["comment_key"] for r in _rows(db, UNSCORED)) == sorted(TEXTS)
        last_activity = _rows(db, "SELECT max(created_at) AS t FROM ratings WHERE session_id = ?", (crashed,))[0]["t"]

        api.hold.clear()  # the API answers again
        proc, info = serve_process(modlens_home, "--config", str(study), "--db", str(db))
        try:
            async def live_then_leave():
                ws, live = await _open(info["url"], token, "rater-live")
                ws2, left = await _open(info["url"], token, "rater-leaves")
                await ws2.close()
                return ws, live, left

            loop = asyncio.new_event_loop()
            try:
                ws, live, left = loop.run_until_complete(live_then_leave())
                _wait(lambda: not _rows(db, UNSCORED), 60, "every comment of the study scored after the restart")
                assert _rows(db, UNSCORED_RATED) == []
                scores = {r["comment_key"]: r["toxicity"] for r in _rows(
                    db, "SELECT c.comment_key, s.toxicity FROM comments c JOIN scores s ON s.text_id = c.text_id")}
                assert scores == {"k1": 0.1, "k2": 0.9, "k3": 0.1}
                sessions = {r["session_id"]: r for r in _rows(db, "SELECT * FROM sessions")}
                _wait(lambda: _rows(db, "SELECT ended_by FROM sessions WHERE session_id = ?", (left,))[0]["ended_by"],
                      10, "the session the client closed")
                sessions = {r["session_id"]: r for r in _rows(db, "SELECT * FROM sessions")}
                assert sessions[crashed]["ended_by"] == "recovery"
                assert sessions[crashed]["ended_at"] == last_activity
                assert sessions[left]["ended_by"] == "client"
                assert [s for s, r in sessions.items() if r["ended_at"] is None] == [live]
            finally:
                proc.send_signal(signal.SIGTERM)  # a clean stop, the live client still connected
                proc.wait(30)
                loop.run_until_complete(ws.close())
                loop.close()
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait(10)
        row = _rows(db, "SELECT ended_at, ended_by FROM sessions WHERE session_id = ?", (live,))[0]
        assert row["ended_by"] == "shutdown" and row["ended_at"] is not None
        assert _rows(db, "PRAGMA integrity_check") == [{"integrity_check": "ok"}]
    finally:
        api.close()


async def test_rescoring_waits_for_live_work_and_scores_only_this_study(tmp_path):
    """In-process: comments of another study seen in its sessions, never scored. `rescore_missing`
    scores them in batches, not one while live work is waiting, and nothing of the running study's."""
    from modlens.rows import CommentRow

    from daemon_helpers import WordListDetector, running_daemon
    from modlens.daemon.app import PIPELINE, STATE
    from modlens.live.recovery import live_work_waiting, rescore_missing

    det = WordListDetector()
    async with running_daemon(tmp_path, detectors={"wordlist": det}) as (_url, app):
        pipeline = app[PIPELINE]
        texts = [f"old comment {i} you idiot" for i in range(5)]

        def crashed_other_study(lg):
            lg.ensure_study("other", "another study", {})
            lg.start_session("dead", "other", "r", "test", None, 1)
            ids = lg.add_comments_many("youtube", [CommentRow(f"o{i}", t) for i, t in enumerate(texts)])
            lg.add_sightings([(cid, "dead") for cid in ids])

        await pipeline.write(crashed_other_study)
        assert not live_work_waiting(pipeline, app[STATE].sockets.values())
        calls_when_asked: list[int] = []

        def busy() -> bool:  # live work waiting for the first 5 looks
            calls_when_asked.append(len(det.calls))
            return len(calls_when_asked) <= 5

        before = len(det.calls)
        assert await rescore_missing(pipeline, "other", busy, batch=2, pause_s=0.001) == 5
        assert calls_when_asked[:6] == [before] * 6  # nothing scored while busy
        assert all(n <= 2 for n in det.calls[before:])
        scored = await pipeline.write(lambda lg: [lg.get_score(t, pipeline.detector_ids["wordlist"]) for t in texts])
        assert all(s is not None and s["error"] is None for s in scored)
        # all done: a second pass finds nothing, and the running study has nothing to score
        assert await rescore_missing(pipeline, "other", lambda: False) == 0
        assert await rescore_missing(pipeline, "test", lambda: False) == 0
