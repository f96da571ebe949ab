"""`deferred_variants`: live comments whose variants the daemon left for later (its variant budget
was reached), each with why; `modlens rescore --variants` makes them and marks them done."""
from __future__ import annotations

from typing import Iterable

from modlens.studylog.codec import now_iso
from modlens.studylog.connection import LogConnection

# a comment deferred twice keeps its first reason; one deferred again after it was done is to do again
UPSERT_DEFERRED = (
    "INSERT INTO deferred_variants (comment_id, reason, created_at, done_at) VALUES (?, ?, ?, NULL) "
    "ON CONFLICT (comment_id) DO UPDATE SET done_at = NULL WHERE done_at IS NOT NULL")
PENDING = ("SELECT d.comment_id, t.text FROM deferred_variants d JOIN comments c ON c.comment_id = d.comment_id "
           "JOIN texts t ON t.text_id = c.text_id WHERE d.done_at IS NULL AND d.comment_id > ? "
           "ORDER BY d.comment_id LIMIT ?")


def defer_variants(db: LogConnection, rows: Iterable[tuple[int, str]]) -> None:
    """(comment_id, reason) rows."""
    now = now_iso()
    db.write_many(UPSERT_DEFERRED, [(cid, reason, now) for cid, reason in rows])


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
