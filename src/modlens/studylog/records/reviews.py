"""`rater_reviews`: the acceptance decision of one rater's work on one task of an item-set study
(the human-centred Perspective study, Table 11). Recomputed from the log's ratings on every `modlens rate`, so a row is
replaced, never duplicated."""
from __future__ import annotations

from typing import Any

from modlens.studylog.codec import canonical_json, now_iso
from modlens.studylog.connection import LogConnection

DECISIONS = ("accept", "accept_unused", "reject")
COLUMNS = ("study_id", "rater_id", "task", "source", "decision", "reason", "n_items", "missed", "inconsistent_gold",
           "wrong_gold", "inconsistent", "comment_ids_json", "reviewed_at", "platform_status")


def put_reviews(db: LogConnection, rows: list[dict[str, Any]]) -> None:
    """Insert or replace one row per (study, rater, task); `comment_ids` is a list, `platform_status`
    (None when absent) the platform's word for a submission it rejected after import."""
    for r in rows:
        if r["decision"] not in DECISIONS:
            raise ValueError(f"review decision {r['decision']!r} is not one of {DECISIONS}")
    at = now_iso()
    with db.transaction():
        db.write_many(f"INSERT OR REPLACE INTO rater_reviews ({', '.join(COLUMNS)}) "
                      f"VALUES ({', '.join('?' * len(COLUMNS))})",
                      [tuple(canonical_json(sorted(r["comment_ids"])) if c == "comment_ids_json"
                             else at if c == "reviewed_at" else r.get(c) if c == "platform_status" else r[c]
                             for c in COLUMNS) for r in rows])
