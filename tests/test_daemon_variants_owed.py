"""Every comment offered for live variants ends in one of the daemon's counts, as the study log holds
it: made (`done`), failed (a step_errors row), or deferred (a `deferred_variants` row that `modlens
rescore --variants` makes). A comment whose connection closed while it waited, and one waiting or in
a round when the daemon stopped, left no row: nothing would ever make its variants, and no count
said so. And `deferred_by_reason` counts each row by the reason that row holds, not by this daemon's
reason for deferring it again."""
from __future__ import annotations

import logging
import sqlite3
import threading
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from aiohttp import web

from modlens.daemon.app import ENGINE, PIPELINE
from modlens.live.variants import LiveVariants

from daemon_helpers import Client, comments_msg, connect, running_daemon, study
from log_helpers import refuse_inserts, rows
from test_daemon_variants import STRATEGIES, hold_generation
from test_daemon_variants import scored_page as _page, until as _until


@asynccontextmanager
async def _live_daemon(tmp_path) -> AsyncIterator[tuple[str, web.Application, LiveVariants]]:
    """A daemon making live variants with budget to spare: its url, app and live variants."""
    cfg = study(perturbation={"enabled": True, "live_rate": 1000, **STRATEGIES})
    async with running_daemon(tmp_path, cfg) as (url, app):
        yield url, app, app[PIPELINE].live_variants


@asynccontextmanager
async def _participant(url: str) -> AsyncIterator[Client]:
    """A participant connected to the daemon at `url`, past its hello."""
    async with connect(url) as ws:
        c = Client(ws)
        await c.hello()
        yield c


async def _variants_of(c: Client, mid: str, key: str, text: str) -> dict:
    """The variants message the daemon answers a page of one comment with."""
    await _page(c, mid, key, text)
    return await c.until(lambda m: m["type"] == "variants" and m["id"] == mid)


async def _variants_status(c: Client) -> dict:
    """The live variants' counts, as the daemon's status answer gives them to `c`."""
    return (await c.request({"type": "status", "id": "s1"}, "status_ok"))["queue"]["variants"]


@asynccontextmanager
async def _both_rounds_held(url: str, app: web.Application, release: threading.Event) -> AsyncIterator[Client]:
    """A participant whose two comments take both round slots, their generation held ('hold' in the
    text) until `release` is set: the participant's client, connected while the block runs."""
    held = hold_generation(app, release, lambda text: "hold" in text)
    async with _participant(url) as c:
        await _page(c, "c1", "k1", "hold you stupid idiot")
        await _until(lambda: held[0] == 1, "the first round")
        await _page(c, "c2", "k2", "hold you dumb hater")
        await _until(lambda: held[0] == 2, "the second round")
        yield c


async def _leave_while_waiting(url: str, live) -> None:
    """A second participant sends a comment ('gone') that waits for a round slot, and leaves."""
    async with connect(url) as ws2:
        c2 = Client(ws2)
        await c2.hello(rater="rater-2")
        await _page(c2, "d1", "gone", "what a dumb take")
        await _until(lambda: live.stats.queued == 1, "the comment to wait")


async def test_a_comment_whose_connection_closed_while_it_waited_is_recorded_as_deferred(tmp_path):
    release = threading.Event()
    async with _live_daemon(tmp_path) as (url, app, live):
        try:
            async with _both_rounds_held(url, app, release):
                await _leave_while_waiting(url, live)
                release.set()
                await _until(lambda: live.stats.done == 2 and live.stats.queued == 0 and not live._in_flight,
                             "the rounds")
                await _until(lambda: live.stats.deferred == 1, "the deferral")
                status = live.status()
        finally:
            release.set()
    db = tmp_path / "study.sqlite"
    deferred = rows(db, "SELECT c.comment_key, d.reason, d.done_at FROM deferred_variants d "
                        "JOIN comments c USING (comment_id)")
    assert [(k, done) for k, _, done in deferred] == [("gone", None)], deferred
    assert "connection closed" in deferred[0][1], deferred
    assert (status["done"], status["deferred"], status["queued"]) == (2, 1, 0), status
    assert status["deferred_by_reason"] == {"connection closed": 1}, status


async def test_comments_waiting_or_in_a_round_when_the_daemon_stops_are_recorded_as_deferred(tmp_path):
    release = threading.Event()
    try:
        async with _live_daemon(tmp_path) as (url, app, live):
            async with _both_rounds_held(url, app, release) as c:
                await _page(c, "c3", "k3", "what a dumb take")
                await _until(lambda: live.stats.queued == 1, "the comment to wait")
            # the daemon stops here (the block ends) with two rounds held in generation and one comment waiting
    finally:
        release.set()
    db = tmp_path / "study.sqlite"
    deferred = rows(db, "SELECT c.comment_key, d.reason FROM deferred_variants d JOIN comments c USING (comment_id) "
                        "ORDER BY c.comment_key")
    assert [k for k, _ in deferred] == ["k1", "k2", "k3"], deferred
    assert all("daemon stopped" in why for _, why in deferred), deferred
    assert rows(db, "SELECT count(*) FROM variants") == [(0,)]
    assert live.stats.deferred == 3 and live.status()["deferred_by_reason"] == {"daemon stopped": 3}


async def test_deferred_by_reason_counts_each_row_by_the_reason_it_holds(tmp_path):
    db = tmp_path / "study.sqlite"
    # a first daemon defers k1 because its backlog is full; the row keeps that reason
    first = study(perturbation={"enabled": True, "live_backlog": 0, **STRATEGIES})
    async with running_daemon(tmp_path, first) as (url, _app):
        async with _participant(url) as c:
            got = await _variants_of(c, "p1", "k1", "you stupid idiot")
            assert "live_backlog" in got["error"], got
    # the next daemon, with no variant budget, defers k1 again (it stays one row) and k2 for the first time
    second = study(perturbation={"enabled": True, "live_rate": 0, **STRATEGIES})
    async with running_daemon(tmp_path, second) as (url, app):
        async with _participant(url) as c:
            await _variants_of(c, "p2", "k1", "you stupid idiot")
            await _variants_of(c, "p3", "k2", "what a dumb take")
            variants = await _variants_status(c)
    held = dict(rows(db, "SELECT c.comment_key, d.reason FROM deferred_variants d JOIN comments c USING (comment_id)"))
    assert "live_backlog" in held["k1"] and "live_rate" in held["k2"], held
    assert variants["deferred"] == 2
    assert variants["deferred_by_reason"] == {"perturbation.live_backlog": 1, "perturbation.live_rate": 1}, variants


async def _deferred_again(tmp_path, edit: str) -> dict:
    """k1 deferred by a daemon with no variant budget, its deferred_variants row then changed by `edit`
    (SQL), and deferred again by the next daemon: that daemon's status of live variants."""
    cfg = study(perturbation={"enabled": True, "live_rate": 0, **STRATEGIES})
    async with running_daemon(tmp_path, cfg) as (url, _app):
        async with _participant(url) as c:
            await _variants_of(c, "p1", "k1", "you stupid idiot")
    con = sqlite3.connect(tmp_path / "study.sqlite")
    con.execute(edit)
    con.commit()
    con.close()
    async with running_daemon(tmp_path, cfg) as (url, _app):
        async with _participant(url) as c:
            await _variants_of(c, "p2", "k1", "you stupid idiot")
            return await _variants_status(c)


async def test_a_comment_deferred_again_after_its_variants_were_made_holds_its_new_reason(tmp_path):
    db = tmp_path / "study.sqlite"
    # as `modlens rescore --variants` leaves it, with an older reason
    variants = await _deferred_again(tmp_path, "UPDATE deferred_variants SET done_at = '2026-01-01T00:00:00+00:00', "
                                               "reason = 'older', created_at = '2026-01-01T00:00:00+00:00'")
    [(reason, created, done)] = rows(db, "SELECT reason, created_at, done_at FROM deferred_variants")
    assert done is None and "live_rate" in reason and created > "2026-01-01T00:00:00+00:00", (reason, created)
    assert variants["deferred_by_reason"] == {"perturbation.live_rate": 1}, variants


async def test_variants_sent_but_refused_by_the_log_are_recorded_as_deferred(tmp_path):
    # the round made and sent them, but the study log refused their rows (a trigger, real to SQLite):
    # without a deferral nothing would ever put them in the log
    db = tmp_path / "study.sqlite"
    async with _live_daemon(tmp_path) as (url, app, live):
        refuse_inserts(db, "variants")
        async with _participant(url) as c:
            got = await _variants_of(c, "p1", "k1", "you stupid idiot")
            await _until(lambda: live.stats.deferred == 1, "the deferral")
            status = live.status()
    assert got["items"] and all(i["variant_id"] is None for i in got["items"]), got
    assert rows(db, "SELECT count(*) FROM variants") == [(0,)]
    [(key, reason, done)] = rows(db, "SELECT c.comment_key, d.reason, d.done_at FROM deferred_variants d "
                                     "JOIN comments c USING (comment_id)")
    assert key == "k1" and done is None and "refused by the test" in reason, reason
    assert status["deferred_by_reason"] == {"variants not recorded": 1}, status


async def test_a_stop_whose_deferral_the_log_refuses_says_nothing_will_make_them(tmp_path, caplog):
    release = threading.Event()
    db = tmp_path / "study.sqlite"
    try:
        with caplog.at_level(logging.INFO, logger="modlens.daemon"):
            async with _live_daemon(tmp_path) as (url, app, live):
                held = hold_generation(app, release, lambda text: "hold" in text)
                async with _participant(url) as c:
                    await _page(c, "c1", "k1", "hold you stupid idiot")
                    await _until(lambda: held[0] == 1, "the round")
                refuse_inserts(db, "deferred_variants")
    finally:
        release.set()
    said = [r.getMessage() for r in caplog.records if r.getMessage().startswith("stopping: the variants")]
    assert len(said) == 1 and "will not make them" in said[0], said
    assert rows(db, "SELECT count(*) FROM deferred_variants") == [(0,)]
    assert live.status()["deferred_unrecorded"] == 1


async def _hold_inserts(app, db, table: str, wall: threading.Event, *, refuse: bool = False) -> None:
    """The study log's writer waits in SQLite, at its next insert into `table`, until `wall` is set
    (a trigger calling a function of the writer's connection), then refuses it when `refuse`."""
    await app[PIPELINE].writer.submit(lambda lg: lg.conn.create_function("held_by_test", 0, lambda: wall.wait(20)))
    con = sqlite3.connect(db)
    con.execute(f"CREATE TRIGGER hold_{table} BEFORE INSERT ON {table} BEGIN SELECT held_by_test(); "
                + ("SELECT RAISE(ABORT, 'refused by the test'); " if refuse else "") + "END")
    con.commit()
    con.close()


async def test_a_stop_during_a_rounds_refused_write_still_records_its_comments_as_deferred(tmp_path):
    # the round's variants went to the writer (a stop no longer cuts it) and the stop came while the write
    # waited; the log then refused it: the round's own deferral must still run
    db = tmp_path / "study.sqlite"
    release, wall = threading.Event(), threading.Event()
    try:
        async with _live_daemon(tmp_path) as (url, app, live):
            held = hold_generation(app, release)
            async with _participant(url) as c:
                await _page(c, "p1", "k1", "you stupid idiot")
                await _until(lambda: held[0] == 1, "the round")
            await _until(lambda: not app[PIPELINE].unended, "the session's end")  # the stop has nothing else to write
            await _hold_inserts(app, db, "variants", wall, refuse=True)
            release.set()
            await _until(lambda: any(j.handed for jobs in live._round_jobs.values() for j in jobs), "the round's write")
            threading.Timer(0.5, wall.set).start()  # the stop (the block ends) comes while the write waits
    finally:
        release.set()
        wall.set()
    [(key, reason)] = rows(db, "SELECT c.comment_key, d.reason FROM deferred_variants d JOIN comments c USING (comment_id)")
    assert key == "k1" and "variants not recorded" in reason, reason
    assert live.status()["deferred_by_reason"] == {"variants not recorded": 1}, live.status()


def _break_generation(app) -> None:
    """Generating variants of a comment whose text says 'broken' raises (a real step error)."""
    generator = app[ENGINE].generator
    real = generator.generate

    def generate(text, importance=None):
        if "broken" in text:
            raise RuntimeError("generation broke")
        return real(text, importance=importance)

    generator.generate = generate


def _break_answer(live, broken_key: str) -> None:
    """Answering `broken_key` with its variants raises, after the round's write."""
    real = live.render

    def render(msg_id, key, variants, scores, ids, error):
        if variants and key == broken_key:
            raise RuntimeError("answering broke")
        return real(msg_id, key, variants, scores, ids, error)

    live.render = render


async def _round_of_two(url: str, live, second: str) -> tuple[dict, dict]:
    """k1 ('you stupid idiot') and k2 (`second`) sent in one message, so one round: the variants message
    each was answered with, by key, and the status of live variants once the round ended."""
    async with _participant(url) as c:
        await c.request(comments_msg("p1", [("k1", "you stupid idiot"), ("k2", second)]), "comments_ok")
        got = {m["key"]: m for m in [await c.until(lambda m: m["type"] == "variants") for _ in range(2)]}
        await _until(lambda: not live._in_flight, "the round")
        variants = await _variants_status(c)
    return got, variants


async def test_a_refused_round_counts_each_comment_once_as_what_the_log_holds(tmp_path):
    # one comment made, one whose generation failed; the log refuses the round's write (its step error
    # and its variants, one transaction): neither is made nor failed in the log, both are deferred
    db = tmp_path / "study.sqlite"
    async with _live_daemon(tmp_path) as (url, app, live):
        _break_generation(app)
        refuse_inserts(db, "variants")
        async with _participant(url) as c:
            await c.request(comments_msg("p1", [("k1", "you stupid idiot"), ("k2", "broken dumb hater")]), "comments_ok")
            got = [await c.until(lambda m: m["type"] == "variants") for _ in range(2)]
            await _until(lambda: live.stats.deferred + len(live.stats.unrecorded) == 2, "the deferrals")
            status = live.status()
    assert {m["key"] for m in got} == {"k1", "k2"}
    # the failed comment is told it is deferred, as counted, not its step error (the log refused that row)
    [broken] = [m for m in got if m["key"] == "k2"]
    assert broken["error"].startswith("deferred: ") and "generation broke" in broken["error"], broken
    assert "variants not recorded" in broken["error"] and "rescore --variants" in broken["error"], broken
    assert rows(db, "SELECT count(*) FROM step_errors") == [(0,)]
    held = dict(rows(db, "SELECT c.comment_key, d.reason FROM deferred_variants d JOIN comments c USING (comment_id)"))
    assert set(held) == {"k1", "k2"} and all("variants not recorded" in r for r in held.values()), held
    # each comment offered in one count: 2 offered, 2 deferred, none made or failed
    assert (status["done"], status["failed"], status["deferred"]) == (0, 0, 2), status


async def test_a_stop_during_a_connection_closed_deferral_counts_it(tmp_path):
    # the worker writes the deferral of comments whose connection closed; a stop during that write
    # left the row written but never counted
    db = tmp_path / "study.sqlite"
    release, wall = threading.Event(), threading.Event()
    try:
        async with _live_daemon(tmp_path) as (url, app, live):
            async with _both_rounds_held(url, app, release):
                await _leave_while_waiting(url, live)
            await _until(lambda: not app[PIPELINE].unended, "the sessions' ends")  # the stop has nothing else to write
            await _hold_inserts(app, db, "deferred_variants", wall)
            release.set()  # a slot frees; the worker takes the gone comment and writes its deferral, held
            await _until(lambda: live.stats.queued == 0 and live.stats.done == 2, "the worker to take it")
            threading.Timer(0.5, wall.set).start()  # the stop comes while the deferral's write waits
    finally:
        release.set()
        wall.set()
    deferred = rows(db, "SELECT c.comment_key, d.reason FROM deferred_variants d JOIN comments c USING (comment_id)")
    assert [k for k, _ in deferred] == ["gone"] and "connection closed" in deferred[0][1], deferred
    assert live.status()["deferred_by_reason"] == {"connection closed": 1}, live.status()


async def test_a_row_whose_reason_names_no_kind_is_counted_unknown(tmp_path):
    # a row written by an earlier version (no parenthesis) was counted as this connection's backlog
    db = tmp_path / "study.sqlite"
    variants = await _deferred_again(tmp_path, "UPDATE deferred_variants SET reason = 'live variant budget reached'")
    assert rows(db, "SELECT reason FROM deferred_variants") == [("live variant budget reached",)]
    assert variants["deferred_by_reason"] == {"unknown": 1}, variants


async def test_a_round_that_raises_defers_its_comments_as_no_step_error_holds_them(tmp_path):
    # the round itself raised before anything went to the log: no step_errors row holds its comments,
    # so counting them `failed` named rows that are not there, and nothing would retry them
    db = tmp_path / "study.sqlite"
    async with _live_daemon(tmp_path) as (url, app, live):

        async def broken_round(texts):
            raise RuntimeError("the round broke")

        live.engine.variants_scored = broken_round
        async with _participant(url) as c:
            got = await _variants_of(c, "p1", "k1", "you stupid idiot")
            await _until(lambda: not live._in_flight, "the round")
            variants = await _variants_status(c)
    assert "the round broke" in got["error"] and "rescore --variants" in got["error"], got
    assert rows(db, "SELECT count(*) FROM step_errors") == [(0,)]
    [(key, reason, done)] = rows(db, "SELECT c.comment_key, d.reason, d.done_at FROM deferred_variants d "
                                     "JOIN comments c USING (comment_id)")
    assert key == "k1" and done is None and "the round broke" in reason, reason
    # one comment offered, in one count: deferred, with its kind; not failed
    assert (variants["done"], variants["failed"], variants["deferred"]) == (0, 0, 1), variants
    assert variants["deferred_by_reason"] == {"round failed": 1}, variants


async def test_a_round_that_raises_after_its_write_counts_its_comments_as_the_log_holds_them(tmp_path):
    # the log took the round's variants, then answering the first comment raised: both comments' variants
    # are in the log, so they count done (not failed: no step_errors row), and neither is deferred
    db = tmp_path / "study.sqlite"
    async with _live_daemon(tmp_path) as (url, app, live):
        _break_answer(live, "k1")
        got, variants = await _round_of_two(url, live, "what a dumb take")
    # told what the log holds (its variants), not a step error that no step_errors row holds
    assert got["k1"]["error"].startswith("not sent: ") and "answering broke" in got["k1"]["error"], got
    made = dict(rows(db, "SELECT c.comment_key, count(*) FROM variants v JOIN comments c USING (comment_id) "
                         "GROUP BY c.comment_key"))
    assert set(made) == {"k1", "k2"}, made
    assert rows(db, "SELECT count(*) FROM step_errors") == [(0,)]
    assert rows(db, "SELECT count(*) FROM deferred_variants") == [(0,)]
    assert (variants["done"], variants["failed"], variants["deferred"]) == (2, 0, 0), variants


async def test_a_refused_round_that_raises_while_answering_defers_every_comment(tmp_path):
    # the log refused the round's write, then answering its second comment raised: the first, answered
    # before the raise, was in no count and left no row (nothing would make its variants), and the second
    # was deferred as a failed round, though what the log lacks is the refused write
    db = tmp_path / "study.sqlite"
    async with _live_daemon(tmp_path) as (url, app, live):
        _break_answer(live, "k2")
        refuse_inserts(db, "variants")
        got, variants = await _round_of_two(url, live, "what a dumb take")
    assert got["k1"]["items"] and got["k1"]["error"] is None, got["k1"]
    # told it is deferred, as it is counted and held, not the round's exception as a step error
    k2 = got["k2"]["error"]
    assert k2.startswith("deferred: ") and "variants not recorded" in k2 and "rescore --variants" in k2, k2
    assert rows(db, "SELECT count(*) FROM variants") == [(0,)]
    held = dict(rows(db, "SELECT c.comment_key, d.reason FROM deferred_variants d JOIN comments c USING (comment_id)"))
    assert set(held) == {"k1", "k2"} and all("variants not recorded" in r for r in held.values()), held
    # each comment offered in one count: 2 offered, 2 deferred (the log holds their rows), none made or failed
    assert (variants["done"], variants["failed"], variants["deferred"]) == (0, 0, 2), variants
    assert variants["deferred_by_reason"] == {"variants not recorded": 2}, variants


async def test_a_failed_comment_in_a_round_that_raises_is_told_its_own_step_error(tmp_path):
    # k2's generation failed (a step_errors row), then answering k1 raised: k2 was told the round's
    # exception, though the row the log holds for it names its own
    db = tmp_path / "study.sqlite"
    async with _live_daemon(tmp_path) as (url, app, live):
        _break_generation(app)
        _break_answer(live, "k1")
        got, variants = await _round_of_two(url, live, "broken dumb hater")
    [(step, error)] = rows(db, "SELECT step, message FROM step_errors")
    assert step == "variants" and "generation broke" in error, error
    assert "generation broke" in got["k2"]["error"] and "answering broke" not in got["k2"]["error"], got["k2"]
    assert got["k1"]["error"].startswith("not sent: "), got["k1"]
    assert (variants["done"], variants["failed"], variants["deferred"]) == (1, 1, 0), variants
