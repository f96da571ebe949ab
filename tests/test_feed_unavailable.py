"""`modlens feed` (the protocol client, `modlens.protocol.client`) waits out `unavailable` as the
extension does: the daemon answers it while its study log cannot be written and recovers by
itself, so the client sends the same page again after a back-off instead of stopping; past its
timeout it stops with the daemon's reason. Against a real daemon whose log is full to SQLite
(`PRAGMA max_page_count`, as in tests/test_studylog_full.py)."""
from __future__ import annotations

import asyncio
import sqlite3

import pytest

from daemon_helpers import TOKEN, running_daemon, study
from modlens.daemon.app import PIPELINE
from modlens.protocol.client import ClientError, make_pages, session
from modlens.studylog.store import StudyLog

NO_LIMIT = 1_073_741_823  # SQLite's default max_page_count


def _cap_at_current_size(lg: StudyLog) -> None:
    lg.conn.execute(f"PRAGMA max_page_count = {lg.conn.execute('PRAGMA page_count').fetchone()[0]}")


def _uncap(lg: StudyLog) -> None:
    lg.conn.execute(f"PRAGMA max_page_count = {NO_LIMIT}")


def _page(tag: str):
    # long distinct texts: storing them needs new pages of the log, which a full log refuses
    rows = [(f"{tag}-{i}", f"comment {tag} {i} " + "lorem ipsum " * 150) for i in range(12)]
    return make_pages(rows, 20, "news", f"https://example.org/{tag}", tag)[0]


async def _failed_writes(writer, at_least: int) -> None:
    while writer.writability.status()["failed_writes"] < at_least:
        await asyncio.sleep(0.02)


async def test_a_page_refused_as_unavailable_is_sent_again_and_stored_once_the_log_recovers(tmp_path):
    async with running_daemon(tmp_path, study()) as (url, app):
        writer = app[PIPELINE].writer
        async with session(url, TOKEN, rater="feeder") as client:
            await writer.submit(_cap_at_current_size)
            sending = asyncio.create_task(client.send_page(_page("full"), variants=False, timeout=60))
            await asyncio.wait_for(_failed_writes(writer, 1), 30)  # the daemon refused it: unavailable
            assert not sending.done()  # the client did not stop: it waits and sends again
            await writer.submit(_uncap)
            result = await asyncio.wait_for(sending, 60)
    assert result.retries >= 1
    assert len(result.items) == 12 and all(item.scores.detectors for item in result.items)
    con = sqlite3.connect(tmp_path / "study.sqlite")
    try:
        stored = con.execute("SELECT count(*), count(DISTINCT comment_key) FROM comments WHERE platform = 'news'").fetchone()
    finally:
        con.close()
    assert stored == (12, 12)


async def test_unavailable_past_the_timeout_stops_with_the_daemons_reason(tmp_path):
    async with running_daemon(tmp_path, study()) as (url, app):
        async with session(url, TOKEN, rater="feeder") as client:
            await app[PIPELINE].writer.submit(_cap_at_current_size)
            with pytest.raises(ClientError) as err:
                await client.send_page(_page("never"), variants=False, timeout=1.0)
    assert "unavailable" in str(err.value) and "disk is full" in str(err.value)
    assert client.retries >= 1  # it was waited out once (0.5 s) before the next back-off passed the timeout
