"""`detectors` and `scores`: every score names the detector version that made it (a detector's
name and version are its identity; its configuration is kept as it was first used)."""
from __future__ import annotations

import json
from typing import Any, Iterable, NamedTuple, Sequence

from modlens.rows import TextScoreRow
from modlens.studylog import codec
from modlens.studylog.codec import canonical_json, now_iso, text_hash
from modlens.studylog.connection import LOOKUP_CHUNK, MAX_ROWID, LogConnection, StudyLogError
from modlens.studylog.records.batch import write_rows
from modlens.studylog.records.texts import Seen, log_state, text_ids

INSERT_DETECTOR = ("INSERT OR IGNORE INTO detectors (name, version, toxicity_label, threshold, config_json, "
                   "first_used) VALUES (?, ?, ?, ?, ?, ?)")
# a score replaces an earlier error for the same text and detector version, never the reverse
UPSERT_SCORE = (
    "INSERT INTO scores (text_id, detector_id, labels_json, toxicity, latency_ms, error, created_at) "
    "VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (text_id, detector_id) DO UPDATE SET "
    "labels_json = excluded.labels_json, toxicity = excluded.toxicity, latency_ms = excluded.latency_ms, "
    "error = excluded.error, created_at = excluded.created_at "
    "WHERE scores.error IS NOT NULL AND excluded.error IS NULL")


def ensure_detector(db: LogConnection, name: str, version: str, toxicity_label: str | None,
                    threshold: float | None, config: dict[str, Any]) -> int:
    """The detector_id of (name, version), registered with this configuration the first time.
    The log judges a version at the threshold it was registered with (reports, the attack section,
    every decision read from the log): asking for another one is refused, not registered silently
    under the first."""
    with db.locked():
        db.write(INSERT_DETECTOR, (name, version, toxicity_label, threshold, canonical_json(config), now_iso()))
        found, logged, first_used = db.conn.execute(
            "SELECT detector_id, threshold, first_used FROM detectors WHERE name = ? AND version = ?",
            (name, version)).fetchone()
        if logged != threshold and not (logged is not None and threshold is not None
                                        and abs(float(logged) - float(threshold)) < 1e-12):
            raise StudyLogError(
                f"{name} (version {version}) is judged at threshold {logged} in this study log (since {first_used}); "
                f"this run asks for {threshold}. A log keeps one threshold per detector version, so its reports "
                "judge every score of it alike",
                fix=f"set the detector's threshold back to {logged}, or write this run to another log (--db)")
        return int(found)


def _canonical_parts(value: Any, _indent: int) -> tuple[str]:
    """`CANONICAL_ENCODER`'s call on a Python without the C accelerator."""
    return (canonical_json(value),)


class ScoresWritten(NamedTuple):
    """What one write of score rows did to the log, counted from the write: `given` rows, `added`
    (new rows), `replaced` (a good score where the log held an error); the rest changed nothing."""
    given: int
    added: int
    replaced: int

    @property
    def kept(self) -> int:
        """Rows the log already held (its own good score, or an error scored again as an error)."""
        return self.given - self.added - self.replaced

    def plus(self, other: ScoresWritten) -> ScoresWritten:
        return ScoresWritten(*(a + b for a, b in zip(self, other)))


def add_scores(db: LogConnection, rows: Iterable[TextScoreRow]) -> ScoresWritten:
    """(text, detector_id, labels, toxicity, latency_ms, error) rows (a later good score replaces
    an earlier error, never the reverse); what the write did (`ScoresWritten`)."""
    rows = rows if isinstance(rows, list) else list(rows)
    if not rows:
        return ScoresWritten(0, 0, 0)
    enc, join = codec.CANONICAL_ENCODER or _canonical_parts, "".join
    with db.locked():
        ids = text_ids(db, [r[0] for r in rows])
        now = now_iso()
        # the rows the write adds are those past the table's last rowid (SQLite gives a new row
        # max(rowid) + 1 while that fits; else any free one: then the table is counted, slower)
        last = db.scalar("SELECT coalesce(max(rowid), 0) FROM scores")
        whole = last + len(rows) > MAX_ROWID
        before = db.scalar("SELECT count(*) FROM scores") if whole else 0
        # canonical_json inlined: this comprehension is most of the Python time per score row
        changed = write_rows(db, UPSERT_SCORE, [
            (ids[text], det, None if labels is None else join(enc(labels, 0)),
             None if toxicity is None else float(toxicity), latency, error, now)
            for text, det, labels, toxicity, latency, error in rows])
        added = (db.scalar("SELECT count(*) FROM scores") - before if whole
                 else db.scalar("SELECT count(*) FROM scores WHERE rowid > ?", (last,)))
    # an upsert's changes are its inserts and the updates its WHERE let through (an error replaced)
    return ScoresWritten(len(rows), added, changed - added)


def add_score(db: LogConnection, text: str, detector_id: int, labels: dict[str, float] | None,
              toxicity: float | None, latency_ms: float | None, error: str | None) -> None:
    add_scores(db, [(text, detector_id, labels, toxicity, latency_ms, error)])


def get_score(db: LogConnection, text: str, detector_id: int) -> dict[str, Any] | None:
    row = db.conn.execute(
        "SELECT s.labels_json, s.toxicity, s.latency_ms, s.error, s.created_at FROM scores s "
        "JOIN texts t USING (text_id) WHERE t.text_hash = ? AND s.detector_id = ?",
        (text_hash(text), detector_id)).fetchone()
    if row is None:
        return None
    return {"labels": None if row[0] is None else json.loads(row[0]), "toxicity": row[1],
            "latency_ms": row[2], "error": row[3], "created_at": row[4]}


def scored_texts(db: LogConnection, texts: Iterable[str], detector_id: int) -> set[str]:
    """The texts among `texts` that this detector version has a good score for (not an
    error): what an audit or a rerun must not score again. `seen_texts` for one detector."""
    return seen_texts(db, texts, [detector_id])[1][detector_id]


# a chunk's texts in one lookup: (hash, text_id, a detector among those asked with a good score for
# it, or NULL), a row per such detector; no row for a text the log does not hold. The hashes (distinct)
# are joined, not tested with IN: IN builds a temporary index of them first (1.07 -> 0.70 µs per hash
# the log lacks, 2.1 -> 1.8 per hash it holds)
SEEN_TEXTS = ("SELECT t.text_hash, t.text_id, s.detector_id FROM json_each(?2) j JOIN texts t ON t.text_hash = j.value "
              "LEFT JOIN scores s ON s.text_id = t.text_id AND s.detector_id IN (SELECT value FROM json_each(?1)) "
              "AND s.error IS NULL")


def seen_texts(db: LogConnection, texts: Iterable[str], detector_ids: Sequence[int]) -> tuple[Seen, dict[int, set[str]]]:
    """One lookup of `texts` for an audit's chunk, before its compute: for each detector, the texts it
    has a good score for, not an error (detector_id -> those texts), and the texts' hashes and ids
    (`Seen`), which the chunk's transaction takes as its own lookup if nothing was written meanwhile
    (`texts.known`)."""
    state = log_state(db)  # before the lookup: a write after it, even during it, makes `known` refuse it
    hashes = codec.text_hashes(texts)
    by_hash = {h: t for t, h in hashes.items()}
    keys = list(by_hash)
    ids: dict[str, int] = {}
    scored: dict[int, set[str]] = {d: set() for d in detector_ids}
    dets = json.dumps(list(scored))
    for start in range(0, len(keys), LOOKUP_CHUNK):
        # a JSON array of hex digests, written out: they need no escaping (json.dumps was a fifth of the lookup)
        part = '["' + '","'.join(keys[start:start + LOOKUP_CHUNK]) + '"]'
        for h, tid, det in db.conn.execute(SEEN_TEXTS, (dets, part)):
            t = by_hash[h]
            ids[t] = tid
            if det is not None:
                scored[det].add(t)
    return Seen(state, hashes, ids), scored


# The texts of a study's comments (seen in one of its sessions, or rated in it) that lack a score
# row from some of the given detectors, in text_id order after `after`; used to finish, at the
# next start, what a killed daemon sent but never recorded. An error row counts as recorded.
_LACKING_SCORES = """
WITH study_texts(text_id) AS (
    SELECT c.text_id FROM sightings g JOIN sessions s ON s.session_id = g.session_id
        JOIN comments c ON c.comment_id = g.comment_id WHERE s.study_id = :study
    UNION
    SELECT c.text_id FROM ratings r JOIN comments c ON c.comment_id = r.comment_id WHERE r.study_id = :study)
SELECT st.text_id, t.text, json_group_array(d.value) FROM study_texts st JOIN texts t ON t.text_id = st.text_id
    CROSS JOIN json_each(:detectors) d
WHERE st.text_id > :after
    AND NOT EXISTS (SELECT 1 FROM scores sc WHERE sc.text_id = st.text_id AND sc.detector_id = d.value)
GROUP BY st.text_id ORDER BY st.text_id LIMIT :limit"""


def texts_lacking_scores(db: LogConnection, study_id: str, detector_ids: Iterable[int], *, after: int = 0,
                         limit: int = 100) -> list[tuple[int, str, list[int]]]:
    """(text_id, text, detector_ids without a score row) for the comments of `study_id`, at most
    `limit`, text_ids above `after` (pass the last one seen to page through them)."""
    rows = db.conn.execute(_LACKING_SCORES, {"study": study_id, "detectors": json.dumps(list(detector_ids)),
                                             "after": after, "limit": limit}).fetchall()
    return [(tid, text, json.loads(missing)) for tid, text, missing in rows]
