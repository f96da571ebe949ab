"""A session's end is written when its socket closes. When the study log could not be written then
(a full disk, here SQLite's own SQLITE_READONLY on the daemon's connection), the daemon's stop wrote
it later as ended by 'shutdown' at the stop's time: the log said the daemon ended a session the
participant had closed, and made it last until the stop. The end the stop writes is now the one
that happened: who ended it and when. And the next start, which closes what a stop could not,
no longer says only that the previous daemon did not stop cleanly. An end the log refused is written
by the next session write once the log is writable again, not only at the stop."""
from __future__ import annotations

import asyncio
import logging
import threading
from datetime import datetime

from modlens.daemon.app import PIPELINE
from modlens.studylog.codec import now_iso

from daemon_helpers import Client, connect, running_daemon, study
from log_helpers import rows

READ_ONLY, WRITABLE = "PRAGMA query_only = 1", "PRAGMA query_only = 0"


async def _failed_writes(writer, at_least: int) -> None:
    for _ in range(400):
        if writer.writability.status()["failed_writes"] >= at_least:
            return
        await asyncio.sleep(0.02)
    raise AssertionError("no write failed")


def _undone_by_the_writer(writer) -> threading.Event:
    """Once the event is set, the writer's thread lifts the condition on its own connection before
    its next batch (a call through the writer would need a write transaction first)."""
    undo, commit = threading.Event(), writer._commit

    def lifting_first(log, batch):
        if undo.is_set():
            log.conn.execute(WRITABLE)
        commit(log, batch)

    writer._commit = lifting_first
    return undo


async def _an_end_refused(url: str, writer) -> tuple[str, str]:
    """rater-1's session closes while the log is unwritable: its end is refused. (Instants before and
    after its end.)"""
    async with connect(url) as ws:
        await Client(ws).hello()
        await writer.submit(lambda lg: lg.conn.execute(READ_ONLY))
        before = now_iso()
    await _failed_writes(writer, 1)
    return before, now_iso()


async def _an_end_refused_then_writable(url: str, writer) -> tuple[str, str]:
    """As _an_end_refused; then, a little later (now_iso counts milliseconds: any end written from then
    on is at a later instant than `after`), the log is writable again."""
    writable_again = _undone_by_the_writer(writer)
    before, after = await _an_end_refused(url, writer)
    await asyncio.sleep(0.02)
    writable_again.set()
    return before, after


async def test_a_session_closed_while_the_log_was_unwritable_is_ended_as_it_was_at_the_stop(tmp_path):
    async with running_daemon(tmp_path, study()) as (url, app):
        before, after = await _an_end_refused_then_writable(url, app[PIPELINE].writer)
        stop = now_iso()
    [(ended_by, ended_at)] = rows(tmp_path / "study.sqlite", "SELECT ended_by, ended_at FROM sessions")
    assert ended_by == "client", ended_by
    assert before <= ended_at <= after < stop, (before, ended_at, after, stop)


async def test_sessions_a_stop_could_not_end_are_closed_at_the_next_start_without_calling_it_a_crash(tmp_path,
                                                                                                   caplog):
    async with running_daemon(tmp_path, study()) as (url, app):
        await _an_end_refused(url, app[PIPELINE].writer)
    # the stop could not write the end either (the log stayed unwritable): the session is still open
    assert rows(tmp_path / "study.sqlite", "SELECT ended_by FROM sessions") == [(None,)]
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="modlens.daemon"):
        async with running_daemon(tmp_path, study()):
            pass
    [(ended_by, ended_at, started_at)] = rows(tmp_path / "study.sqlite",
                                              "SELECT ended_by, ended_at, started_at FROM sessions")
    assert ended_by == "recovery" and datetime.fromisoformat(ended_at) >= datetime.fromisoformat(started_at)
    said = [r.getMessage() for r in caplog.records if "recovery: closed" in r.getMessage()]
    assert len(said) == 1 and "could not write their end" in said[0], said  # not only "a crash"


async def test_an_end_the_log_refused_is_written_by_the_next_session_write_not_only_at_the_stop(tmp_path):
    # the log becomes writable again while the daemon runs: a report on the live log saw the session open
    # until the stop; the next session's write (a hello here) writes it, as it happened
    db = tmp_path / "study.sqlite"
    async with running_daemon(tmp_path, study()) as (url, app):
        before, after = await _an_end_refused_then_writable(url, app[PIPELINE].writer)
        async with connect(url) as ws:
            await Client(ws).hello(rater="rater-2")
            ended = rows(db, "SELECT rater_id, ended_by, ended_at FROM sessions ORDER BY started_at")
            owed = dict(app[PIPELINE].ends_owed)
    assert [(r, by) for r, by, _ in ended] == [("rater-1", "client"), ("rater-2", None)], ended
    assert before <= ended[0][2] <= after, (before, ended, after)
    assert owed == {}, owed
