"""A connection's memory of the comments it sent is bounded (RSS over a 20-minute soak, bench/bench_soak.py).
Ratings look a comment up there first, while its write is pending; once forgotten, in the log."""
from __future__ import annotations

import asyncio

from modlens.config import LimitsConfig
from modlens.daemon.session import Session
from modlens.live.session import REMEMBERED

from daemon_helpers import Client, comments_msg, connect, rating_msg, running_daemon, study
from log_helpers import rows


async def test_written_comments_are_forgotten_past_the_bound_pending_ones_never():
    session = Session(LimitsConfig())
    loop = asyncio.get_running_loop()
    pending: asyncio.Future[list[int]] = loop.create_future()
    session.remember_comments("youtube", [f"p{i}" for i in range(20)], pending)
    for n in range(3 * REMEMBERED // 20):
        done: asyncio.Future[list[int]] = loop.create_future()
        done.set_result(list(range(n * 20, n * 20 + 20)))
        session.remember_comments("youtube", [f"k{n}-{i}" for i in range(20)], done)
        assert len(session.comments) <= REMEMBERED + 20
    assert all(("youtube", f"p{i}") in session.comments for i in range(20))  # its write is still pending
    pending.set_result(list(range(1000, 1020)))
    assert await session.comments[("youtube", "p3")].get() == 1003


async def test_a_forgotten_comment_is_still_rated_through_the_log(tmp_path):
    cfg = study(limits={"messages_per_second": 1000, "burst": 1000})
    async with running_daemon(tmp_path, cfg) as (url, app):
        async with connect(url) as ws:
            c = Client(ws)
            await c.hello()
            pages = REMEMBERED // 200 + 2
            for n in range(pages):
                mid = f"c{n}"
                items = [(f"k{n}-{i}", f"comment {i} of page {n}") for i in range(200)]
                assert (await c.request(comments_msg(mid, items), "comments_ok"))["type"] == "comments_ok"
                await c.until(lambda m, mid=mid: m["id"] == mid and m["type"] == "scores")
            from modlens.daemon.app import STATE
            session = next(iter(app[STATE].sockets.values()))
            assert ("youtube", "k0-7") not in session.comments and len(session.comments) <= REMEMBERED + 200
            ack = await c.request(rating_msg("r-early", "k0-7"), "rating_ok")
            assert ack["type"] == "rating_ok", ack
    [(cid,)] = rows(tmp_path / "study.sqlite", "SELECT comment_id FROM ratings WHERE client_rating_id = 'r-early'")
    assert rows(tmp_path / "study.sqlite", f"SELECT comment_key FROM comments WHERE comment_id = {cid}") == [("k0-7",)]


async def test_the_daemons_study_log_page_cache_is_capped(tmp_path):
    """SQLite's page cache was the daemon's one growing allocation in a soak (measured: native heap
    flat but for it); the daemon's writer keeps 16 MiB, not the ingest writer's 64."""
    from modlens.daemon.app import PIPELINE
    from modlens.live.run import DAEMON_CACHE_MIB

    async with running_daemon(tmp_path, study()) as (_, app):
        writer = app[PIPELINE].writer
        got = await writer.submit(lambda lg: lg.conn.execute("PRAGMA cache_size").fetchone()[0])
    assert got == -DAEMON_CACHE_MIB * 1024 == -16 * 1024
