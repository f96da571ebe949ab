"""`deferred_variants`: live comments whose variants the daemon left for later (its variant budget
was reached), each with why; `modlens rescore --variants` makes them and marks them done."""
from __future__ import annotations

from typing import Iterable, cast

from modlens.studylog.codec import now_iso
from modlens.studylog.connection import JSON_KEYS, LogConnection

# a comment deferred again while still to do keeps its row as it is (its first reason and time); one
# deferred again after its variants were made is to do again, for this deferral's reason, from now
UPSERT_DEFERRED = (
    "INSERT INTO deferred_variants (comment_id, reason, created_at, done_at) VALUES (?, ?, ?, NULL) "
    "ON CONFLICT (comment_id) DO UPDATE SET done_at = NULL, reason = excluded.reason, "
    "created_at = excluded.created_at WHERE done_at IS NOT NULL")
HELD = f"SELECT comment_id, reason FROM deferred_variants WHERE comment_id {JSON_KEYS}"
PENDING = ("SELECT d.comment_id, t.text FROM deferred_variants d JOIN comments c ON c.comment_id = d.comment_id "
           "JOIN texts t ON t.text_id = c.text_id WHERE d.done_at IS NULL AND d.comment_id > ? "
           "ORDER BY d.comment_id LIMIT ?")


def defer_variants(db: LogConnection, rows: Iterable[tuple[int, str]]) -> dict[int, str]:
    """(comment_id, reason) rows; returns comment_id -> the reason its row holds after the write (an
    earlier deferral's, for a comment still to do), read in the same transaction."""
    now = now_iso()
    rows = list(rows)
    db.write_many(UPSERT_DEFERRED, [(cid, reason, now) for cid, reason in rows])
    # the log's keyed lookup, its value a reason rather than an id
    return cast(dict[int, str], db.ids_by_key(HELD, sorted({cid for cid, _ in rows})))


def pending_deferred(db: LogConnection, *, after: int = 0, limit: int = 256) -> list[tuple[int, str]]:
    """(comment_id, text) of deferred comments still to do, comment_ids above `after`."""
    return [(cid, text) for cid, text in db.conn.execute(PENDING, (after, limit)).fetchall()]


def mark_deferred_done(db: LogConnection, comment_ids: Iterable[int]) -> None:
    now = now_iso()
    db.write_many("UPDATE deferred_variants SET done_at = ? WHERE comment_id = ?", [(now, cid) for cid in comment_ids])


def deferred_counts(db: LogConnection) -> dict[str, int]:
    """{"to_do": n, "done": n}."""
    to_do, done = db.conn.execute("SELECT count(*) - count(done_at), count(done_at) FROM deferred_variants").fetchone()
    return {"to_do": to_do, "done": done}
