"""Deleting what a merged log holds of the raters who withdrew consent (`modlens merge --forget-withdrawn`,
`exchange/forget.py`, which opens the log and decides between a dry run and the deletion).

A rater withdrew when a consent of theirs in the log is withdrawn (`consents.withdrawn_at`, `withdrawals`;
what `held` counts of them, which `modlens merge` says). Their own rows the withdrawal covers go
(`sessions.withdrawn_row`: all of them while no consent of theirs holds; of one who agreed again, those
recorded before that consent, while withdrawn too, which a consent given again does not bring back): ratings
(with their values), sessions, the sightings of those sessions, their task reviews, and their `raters`
row while no consent of theirs holds. A row that other
people's data shares goes only when nothing else refers to it any more: a comment when no other
sighting, rating, gold label, audit run or task review names it (and it is not one of the study's own
gold or anchor comments); then what belongs to it alone (its labels, daemon variants, media links,
media scores, deferred variants), its page when no comment is left on it, its media when no comment or
fused case shows them, and each text when nothing left refers to it, with its scores, normalizations
and step errors. Provenance (`row_sources`) of every deleted row goes with it. A comment or page that
stays no longer keeps the rater's visit where theirs was the first (`_AS_SEEN`), unless no one left was
sent the text it keeps though one saw the comment (`_KEPT`: counted and reported, not changed); one
only others' ratings keep, no one left having seen it, keeps its text alone. The consents stay: the
record of the withdrawal, and of why the rater's data is gone (a consent's ids and times, none of their
data); so does `bundles` (what each merge brought, as it said then).

Every reference to a row this may delete is classified below (`REFERENCES`), checked against the table
declaration at import: a table added later that names a comment, text, page or media row must say
whether it keeps that row or goes with it.
"""
from __future__ import annotations

import sqlite3
from typing import Any, Collection

from modlens.studylog.records.merged import row_key_sql
from modlens.studylog.records.sessions import WITHDREW, withdrawn_row
from modlens.studylog.tables import TABLE, TABLES, Table

# the shared rows, in the order they are decided: a deleted comment makes its page, media and texts
# candidates; deleted media their OCR and speech texts; a deleted text its normalized forms
SHARED = ("comments", "pages", "media", "texts")

# (table, column referencing a SHARED row) -> when a row of it keeps that row: an SQL condition on the
# row (`x`), "1" always (someone's use of it), "0" never (it belongs to that row and goes with it)
REFERENCES: dict[tuple[str, str], str] = {
    ("comments", "page_id"): "1",
    ("comments", "text_id"): "1",
    ("sightings", "comment_id"): "1",  # another rater's (the withdrawn rater's are deleted first)
    ("sightings", "text_id"): "1",
    ("ratings", "comment_id"): "1",
    ("run_items", "comment_id"): "1",  # an audit run's dataset
    ("gold_labels", "comment_id"): "1",  # the study's gold
    ("labels", "comment_id"): "0",
    ("variants", "comment_id"): "x.run_id IS NOT NULL",  # an audit's variant keeps it; the daemon's go with it
    ("variants", "source_text_id"): "1",
    ("variants", "text_id"): "1",
    ("comment_media", "comment_id"): "0",
    ("comment_media_scores", "comment_id"): "0",
    ("deferred_variants", "comment_id"): "0",
    ("comment_media", "media_id"): "1",
    ("case_media", "media_id"): "1",
    ("ocr_results", "media_id"): "0",
    ("asr_results", "media_id"): "0",
    ("ocr_results", "text_id"): "1",
    ("asr_results", "text_id"): "1",
    ("scores", "text_id"): "0",
    ("step_errors", "text_id"): "0",
    ("normalizations", "source_text_id"): "0",
    # the normalized form of a text that stays keeps it (decided to a fixed point: `_undecided`)
    ("normalizations", "result_text_id"): "x.source_text_id NOT IN (SELECT f.id FROM temp.f_texts f)",
    ("fused_cases", "seed_text_id"): "1",
    ("fused_cases", "caption_text_id"): "1",
    ("case_parts", "text_id"): "1",
}

# what keeps a comment beyond the rows that reference it by column: the study's gold and anchor
# comments (written from the study config, platform `study`) and any task review's list of comments
_ALSO_KEEPS = {"comments": ("p.platform = 'study'",
                            "EXISTS (SELECT 1 FROM rater_reviews r, json_each(r.comment_ids_json) j "
                            "WHERE j.value = p.comment_id)")}

# A comment or page that stays keeps what the session that sent it first recorded (its first_seen, the
# comment's time shown, the page's url and title: docs/MULTI.md). Where the withdrawn rater's sighting came
# first, that is their visit: it becomes what those who stay recorded, or unknown, as a bundle leaves it
# where that session does not travel (`exchange/bundle.py`, `_AS_SEEN`). temp.f_seen: per comment the
# rater's sessions saw, its page, their first sighting of it, and whether they were sent the text the log
# keeps for it (read before their sightings go).
# A comment no remaining session saw at all, kept by another rater's rating of it (a rating sent without
# a sighting), was recorded by the rater's visit alone: its text stays (what that rating is of), its
# first_seen becomes when the first remaining rating of it was made, and its page's the first such time
# of a comment on it, with no url or title.
_OTHERS_FIRST = ("(SELECT min(o.seen_at) FROM sightings o WHERE o.comment_id = comments.comment_id "
                 "AND (o.text_id IS NULL OR o.text_id = comments.text_id))")
_UNSEEN = "NOT EXISTS (SELECT 1 FROM sightings o WHERE o.comment_id = {c})"
_FIRST_RATED = "(SELECT min(r.created_at) FROM ratings r WHERE r.comment_id = {c})"
_PAGE_OTHERS_FIRST = ("(SELECT min(o.seen_at) FROM sightings o JOIN comments x USING (comment_id) "
                      "WHERE x.page_id = {page})")
_AS_SEEN = {
    "comments": "UPDATE comments SET first_seen = coalesce(" + _OTHERS_FIRST + ", "
                + _FIRST_RATED.format(c="comments.comment_id") + "), time_shown = NULL WHERE comment_id IN "
                "(SELECT f.id FROM temp.f_seen f) "
                f"AND ((SELECT f.seen_at FROM temp.f_seen f WHERE f.id = comments.comment_id) <= {_OTHERS_FIRST} "
                "OR (platform <> 'study' AND " + _UNSEEN.format(c="comments.comment_id") + " AND "
                + _FIRST_RATED.format(c="comments.comment_id") + " IS NOT NULL))",
    "pages": "UPDATE pages SET first_seen = coalesce(" + _PAGE_OTHERS_FIRST.format(page="pages.page_id") + ", "
             "(SELECT min(x.first_seen) FROM comments x WHERE x.page_id = pages.page_id), first_seen), url = NULL, "
             "title = NULL WHERE page_id IN (SELECT f.page_id FROM temp.f_seen f WHERE f.page_id IS NOT NULL "
             "GROUP BY f.page_id HAVING " + _PAGE_OTHERS_FIRST.format(page="f.page_id") + " IS NULL OR min(f.seen_at) <= "
             + _PAGE_OTHERS_FIRST.format(page="f.page_id") + ")",
}
# The log keeps one text per comment, the first one sent, with that visit's first_seen and time shown. A
# comment that stays whose kept text the rater's sessions were sent and no remaining session was (the
# others saw an edited version; one they only rated is `_AS_SEEN`'s) keeps all three as the rater's
# visit left them: no one else's visit recorded what could stand in their place (a bundle leaves such a
# comment behind). Counted,
# so the report says so (`kept`); the study's own gold and anchor comments are the study's, not a visit.
_KEPT = ("SELECT count(*) FROM comments c JOIN temp.f_seen f ON f.id = c.comment_id WHERE f.own_text "
         "AND c.platform <> 'study' AND NOT EXISTS (SELECT 1 FROM sightings o WHERE o.comment_id = c.comment_id "
         "AND (o.text_id IS NULL OR o.text_id = c.text_id)) AND NOT (" + _UNSEEN.format(c="c.comment_id") + " AND "
         + _FIRST_RATED.format(c="c.comment_id") + " IS NOT NULL)")

# the order a report lists the tables in: the rater's own rows, then what went with them
ORDER = ("sessions", "ratings", "rating_values", "sightings", "rater_reviews", "raters", "comments", "labels",
         "variants", "comment_media", "comment_media_scores", "deferred_variants", "pages", "media", "ocr_results",
         "asr_results", "texts", "scores", "normalizations", "step_errors", "row_sources")


def _references() -> dict[str, list[tuple[Table, str]]]:
    """Per SHARED table, the (table, column) that reference it, from the declaration."""
    out: dict[str, list[tuple[Table, str]]] = {name: [] for name in SHARED}
    for t in TABLES:
        for c in t.columns:
            if c.parent in out:
                out[c.parent].append((t, c.name))
    return out


def _check() -> None:
    declared = {(t.name, c) for refs in _references().values() for t, c in refs}
    if declared != set(REFERENCES):
        raise RuntimeError(f"records/forget.py: references to comments, pages, media or texts not classified "
                           f"{sorted(declared - set(REFERENCES))}, classified but not declared "
                           f"{sorted(set(REFERENCES) - declared)}")


_check()
_REFS = _references()


# a withdrawn rater's own rows (bound :s, :r), which go first: all else goes only with them. Those their
# withdrawal covers (`sessions.withdrawn_row`): all of them while no consent of theirs holds; of a rater
# who agreed again, what they recorded before that consent (the `raters` row stays, and what they
# recorded since)
_THEIRS = "study_id = :s AND rater_id = :r"
_SESSIONS = f"(SELECT session_id FROM sessions WHERE {_THEIRS} AND {withdrawn_row('sessions', 'started_at')})"
_OWN_RATINGS = f"{_THEIRS} AND {withdrawn_row('ratings', 'created_at')}"
_RATINGS = f"(SELECT rating_id FROM ratings WHERE ({_OWN_RATINGS}) OR session_id IN {_SESSIONS})"
_REVIEWS = f"{_THEIRS} AND {withdrawn_row('rater_reviews', 'reviewed_at')}"
_RATER = f"{_THEIRS} AND {WITHDREW}"
# how many of them `held` counts, per kind (rating_values go with their ratings)
_HELD = {"sessions": f"SELECT count(*) FROM sessions WHERE session_id IN {_SESSIONS}",
         "ratings": f"SELECT count(*) FROM ratings WHERE rating_id IN {_RATINGS}",
         "sightings": f"SELECT count(*) FROM sightings WHERE session_id IN {_SESSIONS}",
         "reviews": f"SELECT count(*) FROM rater_reviews WHERE {_REVIEWS}",
         "raters": f"SELECT count(*) FROM raters WHERE {_RATER}"}


# the candidate sets are temp tables of one column, `id`, always read qualified (`SELECT f.id FROM
# temp.f_texts f`): an unqualified `text_id` there would silently name the outer row's column
class _Deleter:
    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn
        self.counts: dict[str, int] = {}
        self.cleared: dict[str, int] = {}
        self.kept: dict[str, int] = {}

    def delete(self, table: str, where: str, params: dict[str, Any] | None = None) -> None:
        """Delete `table`'s rows `where`: first the shared rows they name become candidates, and their
        provenance goes."""
        t, params = TABLE[table], params or {}
        for c in t.columns:
            if c.parent in SHARED:
                self.conn.execute(f"INSERT OR IGNORE INTO temp.f_new_{c.parent} SELECT {c.name} FROM {table} "
                                  f"WHERE ({where}) AND {c.name} IS NOT NULL", params)
        if t.travel is not None and t.travel.tracked:
            self._count("row_sources", self.conn.execute(
                f"DELETE FROM row_sources WHERE table_name = '{table}' AND row_key IN "
                f"(SELECT {row_key_sql(t, table)} FROM {table} WHERE {where})", params).rowcount)
        self._count(table, self.conn.execute(f"DELETE FROM {table} WHERE {where}", params).rowcount)

    def _count(self, table: str, n: int) -> None:
        if n > 0:
            self.counts[table] = self.counts.get(table, 0) + n

    def rater(self, study_id: str, rater_id: str) -> dict[str, int]:
        """Delete one withdrawn rater's rows and what is left that no one refers to; the rows deleted, per table."""
        self.counts = {}
        for name in SHARED:
            self.conn.execute(f"DELETE FROM temp.f_new_{name}")
        p = {"s": study_id, "r": rater_id}
        self.conn.execute("DELETE FROM temp.f_seen")
        self.conn.execute("INSERT INTO temp.f_seen SELECT s.comment_id, c.page_id, min(s.seen_at), "
                          "max(s.text_id IS NULL OR s.text_id = c.text_id) FROM sightings s JOIN comments c "
                          f"USING (comment_id) WHERE s.session_id IN {_SESSIONS} GROUP BY s.comment_id", p)
        # the bundles that brought what the withdrawal covers: of a rater who agreed again, whose `raters` row
        # stays, their provenance of it goes too, so `merge --list` says those bundles' rows of the rater were
        # deleted (a bundle carries a rater's rows from before a withdrawal or after a consent given again, never
        # both)
        brought = self.conn.execute(
            "SELECT DISTINCT bundle_id FROM row_sources WHERE (table_name = 'sessions' AND row_key IN (SELECT "
            f"{row_key_sql(TABLE['sessions'], 'sessions')} FROM sessions WHERE session_id IN {_SESSIONS})) OR "
            f"(table_name = 'ratings' AND row_key IN (SELECT {row_key_sql(TABLE['ratings'], 'ratings')} FROM ratings "
            f"WHERE rating_id IN {_RATINGS}))", p).fetchall()
        self.delete("rating_values", f"rating_id IN {_RATINGS}", p)
        self.delete("ratings", f"rating_id IN {_RATINGS}", p)
        self.delete("sightings", f"session_id IN {_SESSIONS}", p)
        self.delete("sessions", f"session_id IN {_SESSIONS}", p)
        self.delete("rater_reviews", _REVIEWS, p)
        self.delete("raters", _RATER, p)
        for (bundle_id,) in brought:
            self._count("row_sources", self.conn.execute(
                "DELETE FROM row_sources WHERE table_name = 'raters' AND row_key = :s || '/' || :r "
                "AND bundle_id = :b", {**p, "b": bundle_id}).rowcount)
        for name in SHARED:
            self._shared(name)
        self.cleared = {}
        for table, sql in _AS_SEEN.items():
            n = self.conn.execute(sql).rowcount
            if n > 0:
                self.cleared[table] = n
        kept = self.conn.execute(_KEPT).fetchone()[0]
        self.kept = {"comments": kept} if kept else {}
        return self.counts

    def _shared(self, name: str) -> None:
        """Delete the candidate rows of a SHARED table no remaining row keeps, with the rows that go with
        them; a text's normalized forms become candidates in turn, until none is left."""
        t = TABLE[name]
        pk = t.primary_key[0]
        while True:
            self.conn.execute(f"DELETE FROM temp.f_{name}")
            self.conn.execute(f"INSERT INTO temp.f_{name} SELECT n.id FROM temp.f_new_{name} n "
                              f"WHERE n.id IN (SELECT {pk} FROM {name})")
            self.conn.execute(f"DELETE FROM temp.f_new_{name}")
            self._undecided(name)
            if not self.conn.execute(f"SELECT 1 FROM temp.f_{name} LIMIT 1").fetchone():
                return
            going = f"IN (SELECT f.id FROM temp.f_{name} f)"
            for child, column in _REFS[name]:
                if child.name != name:
                    self.delete(child.name, f"{column} {going}")
            self.delete(name, f"{pk} {going}")

    def _undecided(self, name: str) -> None:
        """Leave out of temp.f_<name> every row something that stays refers to: to a fixed point, as
        a row's staying (a text) may keep another (its normalized form)."""
        pk = TABLE[name].primary_key[0]
        keeps = [f"EXISTS (SELECT 1 FROM {t.name} x WHERE x.{c} = p.{pk}"
                 f"{'' if REFERENCES[(t.name, c)] == '1' else ' AND ' + REFERENCES[(t.name, c)]})"
                 for t, c in _REFS[name] if REFERENCES[(t.name, c)] != "0"]
        keeps += _ALSO_KEEPS.get(name, ())
        sql = (f"DELETE FROM temp.f_{name} WHERE id IN (SELECT p.{pk} FROM {name} p WHERE p.{pk} IN "
               f"(SELECT f.id FROM temp.f_{name} f) AND ({' OR '.join(keeps)}))")
        while self.conn.execute(sql).rowcount > 0:
            pass


def withdrawals(conn: sqlite3.Connection) -> list[tuple[str, str, str, str | None]]:
    """(study, rater, their latest withdrawal, when they agreed again: the first of their consents that hold,
    else None) of every rater who ever withdrew a consent: those whose rows `withdrawn_row` covers. One who
    agreed again keeps what they recorded since then (and their `raters` row), not what the withdrawal covers:
    everything recorded before it, while withdrawn too."""
    return conn.execute(
        "SELECT study_id, rater_id, max(withdrawn_at), min(consented_at) FILTER (WHERE withdrawn_at IS NULL) "
        "FROM consents GROUP BY study_id, rater_id HAVING count(withdrawn_at) > 0 ORDER BY study_id, rater_id"
    ).fetchall()


def held(conn: sqlite3.Connection, raters: Collection[tuple[str, str]] | None = None) -> list[dict[str, Any]]:
    """Per rater who withdrew (`withdrawals`, agreed again or not; of `raters`, (study, rater) pairs, alone when
    given), their own rows the log holds that the withdrawal covers, which `forget_withdrawn` deletes first (the
    rows no one else needs go only with them, so it deletes something exactly when one of these is not 0):
    {"study_id", "rater_id", "withdrawn_at", "agreed_again" (when, or None), "sessions", "ratings" (theirs or
    of their sessions), "sightings" (of their sessions), "reviews" (task reviews), "raters" (their `raters`
    row, 0 or 1: 0 while a consent holds)}."""
    out = []
    for study_id, rater_id, at, again in withdrawals(conn):
        if raters is not None and (study_id, rater_id) not in raters:
            continue
        p = {"s": study_id, "r": rater_id}
        out.append({"study_id": study_id, "rater_id": rater_id, "withdrawn_at": at, "agreed_again": again,
                    **{kind: conn.execute(sql, p).fetchone()[0] for kind, sql in _HELD.items()}})
    return out


def forget_withdrawn(conn: sqlite3.Connection) -> list[dict[str, Any]]:
    """Delete, inside the caller's transaction, the rows of every rater who withdrew that their withdrawal
    covers (all of them, or of one who agreed again what came before that consent); per rater
    {"study_id", "rater_id", "withdrawn_at", "agreed_again" (when, or None), "deleted": {table: rows}} (a rater whose rows were
    deleted before: {}), "cleared": {"comments"|"pages": rows that stay, rewritten as `_AS_SEEN` says},
    "kept": {"comments": comments that stay as the rater's visit left them, `_KEPT`}}. Raters are taken in
    turn: a comment two of them shared goes with the second."""
    conn.execute("CREATE TEMP TABLE IF NOT EXISTS f_seen (id INTEGER PRIMARY KEY, page_id INTEGER, seen_at TEXT, "
                 "own_text INTEGER)")
    for name in SHARED:
        conn.execute(f"CREATE TEMP TABLE IF NOT EXISTS f_{name} (id INTEGER PRIMARY KEY)")
        conn.execute(f"CREATE TEMP TABLE IF NOT EXISTS f_new_{name} (id INTEGER PRIMARY KEY)")
    deleter = _Deleter(conn)
    out = []
    try:
        for study_id, rater_id, at, again in withdrawals(conn):
            deleted = deleter.rater(study_id, rater_id)
            out.append({"study_id": study_id, "rater_id": rater_id, "withdrawn_at": at, "agreed_again": again,
                        "deleted": {t: deleted[t] for t in sorted(deleted, key=ORDER.index)},
                        "cleared": deleter.cleared, "kept": deleter.kept})
    finally:
        conn.execute("DROP TABLE IF EXISTS temp.f_seen")
        for name in SHARED:
            conn.execute(f"DROP TABLE IF EXISTS temp.f_{name}")
            conn.execute(f"DROP TABLE IF EXISTS temp.f_new_{name}")
    return out
