"""`rater_reviews`: the acceptance decision of one rater's work on one task of an item-set study
(the human-centred Perspective study, Table 11). Recomputed from the log's ratings on every `modlens rate`, so a row is
replaced, never duplicated. `crowd_imports`: one row per import of a crowd platform's export, with
the records it skipped."""
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


IMPORT_COUNTS = ("workers", "ratings_new", "ratings_known", "changed", "empty", "incomplete", "repeated")


def add_import(db: LogConnection, study_id: str, fmt: str, source: str, source_sha256: str, records: str,
               skipped: dict[str, int], counts: dict[str, int], on_change: str) -> int:
    """One import's row (`counts`: each of IMPORT_COUNTS; `on_change`: what it did with changed
    answers); returns its import_id. Called in the transaction that stores the import's ratings, so
    the row exists exactly when they do."""
    cols = ("study_id", "format", "source", "source_sha256", "records", "skipped_json", *IMPORT_COUNTS, "on_change",
            "imported_at")
    cur = db.write(f"INSERT INTO crowd_imports ({', '.join(cols)}) VALUES ({', '.join('?' * len(cols))})",
                   (study_id, fmt, source, source_sha256, records, canonical_json(dict(skipped)),
                    *(int(counts[c]) for c in IMPORT_COUNTS), on_change, now_iso()))
    return int(cur.lastrowid or 0)
