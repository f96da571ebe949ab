"""Acknowledged means written, deterministically: with the study-log writer held busy, a page gets
no `comments_ok` (it went out on receipt before, and a daemon killed then lost the page); once the
writer commits, the answer comes and names the committed rows. A rating sent right behind its page,
before that answer, still waits for the page's write and is acknowledged after it."""
from __future__ import annotations

import asyncio
import sqlite3
import threading

from daemon_helpers import Client, comments_msg, connect, rating_msg, running_daemon, study
from modlens.daemon.app import PIPELINE


def _in_log(tmp_path, keys: list[str]) -> dict[str, int]:
    con = sqlite3.connect(tmp_path / "study.sqlite")
    try:
        return dict(con.execute("SELECT comment_key, comment_id FROM comments WHERE comment_key IN "
                                f"({','.join('?' * len(keys))})", keys).fetchall())
    finally:
        con.close()


async def test_comments_ok_waits_for_the_commit_and_a_rating_behind_it_still_works(tmp_path):
    async with running_daemon(tmp_path, study(perturbation={"enabled": False})) as (url, app):
        writer = app[PIPELINE].writer
        async with connect(url) as ws:
            c = Client(ws)
            await c.hello()
            release = threading.Event()
            held = writer.submit(lambda lg: release.wait(10))  # the writer thread is busy until released
            keys = ["a1", "a2", "a3"]
            await c.send(comments_msg("page-a", [(k, f"comment {k}") for k in keys]))
            await c.send(rating_msg("r-a", "a2", anchors=None, toxicity="toxic"))
            early = []
            try:
                while True:
                    early.append(await c.recv(timeout=0.8))
            except asyncio.TimeoutError:
                pass
            assert not [m for m in early if m["type"] in ("comments_ok", "rating_ok", "error")], early
            assert _in_log(tmp_path, keys) == {}  # not written, and not acknowledged

            release.set()
            await held
            ok = await c.until(lambda m: m.get("id") == "page-a" and m["type"] in ("comments_ok", "error"))
            stored = _in_log(tmp_path, keys)  # read at the moment the answer arrived
            assert ok["type"] == "comments_ok" and ok["comment_ids"] == stored and sorted(stored) == keys
            rated = await c.until(lambda m: m.get("id") == "r-a")
            assert rated["type"] == "rating_ok" and not rated["duplicate"], rated
            scores = await c.until(lambda m: m["type"] == "scores" and m["id"] == "page-a")
            assert {it["key"]: it["comment_id"] for it in scores["items"]} == stored
