"""A `variants` message starting "deferred: " says the comment was put off and recorded in
deferred_variants, which `modlens rescore --variants` makes later. When that record failed, the
message said the same: the client was told its variants would come later, though nothing would make
them. It now says the deferral was not recorded, and why. The failure is real to SQLite: a trigger
on the daemon's own log refuses the deferred_variants insert."""
from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

from daemon_helpers import Client, comments_msg, connect, running_daemon, study
from log_helpers import refuse_inserts, rows

STRATEGIES = {"budget": 1, "strategies": ["repeat_char", "mixed_case"]}


@asynccontextmanager
async def deferring_participant(tmp_path: Path) -> AsyncIterator[tuple[Client, Path]]:
    """A participant said hello to a daemon whose study defers every comment's variants (live_rate 0),
    and the daemon's log."""
    cfg = study(perturbation={"enabled": True, "live_rate": 0, **STRATEGIES})
    db = tmp_path / "study.sqlite"
    async with running_daemon(tmp_path, cfg) as (url, _app):
        async with connect(url) as ws:
            c = Client(ws)
            await c.hello()
            yield c, db


async def test_a_deferral_the_log_did_not_record_is_not_said_to_be_made_later(tmp_path):
    async with deferring_participant(tmp_path) as (c, db):
        refuse_inserts(db, "deferred_variants")
        await c.request(comments_msg("p1", [("k1", "you stupid idiot")]), "comments_ok")
        got = await c.until(lambda m: m["type"] in ("variants", "error") and m.get("id") == "p1")
    assert rows(db, "SELECT count(*) FROM deferred_variants") == [(0,)]
    assert got["type"] == "variants" and got["items"] == [], got
    assert got["error"].startswith("deferred: ") and "live_rate" in got["error"]
    assert "rescore --variants` makes them later" not in got["error"], got["error"]
    assert "not recorded" in got["error"] and "refused by the test" in got["error"], got["error"]


async def test_status_counts_as_deferred_only_the_deferrals_the_log_holds(tmp_path):
    # status_ok's queue.variants.deferred is what `modlens status` and the popup call the comments
    # `modlens rescore --variants` makes: an unrecorded deferral is counted apart
    async with deferring_participant(tmp_path) as (c, db):
        await c.request(comments_msg("p1", [("k1", "you stupid idiot")]), "comments_ok")
        await c.until(lambda m: m["type"] == "variants" and m["id"] == "p1")
        refuse_inserts(db, "deferred_variants")
        await c.request(comments_msg("p2", [("k2", "what a dumb take"), ("k3", "you hate it")]), "comments_ok")
        await c.until(lambda m: m["type"] == "variants" and m["id"] == "p2")
        await c.until(lambda m: m["type"] == "variants" and m["id"] == "p2")
        status = await c.request({"type": "status", "id": "s1"}, "status_ok")
    variants = status["queue"]["variants"]
    assert rows(db, "SELECT count(*) FROM deferred_variants") == [(1,)]
    assert (variants["deferred"], variants["deferred_unrecorded"]) == (1, 2), variants
    assert sum(variants["deferred_by_reason"].values()) == 1


async def test_status_counts_a_comment_deferred_twice_once_as_the_log_holds_it(tmp_path):
    # deferred_variants has one row per comment (a deferral again keeps the row): the same comment
    # seen on a page again, and deferred again, is still one comment for `modlens rescore --variants`
    async with deferring_participant(tmp_path) as (c, db):
        for mid in ("p1", "p2"):
            await c.request(comments_msg(mid, [("k1", "you stupid idiot")]), "comments_ok")
            got = await c.until(lambda m, mid=mid: m["type"] == "variants" and m["id"] == mid)
            assert got["error"].startswith("deferred: "), got
        status = await c.request({"type": "status", "id": "s1"}, "status_ok")
    variants = status["queue"]["variants"]
    assert rows(db, "SELECT count(*) FROM deferred_variants") == [(1,)]
    assert (variants["deferred"], variants["deferred_unrecorded"]) == (1, 0), variants
    assert sum(variants["deferred_by_reason"].values()) == 1, variants
