"""`studies`, `raters`, `sessions` and `ratings`: who rated what, when, under which study
settings. A rating is stored once per client id (a resend returns the stored one), and every
session ends with `ended_by` saying how: 'client' (the extension closed it), 'shutdown' (the
daemon stopped cleanly) or 'recovery' (closed at the next start after a crash, or after a stop that could not
write its end, at its last activity)."""
from __future__ import annotations

from typing import Any

from modlens.studylog.codec import canonical_json, now_iso, text_hash
from modlens.studylog.connection import LogConnection

ENDED_BY = ("client", "shutdown", "recovery")

# A rater who withdrew every consent they gave to the study (`consents.withdrawn_at`) no longer consents:
# the consent text promises they may withdraw at any time. A consent given after the withdrawal (a new
# row) holds again, from then on (`withdrawn_row`). A condition on `raters`: a bundle leaves such a rater
# out (`exchange/bundle.py`), a report their ratings (`analysis/data.py`). A rater without a `consents` row never withdrew: a crowd
# worker `modlens rate` imported (who consented on the crowd platform), a rater of a log older than schema 7.
WITHDREW = ("EXISTS (SELECT 1 FROM consents w WHERE w.study_id = raters.study_id AND w.rater_id = raters.rater_id "
            "AND w.withdrawn_at IS NOT NULL) AND NOT EXISTS (SELECT 1 FROM consents h WHERE h.study_id = "
            "raters.study_id AND h.rater_id = raters.rater_id AND h.withdrawn_at IS NULL)")


def withdrawn_row(row: str, at: str) -> str:
    """The condition on a row of `row` (a table or its alias, with `study_id` and `rater_id`) recorded at
    its column `at`, that its rater withdrew it: they withdrew a consent to the study and no consent of
    theirs that holds now was given at or before it. A withdrawal covers everything recorded before a
    consent given again: what came before the withdrawal, and what came while withdrawn (each hello then
    writes a session), so what a withdrawal took (and `modlens merge --forget-withdrawn --delete` deleted)
    never comes back with a new consent; while no consent holds (`WITHDREW`), all of it. Times compare as
    instants (`julianday`): a client's consent in "Z", the daemon's stamps in "+00:00". The one rule a
    bundle (`exchange/bundle.py`), a report (`analysis/data.py`) and the deletion (`records/forget.py`) apply."""
    mine = f"c.study_id = {row}.study_id AND c.rater_id = {row}.rater_id"
    return (f"(EXISTS (SELECT 1 FROM consents c WHERE {mine} AND c.withdrawn_at IS NOT NULL) AND NOT EXISTS "
            f"(SELECT 1 FROM consents c WHERE {mine} AND c.withdrawn_at IS NULL "
            f"AND julianday(c.consented_at) <= julianday({row}.{at})))")


def ensure_study(db: LogConnection, study_id: str, title: str, config: dict[str, Any]) -> None:
    # keeps the first config: a study's ratings refer to the settings it started with
    db.write("INSERT OR IGNORE INTO studies (study_id, title, config_json, created_at) VALUES (?, ?, ?, ?)",
             (study_id, title, canonical_json(config), now_iso()))


def ensure_rater(db: LogConnection, study_id: str, rater_id: str, consent_at: str | None,
                 consent_text: str | None = None) -> None:
    """The rater; with `consent_at`, their consent to `consent_text` (the exact text they agreed to,
    which the caller checked: the daemon against the study's current text): `raters.consent_at` keeps
    the first consent's time, `consents` one row per text agreed to, `consent_texts` the text by its
    hash. A consent without its text (a synthetic study, a test) sets `raters.consent_at` alone: `consents`
    names a text for every consent since schema 7 (NULL only for those an older modlens recorded)."""
    with db.transaction():
        now = now_iso()
        db.write("INSERT OR IGNORE INTO raters (study_id, rater_id, consent_at, first_seen) VALUES (?, ?, ?, ?)",
                 (study_id, rater_id, consent_at, now))
        if consent_at is None:
            return
        # consent given later than the first contact
        db.write("UPDATE raters SET consent_at = ? WHERE study_id = ? AND rater_id = ? AND consent_at IS NULL",
                 (consent_at, study_id, rater_id))
        if consent_text is None:
            return
        digest = text_hash(consent_text)
        db.write("INSERT OR IGNORE INTO consent_texts (consent_sha256, text, first_seen) VALUES (?, ?, ?)",
                 (digest, consent_text, now))
        # the first time this rater agreed to this text: a later hello repeating it changes nothing while it
        # holds; after a withdrawal a new consent (a new time) is a new row, an old one replayed is no consent
        db.write("INSERT INTO consents (study_id, rater_id, consent_sha256, consented_at) SELECT ?, ?, ?, ? "
                 "WHERE NOT EXISTS (SELECT 1 FROM consents WHERE study_id = ? AND rater_id = ? AND consent_sha256 = ? "
                 "AND (withdrawn_at IS NULL OR consented_at = ?))",
                 (study_id, rater_id, digest, consent_at, study_id, rater_id, digest, consent_at))


def withdraw_consent(db: LogConnection, study_id: str, rater_id: str, withdrawn_at: str) -> int:
    """The rater withdrew their consent to the study at `withdrawn_at` (as the client reported): every
    consent of theirs that holds is marked withdrawn then; one already withdrawn keeps its time (the
    extension says it again at each hello until a new consent). The number of consents it withdrew."""
    with db.transaction():
        db.write("INSERT OR IGNORE INTO raters (study_id, rater_id, consent_at, first_seen) VALUES (?, ?, NULL, ?)",
                 (study_id, rater_id, now_iso()))
        return int(db.write("UPDATE consents SET withdrawn_at = ? WHERE study_id = ? AND rater_id = ? "
                            "AND withdrawn_at IS NULL", (withdrawn_at, study_id, rater_id)).rowcount)


def start_session(db: LogConnection, session_id: str, study_id: str, rater_id: str | None, client: str,
                  client_version: str | None, protocol_version: int | None) -> None:
    db.write("INSERT OR IGNORE INTO sessions (session_id, study_id, rater_id, client, client_version, "
             "protocol_version, started_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
             (session_id, study_id, rater_id, client, client_version, protocol_version, now_iso()))


def _check_ended_by(ended_by: str) -> None:
    if ended_by not in ENDED_BY:
        raise ValueError(f"ended_by must be one of {ENDED_BY}, not {ended_by!r}")


def end_session(db: LogConnection, session_id: str, ended_by: str = "client", at: str | None = None) -> None:
    """At `at` (None: now), the time it ended (a write made later says when it happened); a session
    that already ended keeps its end."""
    _check_ended_by(ended_by)
    db.write("UPDATE sessions SET ended_at = ?, ended_by = ? WHERE session_id = ? AND ended_at IS NULL",
             (at or now_iso(), ended_by, session_id))


# the last moment a session was seen alive: its latest sighting or rating, else its start
# (ISO timestamps in one format and zone compare as strings)
_LAST_ACTIVITY = (
    "max(sessions.started_at, "
    "coalesce((SELECT max(seen_at) FROM sightings g WHERE g.session_id = sessions.session_id), ''), "
    "coalesce((SELECT max(created_at) FROM ratings r WHERE r.session_id = sessions.session_id), ''))")


def close_open_sessions(db: LogConnection, study_id: str | None = None, ended_by: str = "recovery") -> int:
    """Close every session left open (of one study, or all) by a daemon that died: ended_at is
    its last activity, not now, so session lengths stay true. The number closed."""
    _check_ended_by(ended_by)
    return int(db.write(f"UPDATE sessions SET ended_at = {_LAST_ACTIVITY}, ended_by = ? WHERE ended_at IS NULL "
                        "AND (? IS NULL OR study_id = ?)", (ended_by, study_id, study_id)).rowcount)


# what a caller compares a resend with: the rating stored under the client id
_STORED = ("rating_id", "comment_id", "values_json", "anchors_json", "derived_toxicity", "inconsistent",
           "time_spent_over_limit_ms")


class AddedRating(tuple[int, bool]):
    """(rating_id, newly created), as callers unpack it; `stored`: the stored row (`_STORED`'s columns)
    when the rating was not newly created, else None."""
    stored: dict[str, Any] | None


def _added(rating_id: int, stored: dict[str, Any] | None) -> AddedRating:
    added = AddedRating((rating_id, stored is None))
    added.stored = stored
    return added


def stored_rating(db: LogConnection, study_id: str, rater_id: str, client_rating_id: str) -> dict[str, Any] | None:
    """The rating stored under this client id (`_STORED`'s columns), None when there is none."""
    # every column, named by the cursor: a log of an older schema (a participant's, merged) lacks the newer ones
    cursor = db.conn.execute("SELECT * FROM ratings WHERE study_id = ? AND rater_id = ? AND client_rating_id = ?",
                             (study_id, rater_id, client_rating_id))
    existing = cursor.fetchone()
    if existing is None:
        return None
    row_of: dict[str, Any] = dict(zip((d[0] for d in cursor.description), existing))
    return {column: row_of.get(column) for column in _STORED}


def add_rating(db: LogConnection, study_id: str, rater_id: str, client_rating_id: str, session_id: str | None,
               comment_id: int, values: dict[str, str], anchors: dict[str, Any] | None,
               derived_toxicity: str | None, inconsistent: bool, time_spent_ms: int | None,
               time_spent_over_limit_ms: int | None = None) -> AddedRating:
    """Returns (rating_id, newly created); a resent rating returns the stored one unchanged, its row
    in `.stored`."""
    with db.transaction():
        stored = stored_rating(db, study_id, rater_id, client_rating_id)
        if stored is not None:
            return _added(int(stored["rating_id"]), stored)
        row: dict[str, Any] = {
            "study_id": study_id, "rater_id": rater_id, "client_rating_id": client_rating_id, "session_id": session_id,
            "comment_id": comment_id, "values_json": canonical_json(values),
            "anchors_json": None if anchors is None else canonical_json(anchors), "derived_toxicity": derived_toxicity,
            "inconsistent": int(bool(inconsistent)), "time_spent_ms": time_spent_ms, "created_at": now_iso()}
        if time_spent_over_limit_ms is not None:  # named only when set: the column is schema 6's
            row["time_spent_over_limit_ms"] = time_spent_over_limit_ms
        rating_id = db.write(f"INSERT INTO ratings ({', '.join(row)}) VALUES ({', '.join('?' * len(row))})",
                             tuple(row.values())).lastrowid
        assert rating_id is not None
        db.write_many("INSERT INTO rating_values (rating_id, attribute, value) VALUES (?, ?, ?)",
                      [(rating_id, a, str(v)) for a, v in values.items()])
        return _added(rating_id, None)
