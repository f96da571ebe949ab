"""`modlens feed` exits only once everything it sent and was answered is in the study log.

The daemon sends a page's `scores` before it writes their rows (the highlight never waits for the
disk), so a feed that stopped at its last `scores` left a `modlens feed && modlens report` to read a
log without the newest page's scores. Here the daemon's real score write is made slow (the engine's
`record_results`, delayed in the writer thread before it writes), and feed's client logic must
still find every comment scored in the log the moment it returns; a write that fails makes feed
fail, with the daemon's account of what is missing, instead of printing its summary."""
from __future__ import annotations

import asyncio
import sqlite3
import time

import pytest

from daemon_helpers import TOKEN, Client, comments_msg, connect, daemon_thread, running_daemon, study
from modlens.chunks import sinks
from modlens.cli import main
from modlens.live import service, variants
from modlens.protocol.client import make_pages, send_pages
from modlens.studylog.connection import LogUnwritable

SLOW_S = 0.25


def _slow_record_results(monkeypatch) -> None:
    """The score rows are written SLOW_S late: the real write, delayed in the writer thread."""
    def slow(*args, **kwargs):
        time.sleep(SLOW_S)
        return sinks.record_results(*args, **kwargs)

    monkeypatch.setattr(service, "record_results", slow)


def _failing(monkeypatch, module, name: str) -> None:
    """`module.name`'s write fails as a full disk makes it fail (the log refuses the write)."""
    def fail(*args, **kwargs):
        raise LogUnwritable("the study log cannot be written: database or disk is full", reason="disk full")

    monkeypatch.setattr(module, name, fail)


def _scored_keys(db, platform: str) -> set[str]:
    con = sqlite3.connect(db)
    try:
        return {k for (k,) in con.execute(
            "SELECT DISTINCT c.comment_key FROM comments c JOIN scores s ON s.text_id = c.text_id "
            "WHERE c.platform = ? AND s.error IS NULL", (platform,))}
    finally:
        con.close()


def _rows(n: int, tag: str) -> list[tuple[str, str]]:
    return [(f"{tag}-{i}", f"comment {tag} {i} you stupid idiot" if i % 2 else f"comment {tag} {i} lovely") for i in range(n)]


async def test_feed_returns_only_once_every_pages_scores_are_in_the_log(tmp_path, monkeypatch):
    _slow_record_results(monkeypatch)
    rows = _rows(9, "slow")
    pages = make_pages(rows, 4, "feedsync", "https://example.org/slow", "slow")
    async with running_daemon(tmp_path, study()) as (url, _app):
        stats = await send_pages(url, TOKEN, pages, variants=False, concurrency=2)
        scored = _scored_keys(tmp_path / "study.sqlite", "feedsync")  # read the moment feed returned
    assert stats.comments == 9
    assert scored == {k for k, _ in rows}
    assert stats.writes == len(pages)  # each page's score write, confirmed by the daemon's sync_ok


async def test_feed_counts_every_connections_writes_when_their_syncs_overlap(tmp_path, monkeypatch):
    """Two connections, one page each, and the daemon answers neither `sync` before both arrived: both
    are in flight at once, as they were when one connection's slow score write was still pending as the
    other synced. Each connection's confirmed writes are added to the total when its own `sync_ok`
    arrives; adding them to a total read before the wait lost the first answer's."""
    _slow_record_results(monkeypatch)
    both_asked, asked, answered = asyncio.Event(), [], []
    real_sync = service.LiveService.sync

    async def sync_once_both_asked(self, session, msg):
        asked.append(msg.id)
        if len(asked) == 2:
            both_asked.set()
        await asyncio.wait_for(both_asked.wait(), 30)
        ok = await real_sync(self, session, msg)
        answered.append(ok.writes)
        return ok

    monkeypatch.setattr(service.LiveService, "sync", sync_once_both_asked)
    rows = _rows(8, "overlap")
    pages = make_pages(rows, 4, "feedsync", "https://example.org/overlap", "overlap")
    async with running_daemon(tmp_path, study()) as (url, _app):
        stats = await send_pages(url, TOKEN, pages, variants=False, concurrency=2)
    assert len(pages) == 2 and stats.comments == 8
    assert sorted(answered) == [1, 1]  # each connection sent one page: both answers carry a write
    assert stats.writes == 2  # one score write per page, each confirmed by its connection's sync_ok


@pytest.mark.parametrize("perturbation, module, name, missing", [
    ({"enabled": False}, service, "record_results", "the scores of comments message 'page1'"),
    ({"enabled": True, "live_rate": 1000, "budget": 1, "strategies": ["repeat_char"]}, variants, "record_variants",
     "the variant rows of comments 'row-1', 'row-2', 'row-3'"),
    ({"enabled": True, "live_rate": 0, "strategies": ["repeat_char"]}, variants, "defer_variants",
     "the deferred-variant rows of comments 'row-1', 'row-2', 'row-3'"),
], ids=["scores", "variants", "deferred-variants"])
def test_a_failed_write_behind_an_answer_makes_feed_fail(tmp_path, monkeypatch, capsys, perturbation, module, name,
                                                         missing):
    _failing(monkeypatch, module, name)
    f = tmp_path / "c.csv"
    f.write_text("text\n" + "".join(f"you stupid idiot {i}\n" for i in range(3)), encoding="utf-8")
    with daemon_thread(tmp_path, study(perturbation=perturbation)) as url:
        code = main(["feed", str(f), "--daemon", url, "--token", TOKEN])
    out, err = capsys.readouterr()
    assert code == 1, err
    assert len(out.splitlines()) == 3  # the answers were printed as they came ...
    assert "not_stored" not in err and "not everything the daemon answered is in the study log" in err, err  # ... not vouched for
    assert f"{missing}: the study log cannot be written: database or disk is full" in err and "fix:" in err
    assert "comments in 1 pages" not in err  # no summary: feed did not finish


async def test_sync_waits_for_the_score_write_and_names_a_failed_one(tmp_path, monkeypatch):
    """The protocol itself: `sync_ok` comes after the slow score rows are committed; once a score
    write failed, every `sync` of that connection is answered `not_stored`, and the socket stays open."""
    _slow_record_results(monkeypatch)
    db = tmp_path / "study.sqlite"
    async with running_daemon(tmp_path, study()) as (url, _app):
        async with connect(url) as ws:
            c = Client(ws)
            await c.hello()
            assert (await c.request({"type": "sync", "id": "s0"})) == {"type": "sync_ok", "id": "s0", "writes": 0}
            await c.send(comments_msg("p1", [("k1", "you idiot"), ("k2", "hello")], platform="syncproto"))
            await c.until(lambda m: m["type"] == "scores" and m["id"] == "p1")
            ok = await c.request({"type": "sync", "id": "s1"})
            assert ok == {"type": "sync_ok", "id": "s1", "writes": 1}
            assert _scored_keys(db, "syncproto") == {"k1", "k2"}

            _failing(monkeypatch, service, "record_results")
            await c.send(comments_msg("p2", [("k3", "you dumb idiot")], platform="syncproto"))
            await c.until(lambda m: m["type"] == "scores" and m["id"] == "p2")
            for sid in ("s2", "s3"):
                refused = await c.request({"type": "sync", "id": sid})
                assert refused["type"] == "error" and refused["code"] == "not_stored", refused
                assert "the scores of comments message 'p2'" in refused["message"]
                assert "database or disk is full" in refused["message"]
            assert (await c.request({"type": "ping", "id": "still-open"}))["type"] == "pong"
        assert "k3" not in _scored_keys(db, "syncproto")


async def test_sync_is_refused_before_hello_and_with_a_bad_id(tmp_path):
    async with running_daemon(tmp_path, study()) as (url, _app):
        async with connect(url) as ws:
            c = Client(ws)
            early = await c.request({"type": "sync", "id": "s-early"})
            assert (early["type"], early["code"], early["id"]) == ("error", "hello_required", "s-early")
            await c.hello()
            await c.send({"type": "sync"})
            no_id = await c.until(lambda m: m["type"] == "error")
            assert (no_id["code"], no_id["id"]) == ("invalid_fields", None) and "id" in no_id["message"]
            await c.send({"type": "sync", "id": 7})
            bad_id = await c.until(lambda m: m["type"] == "error")
            assert bad_id["code"] == "invalid_fields" and "id" in bad_id["message"]
            later = await c.request({"type": "sync", "id": "s-later", "since": "yesterday"})  # unknown fields: ignored
            assert later == {"type": "sync_ok", "id": "s-later", "writes": 0}

