"""A study log that cannot be written (a full disk) is one condition: the daemon answers
`unavailable` (the Perspective endpoint 503 in Google's shape), acknowledges nothing, logs one
line when it starts and one when it ends, `modlens status` shows it, and it recovers without a
restart. The full disk is real to SQLite: `PRAGMA max_page_count` on the writer's own connection
makes every write that needs a new page fail with SQLITE_FULL ("database or disk is full"), as a
full filesystem does (bench/probe_full_disk.py fills a real tmpfs)."""
from __future__ import annotations

import asyncio
import json
import logging
import sqlite3

import aiohttp
import pytest

from daemon_helpers import TOKEN, Client, comments_msg, connect, rating_msg, running_daemon, study
from modlens.daemon.app import PIPELINE
from modlens.studylog.connection import LogUnwritable
from modlens.studylog.store import LogWriter, StudyLog

NO_LIMIT = 1_073_741_823  # SQLite's default max_page_count


def _cap_at_current_size(lg: StudyLog) -> int:
    """No new page from now on: the log is as full as its disk."""
    n = lg.conn.execute("PRAGMA page_count").fetchone()[0]
    lg.conn.execute(f"PRAGMA max_page_count = {n}")
    return n


def _uncap(lg: StudyLog) -> None:
    lg.conn.execute(f"PRAGMA max_page_count = {NO_LIMIT}")


def _big_page(n: int) -> dict:
    # pages of long distinct texts: each needs new pages of texts, comments and their indexes
    return comments_msg(f"full-{n}", [(f"k{n}-{i}", f"comment {n}-{i} " + "lorem ipsum " * 150) for i in range(12)],
                        page_key=f"video-full-{n}")


async def test_writer_fails_a_whole_batch_with_the_disk_full_condition(tmp_path, caplog):
    """SQLite rolls the whole transaction back on SQLITE_FULL: every call of that batch fails with
    LogUnwritable (none is reported committed), one log line marks the start and one the end."""
    caplog.set_level(logging.INFO)
    writer = LogWriter(tmp_path / "log.sqlite", max_delay_ms=50)
    await writer.start()
    writer.writability.settle_s = 0.2
    try:
        await writer.submit(lambda lg: lg.ensure_page("t", "p", None, None))
        await writer.submit(_cap_at_current_size)
        small = writer.submit(lambda lg: lg.ensure_page("t", "small", None, None))
        big = writer.submit(lambda lg: lg.add_comments_many("t", []) or lg.text_ids(["x" * 200_000]))
        got = await asyncio.gather(small, big, return_exceptions=True)
        assert all(isinstance(g, LogUnwritable) for g in got), got
        assert "database or disk is full" in str(got[1])
        status = writer.writability.status()
        assert status["writable"] is False and status["failed_writes"] >= 2 and status["episodes"] == 1
        for _ in range(5):  # the condition goes on: no new line per failed write
            with pytest.raises(LogUnwritable):
                await writer.submit(lambda lg: lg.text_ids(["y" * 200_000]))
        await writer.submit(_uncap)
        await writer.submit(lambda lg: lg.text_ids(["z" * 200_000]))
        await asyncio.sleep(0.6)  # settle_s without a failure, and the writer's idle tick
        assert writer.writability.status()["writable"] is True
        pages = await writer.submit(lambda lg: [r[0] for r in lg.conn.execute("SELECT page_key FROM pages")])
        assert pages == ["p"]  # the small call of the failed batch was not kept
    finally:
        await writer.stop()
    lines = [r.getMessage() for r in caplog.records if r.name == "modlens.studylog"]
    assert len(lines) == 2, lines
    assert "cannot be written (database or disk is full)" in lines[0]
    assert "writable again after 7 failed writes" in lines[1]


async def _status(url: str) -> dict:
    base = url.replace("ws://", "http://").removesuffix("/ws")
    async with aiohttp.ClientSession() as s:
        async with s.get(f"{base}/status", headers={"Authorization": f"Bearer {TOKEN}"}) as r:
            assert r.status == 200
            return await r.json()


async def _analyze(url: str) -> tuple[int, dict]:
    base = url.replace("ws://", "http://").removesuffix("/ws")
    body = {"comment": {"text": "a call to log " + "x " * 3000}, "requestedAttributes": {"TOXICITY": {}}}
    async with aiohttp.ClientSession() as s:
        async with s.post(f"{base}/v1alpha1/comments:analyze", params={"key": TOKEN}, data=json.dumps(body)) as r:
            return r.status, await r.json(content_type=None)


async def test_daemon_on_a_full_log_says_unavailable_and_recovers(tmp_path, caplog, monkeypatch, capsys):
    caplog.set_level(logging.INFO)
    async with running_daemon(tmp_path, study(perturbation={"enabled": False})) as (url, app):
        writer = app[PIPELINE].writer
        writer.writability.settle_s = 0.3
        async with connect(url) as ws:
            c = Client(ws)
            await c.hello()
            first = await c.request(comments_msg("before", [("k0", "stored before the disk filled")]), "comments_ok")
            assert first["type"] == "comments_ok"

            await writer.submit(_cap_at_current_size)
            pages = [_big_page(n) for n in range(6)]
            answers = [await c.request(m, "comments_ok") for m in pages]
            rated = await c.request(rating_msg("r-full", "k0-0"), "rating_ok")  # its page was refused
            assert [a["type"] for a in answers] == ["error"] * len(pages), answers
            assert {a["code"] for a in [*answers, rated]} == {"unavailable"}, [*answers, rated]
            assert "nothing was stored" in answers[0]["message"] and "disk is full" in answers[0]["message"]

            status = await _status(url)
            assert status["study_log"]["writable"] is False and status["study_log"]["failed_writes"] >= len(pages)
            code, google = await _analyze(url)
            assert code == 503 and google["error"]["status"] == "UNAVAILABLE" and google["error"]["code"] == 503

            # `modlens status` prints it, from the same answer
            from modlens.cli import status as status_cli
            monkeypatch.setattr(status_cli.runtime, "read_runtime", lambda: {"url": url, "pid": 1})
            monkeypatch.setattr(status_cli, "ask_daemon", lambda info: status)
            status_cli.run(type("Args", (), {"json": False, "db": None})())
            shown = capsys.readouterr().out
            assert "study log NOT WRITABLE" in shown and "database or disk is full" in shown

            # space comes back: the same messages again, with the same ids, are stored once and acknowledged
            await writer.submit(_uncap)
            again = [await c.request(m, "comments_ok") for m in pages]
            assert [a["type"] for a in again] == ["comments_ok"] * len(pages), again
            rated = await c.request(rating_msg("r-full", "k0-0"), "rating_ok")
            assert rated["type"] == "rating_ok" and not rated["duplicate"]
            await asyncio.sleep(1.0)
            assert (await _status(url))["study_log"]["writable"] is True
            stored_ids = {k: v for a in again for k, v in a["comment_ids"].items()}
            assert not [m for m in c.inbox if m.get("code") == "internal"]

    con = sqlite3.connect(tmp_path / "study.sqlite")
    try:
        in_log = dict(con.execute("SELECT comment_key, comment_id FROM comments WHERE platform = 'youtube'"))
        n_ratings = con.execute("SELECT count(*) FROM ratings").fetchone()[0]
    finally:
        con.close()
    assert {k: in_log[k] for k in stored_ids} == stored_ids and len(in_log) == 1 + 12 * len(pages)
    assert n_ratings == 1
    daemon_lines = [r for r in caplog.records if r.name.startswith("modlens.")]
    assert not [r for r in daemon_lines if r.exc_info], "a traceback was logged for a full disk"
    edges = [r.getMessage() for r in daemon_lines if r.name == "modlens.studylog"]
    assert len(edges) == 2 and "cannot be written" in edges[0] and "writable again after" in edges[1], edges
