"""How a logged Perspective API call reaches the study log (perspective/service.py): the call (its
text and labels) is committed before it is answered, its scores are committed by the writer's next
batch, after the answer, and before a stopping daemon closes the log. A daemon killed outright keeps
every call it answered."""
from __future__ import annotations

import asyncio
import json
import os
import signal
import sqlite3
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import aiohttp
import pytest

from daemon_helpers import TOKEN, WordListDetector, running_daemon, serve_process, study, write_study
from modlens.perspective import keys

pytestmark = pytest.mark.timeout(120)
WINDOW_MS = 300  # the writer's batching window, wide so that "after the answer" is plainly later


def _call_and_scores(db: Path, token: str) -> tuple[int, int]:
    """(calls logged with this clientToken, score rows of their text)."""
    con = sqlite3.connect(db)
    try:
        rows = con.execute("SELECT c.text_id FROM comments c JOIN labels l USING (comment_id) "
                           "WHERE c.platform = 'api' AND l.name = 'api.client_token' AND l.value = ?", (token,)).fetchall()
        scores = sum(con.execute("SELECT count(*) FROM scores WHERE text_id = ?", row).fetchone()[0] for row in rows)
        return len(rows), scores
    finally:
        con.close()


async def test_the_call_before_its_answer_its_scores_after(tmp_path):
    db = tmp_path / "study.sqlite"
    seen_at_answer: dict[str, tuple[int, int]] = {}
    async with running_daemon(tmp_path, study(), detectors={"wordlist": WordListDetector()},
                              extension_protocol=False, writer_max_delay_ms=WINDOW_MS) as (url, _app):
        base = url.replace("ws://", "http://").removesuffix("/ws")
        async with aiohttp.ClientSession() as session:
            async def call(i: int) -> None:
                token = f"bot-{i}"
                async with session.post(f"{base}/v1alpha1/comments:analyze", params={"key": TOKEN},
                                        json={"comment": {"text": f"you stupid idiot number {i}"}, "clientToken": token,
                                              "requestedAttributes": {"TOXICITY": {}}}) as r:
                    assert r.status == 200, await r.text()
                seen_at_answer[token] = _call_and_scores(db, token)
            await asyncio.gather(*(call(i) for i in range(8)))
    # answered: the call is there; its scores wait for the writer's next batch (the trade-off)
    assert seen_at_answer == {f"bot-{i}": (1, 0) for i in range(8)}
    # stopped: every call has its score
    assert {f"bot-{i}": _call_and_scores(db, f"bot-{i}") for i in range(8)} == {f"bot-{i}": (1, 1) for i in range(8)}


def test_a_killed_daemon_keeps_every_call_it_answered(tmp_path, modlens_home):
    """`modlens serve --perspective-only` killed with SIGKILL right after 40 answers."""
    config = write_study(tmp_path / "study.toml", ["profanity-check"])
    db = tmp_path / "killed.sqlite"
    key = keys.rotate()
    proc, info = serve_process(modlens_home, "--perspective-only", "--config", str(config), "--db", str(db))
    base = f"http://127.0.0.1:{info['port']}"

    def call(i: int) -> int:
        body = {"comment": {"text": f"some shit comment {i}"}, "clientToken": f"kill-{i}",
                "requestedAttributes": {"PROFANITY": {}}}
        request = urllib.request.Request(f"{base}/v1alpha1/comments:analyze?key={key}", data=json.dumps(body).encode(),
                                         headers={"Content-Type": "application/json"}, method="POST")
        with urllib.request.urlopen(request, timeout=60) as r:
            return r.status

    try:
        with ThreadPoolExecutor(8) as pool:
            assert list(pool.map(call, range(40))) == [200] * 40
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(30)
    assert [_call_and_scores(db, f"kill-{i}")[0] for i in range(40)] == [1] * 40
