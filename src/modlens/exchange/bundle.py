"""The participant bundle: one file a participant sends to the researcher (`modlens export --bundle`).

A zip archive holding `manifest.json` and one Parquet file per study-log table that travels,
`tables/<table>.parquet`, with the table's own SQLite columns (ids are the participant's; `modlens
merge` maps them). Only rows recorded under consent are in it (each table's `Travel.rows`,
studylog/tables.py): sessions and ratings of the study's raters who consented,
the comments those sessions saw or rated (plus the study's gold and anchor comments), their pages,
texts, labels, scores, normalizations and variants, and the images attached to them (hashes, OCR
text and media scores; never the image files). Audit runs and anything of another study or of
a rater without consent (e.g. `modlens feed`) stay behind.

manifest.json:

    {"format": "modlens-bundle", "format_version": 1, "study_id": ..., "study_key": ...,
     "rater_ids": [...], "consent": {rater_id: consent_at}, "modlens_version": ...,
     "schema_version": <study-log schema it was exported from>, "exported_at": ...,
     "tables": {name: {"file": ..., "rows": n, "columns": [[name, "int"|"float"|"str"], ...], "sha256": ...}},
     "bundle_sha256": <SHA-256 of the canonical JSON of every other manifest field>}

The per-table checksums are inside the manifest, so `bundle_sha256` covers every byte of data.
A signed bundle (every export since signing: the participant's key made at join, study/join.py)
also has `"signer": {"algorithm": "ed25519", "public_key": <base64>}` in the manifest and a member
`signature.json`, `{"signature": <base64 Ed25519 signature of the bundle_sha256 hex string>}`:
a checksum anyone can recompute, a signature only the participant's key can make.
"""
from __future__ import annotations

import hashlib
import json
import os
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from modlens import __version__, signing
from modlens.errors import ModlensError, check_format
from modlens.safe_archive import ArchiveError, Limits, NotAnArchive, SafeZip, read_parquet
from modlens.exchange.scrub import scrub_tables, scrubbed_column
from modlens.studylog.codec import canonical_json, now_iso
from modlens.studylog.records.sessions import WITHDREW, withdrawn_row
from modlens.studylog.store import StudyLog
from modlens.studylog.tables import TRAVELLING, Table

FORMAT = "modlens-bundle"
FORMAT_VERSION = 1
READS = range(1, FORMAT_VERSION + 1)  # every version a modlens ever wrote
MANIFEST = "manifest.json"
SIGNATURE = "signature.json"
ZIP_TIME = (1980, 1, 1, 0, 0, 0)  # fixed, so the same rows give the same archive bytes
# reading someone else's bundle: a manifest is a few KB; a table, even of a long study, some MB
MANIFEST_MAX_BYTES = 4 << 20
LIMITS = Limits(member_bytes=256 << 20, total_bytes=1 << 30, members=256)

# the tables a bundle carries, parents before children (the order merge inserts them in); which
# rows of each leave, and which columns are scrubbed, is each table's `Travel` in studylog/tables.py
TABLES = tuple(t.name for t in TRAVELLING)

# A rater who withdrew every consent they gave (`sessions.WITHDREW`) no longer consents. One who agreed
# again consents from then on: what they recorded before that consent (before the withdrawal, and while
# withdrawn) stays behind (`sessions.withdrawn_row`), so a consent given again never brings back what the withdrawal took. A log
# older than schema 7 has no `consents`, and none of its raters withdrew.


def _consenting(withdrawals: bool) -> str:
    """The condition on `raters` of a rater whose consent holds (`withdrawals`: the log records them)."""
    return "consent_at IS NOT NULL" + (f" AND NOT ({WITHDREW})" if withdrawals else "")


def _not_withdrawn(table: str, at: str, withdrawals: bool) -> str:
    return f" AND NOT {withdrawn_row(table, at)}" if withdrawals else ""


def selecting(statement: str, withdrawals: bool, s_text: str) -> str:
    """One of the statements below as it runs on a log (`withdrawals`: it records them; `s_text`: the
    column of the text a sighting was sent, or NULL where the log has none)."""
    return (statement.replace("{consenting}", _consenting(withdrawals)).replace("{s_text}", s_text)
            .replace("{not_withdrawn_sessions}", _not_withdrawn("sessions", "started_at", withdrawals))
            .replace("{not_withdrawn_ratings}", _not_withdrawn("ratings", "created_at", withdrawals)))


# The sets the tables' consent rules are written over: what the study's consenting raters recorded
# since the first of their consents that holds now (`sessions.withdrawn_row`; the sightings of a session
# go with it). What came before it stays behind, what they recorded while withdrawn too (a withdrawal
# covers everything before a consent given again); none of it while no consent holds.
_SELECT_CONSENTED = [
    "CREATE TEMP TABLE b_raters AS SELECT rater_id FROM raters WHERE study_id = :study AND {consenting}",
    "CREATE TEMP TABLE b_sessions AS SELECT session_id FROM sessions WHERE study_id = :study "
    "AND rater_id IN (SELECT rater_id FROM temp.b_raters){not_withdrawn_sessions}",
    "CREATE TEMP TABLE b_ratings AS SELECT rating_id FROM ratings WHERE study_id = :study "
    "AND rater_id IN (SELECT rater_id FROM temp.b_raters){not_withdrawn_ratings}",
    "CREATE TEMP TABLE b_comments (comment_id INTEGER PRIMARY KEY)",
    "INSERT OR IGNORE INTO temp.b_comments SELECT comment_id FROM sightings "
    "WHERE session_id IN (SELECT session_id FROM temp.b_sessions)",
    "INSERT OR IGNORE INTO temp.b_comments SELECT comment_id FROM ratings WHERE rating_id IN (SELECT rating_id FROM temp.b_ratings)",
    # the study's gold comments and anchors (written by `modlens serve` from the study config)
    "INSERT OR IGNORE INTO temp.b_comments SELECT c.comment_id FROM comments c JOIN pages p USING (page_id) "
    "WHERE c.platform = 'study' AND p.platform = 'study' AND p.page_key = :study",
    # A comment keeps its first text (and time shown, first_seen), as the session that first sent it
    # saw it. One whose text none of these sessions was sent (they saw only an edited version, after a
    # session that does not travel: a withdrawn rater's) is not theirs to send: it stays behind, with
    # their sightings and ratings of it (export says how many). A sighting of unknown text (NULL:
    # recorded before schema 7) counts as one of the comment's text.
    "CREATE TEMP TABLE b_unsent AS SELECT c.comment_id FROM temp.b_comments c JOIN comments m USING (comment_id) "
    "WHERE EXISTS (SELECT 1 FROM sightings s WHERE s.comment_id = c.comment_id "
    "AND s.session_id IN (SELECT session_id FROM temp.b_sessions)) "
    "AND NOT EXISTS (SELECT 1 FROM sightings s WHERE s.comment_id = c.comment_id "
    "AND s.session_id IN (SELECT session_id FROM temp.b_sessions) AND ({s_text} IS NULL OR {s_text} = m.text_id))",
    "CREATE TEMP TABLE b_unsent_ratings AS SELECT rating_id FROM ratings WHERE rating_id IN (SELECT rating_id FROM "
    "temp.b_ratings) AND comment_id IN (SELECT comment_id FROM temp.b_unsent)",
    "DELETE FROM temp.b_ratings WHERE rating_id IN (SELECT rating_id FROM temp.b_unsent_ratings)",
    "DELETE FROM temp.b_comments WHERE comment_id IN (SELECT comment_id FROM temp.b_unsent)",
    # A comment (or page) a session that does not travel saw first: what the log keeps of that first
    # sighting is not these raters'. It travels with the first time one of these sessions saw its text
    # as first_seen, and without the time shown, which the log keeps only as that first session was shown
    # it (the page: without url and title, which that session may have sent; a page a travelling session
    # saw first keeps them, though a later session that does not travel may have filled them in, the log
    # keeping the first url and title any session sent, not which session sent them).
    "CREATE TEMP TABLE b_seen AS SELECT s.comment_id, min(s.seen_at) AS seen_at FROM sightings s "
    "JOIN comments m USING (comment_id) WHERE s.comment_id IN (SELECT comment_id FROM temp.b_comments) "
    "AND s.session_id IN (SELECT session_id FROM temp.b_sessions) AND ({s_text} IS NULL OR {s_text} = m.text_id) "
    "GROUP BY s.comment_id",
    "CREATE TEMP TABLE b_first (comment_id INTEGER PRIMARY KEY, page_id INTEGER, seen_at TEXT)",
    "INSERT INTO temp.b_first SELECT b.comment_id, m.page_id, b.seen_at FROM temp.b_seen b JOIN comments m "
    "USING (comment_id) WHERE EXISTS (SELECT 1 FROM sightings o WHERE o.comment_id = b.comment_id "
    "AND o.session_id NOT IN (SELECT session_id FROM temp.b_sessions) AND o.seen_at <= b.seen_at)",
    # One no travelling session saw at all, which travels as a consenting rater's rating of it (sent without
    # a sighting), after a session that does not travel saw it: nothing of that visit travels either; its
    # first_seen is when these raters first rated it (its text is what they rated)
    "INSERT INTO temp.b_first SELECT c.comment_id, m.page_id, (SELECT min(r.created_at) FROM ratings r "
    "WHERE r.comment_id = c.comment_id AND r.rating_id IN (SELECT rating_id FROM temp.b_ratings)) "
    "FROM temp.b_comments c JOIN comments m USING (comment_id) WHERE m.platform <> 'study' "
    "AND EXISTS (SELECT 1 FROM sightings o WHERE o.comment_id = c.comment_id) "
    "AND NOT EXISTS (SELECT 1 FROM sightings s WHERE s.comment_id = c.comment_id "
    "AND s.session_id IN (SELECT session_id FROM temp.b_sessions)) "
    "AND EXISTS (SELECT 1 FROM ratings r WHERE r.comment_id = c.comment_id "
    "AND r.rating_id IN (SELECT rating_id FROM temp.b_ratings))",
    "CREATE TEMP TABLE b_first_pages (page_id INTEGER PRIMARY KEY, seen_at TEXT)",
    "INSERT INTO temp.b_first_pages SELECT m.page_id, min(b.seen_at) FROM temp.b_seen b JOIN comments m "
    "USING (comment_id) WHERE m.page_id IS NOT NULL GROUP BY m.page_id HAVING min(b.seen_at) >= (SELECT min(o.seen_at) "
    "FROM sightings o JOIN comments x USING (comment_id) WHERE x.page_id = m.page_id "
    "AND o.session_id NOT IN (SELECT session_id FROM temp.b_sessions))",
    # a page no travelling session was on, which travels with such comments: their earliest first_seen
    "INSERT OR IGNORE INTO temp.b_first_pages SELECT f.page_id, min(f.seen_at) FROM temp.b_first f "
    "WHERE f.page_id IS NOT NULL AND NOT EXISTS (SELECT 1 FROM sightings s JOIN comments x USING (comment_id) "
    "WHERE x.page_id = f.page_id AND s.session_id IN (SELECT session_id FROM temp.b_sessions)) GROUP BY f.page_id",
    "CREATE TEMP TABLE b_texts (text_id INTEGER PRIMARY KEY)",
    "INSERT OR IGNORE INTO temp.b_texts SELECT text_id FROM comments WHERE comment_id IN (SELECT comment_id FROM temp.b_comments)",
    # the text each travelling sighting was sent (an edited version: with its scores)
    "INSERT OR IGNORE INTO temp.b_texts SELECT {s_text} FROM sightings s WHERE {s_text} IS NOT NULL "
    "AND s.comment_id IN (SELECT comment_id FROM temp.b_comments) AND s.session_id IN (SELECT session_id FROM temp.b_sessions)",
    "INSERT OR IGNORE INTO temp.b_texts SELECT text_id FROM variants "
    "WHERE comment_id IN (SELECT comment_id FROM temp.b_comments) AND run_id IS NULL",
    "INSERT OR IGNORE INTO temp.b_texts SELECT source_text_id FROM variants "
    "WHERE comment_id IN (SELECT comment_id FROM temp.b_comments) AND run_id IS NULL",
    "INSERT OR IGNORE INTO temp.b_texts SELECT result_text_id FROM normalizations "
    "WHERE source_text_id IN (SELECT text_id FROM temp.b_texts)",
    "CREATE TEMP TABLE b_media (media_id INTEGER PRIMARY KEY)",
    "CREATE TEMP TABLE b_media_detectors (detector_id INTEGER PRIMARY KEY)",
    # the raters who withdrew: only their consents travel (ids and times), so the researcher's merged
    # log learns of the withdrawal and marks what earlier bundles brought of theirs
    "CREATE TEMP TABLE b_withdrawn (rater_id TEXT PRIMARY KEY)",
]
_SELECT_WITHDRAWN = ("INSERT INTO temp.b_withdrawn SELECT rater_id FROM raters WHERE study_id = :study "
                     f"AND consent_at IS NOT NULL AND {WITHDREW}")
# per consenting rater who withdrew before: their latest withdrawal, and their sessions and ratings that
# do not travel (their ratings of a comment they saw only edited are `b_unsent_ratings`, counted apart)
_BEFORE_WITHDRAWAL = (
    "SELECT r.rater_id, (SELECT max(c.withdrawn_at) FROM consents c WHERE c.study_id = :study AND c.rater_id = r.rater_id), "
    "(SELECT count(*) FROM sessions s WHERE s.study_id = :study AND s.rater_id = r.rater_id "
    "AND s.session_id NOT IN (SELECT session_id FROM temp.b_sessions)), "
    "(SELECT count(*) FROM ratings x WHERE x.study_id = :study AND x.rater_id = r.rater_id "
    "AND x.rating_id NOT IN (SELECT rating_id FROM temp.b_ratings) "
    "AND x.rating_id NOT IN (SELECT rating_id FROM temp.b_unsent_ratings)) "
    "FROM temp.b_raters r WHERE EXISTS (SELECT 1 FROM consents c WHERE c.study_id = :study "
    "AND c.rater_id = r.rater_id AND c.withdrawn_at IS NOT NULL) ORDER BY r.rater_id")
# the images attached to those comments, the text OCR read on them, the detectors that scored the
# comments with them; comment images came with schema 3: a log of an older schema has none of these
# tables, and its bundle neither
_MEDIA_TABLES = {"media", "comment_media", "ocr_results", "comment_media_scores"}
_SELECT_MEDIA = [
    "INSERT OR IGNORE INTO temp.b_media SELECT media_id FROM comment_media "
    "WHERE comment_id IN (SELECT comment_id FROM temp.b_comments)",
    "INSERT OR IGNORE INTO temp.b_texts SELECT text_id FROM ocr_results WHERE media_id IN (SELECT media_id FROM temp.b_media)",
    "INSERT OR IGNORE INTO temp.b_media_detectors SELECT detector_id FROM comment_media_scores "
    "WHERE comment_id IN (SELECT comment_id FROM temp.b_comments)",
]
_CONSENTED_SETS = {"raters": "(SELECT rater_id FROM temp.b_raters)", "sessions": "(SELECT session_id FROM temp.b_sessions)",
                   "ratings": "(SELECT rating_id FROM temp.b_ratings)", "comments": "(SELECT comment_id FROM temp.b_comments)",
                   "texts": "(SELECT text_id FROM temp.b_texts)", "media": "(SELECT media_id FROM temp.b_media)",
                   "media_detectors": "(SELECT detector_id FROM temp.b_media_detectors)",
                   "withdrawn": "(SELECT rater_id FROM temp.b_withdrawn)"}


# What a comment or page row keeps of its first sighting, where that sighting does not travel (b_first):
# replaced by what these sessions' sightings hold, or by NULL (unknown to them).
_AS_SEEN = {
    "comments": {
        "first_seen": "coalesce((SELECT f.seen_at FROM temp.b_first f WHERE f.comment_id = comments.comment_id), first_seen)",
        "time_shown": "CASE WHEN comment_id IN (SELECT comment_id FROM temp.b_first) THEN NULL ELSE time_shown END"},
    "pages": {
        "first_seen": "coalesce((SELECT f.seen_at FROM temp.b_first_pages f WHERE f.page_id = pages.page_id), first_seen)",
        "url": "CASE WHEN page_id IN (SELECT page_id FROM temp.b_first_pages) THEN NULL ELSE url END",
        "title": "CASE WHEN page_id IN (SELECT page_id FROM temp.b_first_pages) THEN NULL ELSE title END"},
}


def rows_query(table: Table, columns: list[str]) -> str:
    """The SELECT of the rows of `table` a bundle carries, with the log's `columns`: its consent rule
    over the consented sets, its local columns as NULL, what a comment or page keeps of a first sighting
    that does not travel replaced (`_AS_SEEN`), ordered by its key (the same rows give the same bundle)."""
    assert table.travel is not None, f"{table.name} never leaves the participant's computer"
    local, as_seen = table.travel.local, _AS_SEEN.get(table.name, {})
    selected = ", ".join(f"NULL AS {c}" if c in local else f"{as_seen[c]} AS {c}" if c in as_seen else c
                         for c in columns)
    return (f"SELECT {selected} FROM {table.name} WHERE {table.travel.rows.format(**_CONSENTED_SETS)} "
            f"ORDER BY {', '.join(table.primary_key)}")


_ARROW_TYPES = {"int": "int64", "float": "float64", "str": "string"}


class BundleError(ModlensError, ValueError):
    """A bundle that cannot be made or read; the message says why, `fix` what to do."""


RESEND = "ask the participant to export and send it again"
CONSENT_FIRST = "accept the consent text in the extension first"


def column_types(conn: Any, table: str, schema: str = "main") -> list[tuple[str, str]]:
    """(column, int|float|str) from the declared SQLite types."""
    out = []
    for _cid, name, decl, *_ in conn.execute(f"PRAGMA {schema}.table_info([{table}])"):
        decl = (decl or "").upper()
        out.append((name, "int" if "INT" in decl else "float" if decl in ("REAL", "FLOAT", "DOUBLE") else "str"))
    return out


def _parquet(columns: list[tuple[str, str]], rows: list[tuple[Any, ...]]) -> bytes:
    import pyarrow as pa
    import pyarrow.parquet as pq

    schema = pa.schema([(name, getattr(pa, _ARROW_TYPES[kind])()) for name, kind in columns])
    arrays = [pa.array(list(col), type=field.type) for col, field in
              zip(zip(*rows) if rows else [[] for _ in columns], schema)]
    sink = pa.BufferOutputStream()
    pq.write_table(pa.Table.from_arrays(arrays, schema=schema), sink, compression="zstd")
    return bytes(sink.getvalue().to_pybytes())


def _entry(name: str) -> zipfile.ZipInfo:
    info = zipfile.ZipInfo(name, ZIP_TIME)
    info.compress_type = zipfile.ZIP_DEFLATED if name.endswith(".json") else zipfile.ZIP_STORED
    return info


def write_archive(out: IO[bytes], fields: dict[str, Any], tables: dict[str, tuple[list[tuple[str, str]], list[tuple[Any, ...]]]],
                  key: Any = None) -> dict[str, Any]:
    """The format itself: manifest `fields` plus tables {name: (columns, rows)} -> a bundle, signed
    with `key` (an Ed25519 private key) when given; returns the manifest.
    Used by the export, and by tests that build bundles of older versions by these rules."""
    if key is not None:
        fields = {**fields, "signer": {"algorithm": signing.ALGORITHM, "public_key": signing.public_key_b64(key)}}
    manifest: dict[str, Any] = {"format": FORMAT, "format_version": FORMAT_VERSION, **fields, "tables": {}}
    with zipfile.ZipFile(out, "w") as zf:
        for name, (columns, rows) in tables.items():
            data = _parquet(columns, rows)
            file = f"tables/{name}.parquet"
            zf.writestr(_entry(file), data)
            manifest["tables"][name] = {"file": file, "rows": len(rows), "columns": [list(c) for c in columns],
                                        "sha256": hashlib.sha256(data).hexdigest()}
        manifest["bundle_sha256"] = hashlib.sha256(canonical_json(manifest).encode("utf-8")).hexdigest()
        zf.writestr(_entry(MANIFEST), json.dumps(manifest, indent=2, ensure_ascii=False) + "\n")
        if key is not None:
            signature = signing.sign(key, manifest["bundle_sha256"].encode("ascii"))
            zf.writestr(_entry(SIGNATURE), json.dumps({"signature": signature}) + "\n")
    return manifest


def choose_study(log: StudyLog, study_id: str | None) -> str:
    """The study to bundle: the one asked for, else the joined one, else the only one with consent."""
    studies = [r[0] for r in log.conn.execute("SELECT study_id FROM studies ORDER BY study_id")]
    if study_id is not None:
        if study_id not in studies:
            raise BundleError(f"study {study_id!r} is not in {log.path} (it has: {', '.join(studies) or 'none'})")
        return study_id
    from modlens.study.join import joined

    current = joined()
    if current and current["study_id"] in studies:
        return str(current["study_id"])
    # a study whose raters all withdrew still has something to send: their withdrawal
    consented = [r[0] for r in log.conn.execute(
        "SELECT DISTINCT study_id FROM raters WHERE consent_at IS NOT NULL ORDER BY study_id")]
    if len(consented) == 1:
        return str(consented[0])
    if not consented:
        raise BundleError(f"no rater has given consent in {log.path}, so there is nothing to send", fix=CONSENT_FIRST)
    raise BundleError(f"{log.path} holds {len(consented)} studies with raters who gave consent "
                      f"({', '.join(consented) or 'none'}); which one to bundle?", fix="pass --study-id ID")


def study_salt(log: StudyLog, study_id: str) -> str:
    """The salt authors were hashed with: the study config's, else the per-home one the daemon used."""
    row = log.conn.execute("SELECT config_json FROM studies WHERE study_id = ?", (study_id,)).fetchone()
    salt = json.loads(row[0]).get("author_salt") if row else None
    if salt:
        return str(salt)
    from modlens import pairing

    return pairing.study_salt(study_id)


def _records_withdrawals(log: StudyLog) -> bool:
    return "withdrawn_at" in {c for c, _ in column_types(log.conn, "consents")}


def export_bundle(db: str | Path, out: IO[bytes], study_id: str | None = None) -> dict[str, Any]:
    """Write the consented rows of one study of `db` as a bundle into `out`; returns the manifest, with
    `withdrawn` added ({rater_id: when they withdrew}: the raters whose data it left out; the bundle
    carries their `consents` rows alone, ids and times, so the researcher's merge marks the withdrawal) and
    `before_withdrawal` ({rater_id: {"withdrawn_at", "sessions", "ratings"}}: of a consenting rater who withdrew
    before and agreed again, the sessions and ratings their withdrawal covers, left behind).
    A study whose every rater withdrew gives a bundle that carries only that."""
    from modlens.study.join import bundle_key
    from modlens.study.pack import study_key

    with StudyLog(db, readonly=True) as log, log.snapshot():
        study = choose_study(log, study_id)
        params = {"study": study}
        present = set(log.table_names())  # an older schema's log lacks the newer tables
        withdrawals = _records_withdrawals(log)
        consenting = _consenting(withdrawals)
        # the text each sighting was sent came with schema 7: an older log's are unknown, so the comment's own
        s_text = "s.text_id" if "text_id" in {c for c, _ in column_types(log.conn, "sightings")} else "NULL"
        for statement in _SELECT_CONSENTED + (_SELECT_MEDIA if _MEDIA_TABLES <= present else []):
            log.conn.execute(selecting(statement, withdrawals, s_text), params)
        if withdrawals:
            log.conn.execute(_SELECT_WITHDRAWN, params)
        consent = dict(log.conn.execute(
            f"SELECT rater_id, consent_at FROM raters WHERE study_id = :study AND {consenting} "
            "ORDER BY rater_id", params).fetchall())
        withdrawn = dict(log.conn.execute(
            "SELECT rater_id, max(withdrawn_at) FROM consents WHERE study_id = :study "
            "AND rater_id IN (SELECT rater_id FROM temp.b_withdrawn) GROUP BY rater_id ORDER BY rater_id",
            params).fetchall()) if withdrawals else {}
        # of a rater who withdrew and agreed again, what their withdrawal covers, which stays behind
        before = {r: {"withdrawn_at": at, "sessions": n_sessions, "ratings": n_ratings} for r, at, n_sessions, n_ratings in
                  log.conn.execute(_BEFORE_WITHDRAWAL, params).fetchall() if n_sessions or n_ratings} if withdrawals else {}
        # what stays behind of consenting raters (a comment they saw only edited) and what travels as they saw it
        unsent = dict(zip(("comments", "ratings", "sightings", "as_seen"), log.conn.execute(
            "SELECT (SELECT count(*) FROM temp.b_unsent), (SELECT count(*) FROM temp.b_unsent_ratings), "
            "(SELECT count(*) FROM sightings WHERE comment_id IN (SELECT comment_id FROM temp.b_unsent) "
            "AND session_id IN (SELECT session_id FROM temp.b_sessions)), (SELECT count(*) FROM temp.b_first)").fetchone()))
        if not consent and not withdrawn:
            raise BundleError(f"no rater of study {study!r} has given consent in {log.path}, so there is nothing "
                              "to send", fix=CONSENT_FIRST)
        tables = {}
        for t in TRAVELLING:
            if t.name in present:
                columns = column_types(log.conn, t.name)
                tables[t.name] = (columns, log.conn.execute(rows_query(t, [c for c, _ in columns]), params).fetchall())
        fields = {"study_id": study, "study_key": study_key(study, study_salt(log, study)),
                  "rater_ids": sorted(consent), "consent": consent, "modlens_version": __version__,
                  "schema_version": log.user_version(), "exported_at": now_iso()}
    # no path, home folder, user or host name of this computer leaves in a free-text field
    return {**write_archive(out, fields, scrub_tables(tables), bundle_key()), "withdrawn": withdrawn, "unsent": unsent,
            "before_withdrawal": before}


def write_bundle_file(db: str | Path, path: str | Path, study_id: str | None = None) -> dict[str, Any]:
    """Written under a temporary name and renamed, so a failed export leaves no half bundle."""
    path = Path(path)
    tmp = path.with_name(path.name + ".tmp")
    try:
        with open(tmp, "wb") as fh:
            manifest = export_bundle(db, fh, study_id)
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
    return manifest


# --- reading ----------------------------------------------------------------------------------------

@dataclass
class Bundle:
    name: str
    manifest: dict[str, Any]
    _zip: SafeZip
    signer: str | None = None  # fingerprint of the key whose signature verified; None: unsigned

    @property
    def sha256(self) -> str:
        return str(self.manifest["bundle_sha256"])

    def columns(self, table: str) -> list[tuple[str, str]]:
        return [(c[0], c[1]) for c in self.manifest["tables"][table]["columns"]]

    def table(self, name: str) -> Any:
        """The table as a pyarrow Table (None when the bundle lacks it); BundleError when it does not read."""
        info = self.manifest["tables"].get(name)
        if info is None:
            return None
        return _read_parquet(self.name, name, _member(self._zip, info["file"]))

    def close(self) -> None:
        self._zip.close()


def _member(zf: SafeZip, file: str) -> bytes:
    try:
        return zf.read(file)
    except KeyError:
        raise BundleError(f"{zf.name}: {file} is missing from the archive") from None
    except ArchiveError as err:
        raise BundleError(str(err)) from None


def _read_parquet(name: str, table: str, data: bytes, metadata_only: bool = False) -> Any:
    """A table's Parquet bytes read, or one line saying they are not a table (never pyarrow's traceback)."""
    try:
        return read_parquet(data, f"{name}: table {table}", metadata_only=metadata_only)
    except ArchiveError as err:
        raise BundleError(str(err)) from None


def read_bundle(source: str | Path | IO[bytes], name: str | None = None) -> Bundle:
    """Open and verify a bundle: archive, manifest, format, every table's checksum and row count.
    Raises BundleError saying what is wrong in one line that names the file (FileNotFoundError for
    a missing one); inflating is bounded (`LIMITS`, `MANIFEST_MAX_BYTES`), so a hostile archive costs
    little. The schema version is checked by the reader (merge)."""
    name = name or (str(source) if isinstance(source, (str, Path)) else "bundle")
    try:
        zf = SafeZip(source, name, LIMITS)
    except NotAnArchive as err:
        raise BundleError(f"{name}: not a modlens bundle, or truncated ({err.reason})", fix=RESEND) from None
    except ArchiveError as err:  # a device, FIFO or folder
        raise BundleError(str(err)) from None
    try:
        try:
            manifest = zf.read_json(MANIFEST, MANIFEST_MAX_BYTES)
        except KeyError:
            raise BundleError(f"{name}: no {MANIFEST} inside; not a modlens bundle") from None
        except ArchiveError as err:
            raise BundleError(str(err), fix=RESEND) from None
        _verify(zf, manifest, name)
        signer = _verify_signature(zf, manifest, name)
    except BaseException:
        zf.close()
        raise
    return Bundle(name, manifest, zf, signer)


def _verify_signature(zf: SafeZip, manifest: dict[str, Any], name: str) -> str | None:
    """The signer's fingerprint when its signature verifies over the manifest checksum; None when the
    bundle is unsigned (no signer, no signature). Whether unsigned is acceptable is merge's call."""
    signer = manifest.get("signer")
    try:
        sig = zf.read_json(SIGNATURE, 4096)
    except KeyError:
        sig = None
    except ArchiveError as err:
        raise BundleError(str(err)) from None
    if signer is None and sig is None:
        return None
    if not (isinstance(signer, dict) and signer.get("algorithm") == signing.ALGORITHM
            and isinstance(signer.get("public_key"), str) and isinstance(sig, dict)
            and isinstance(sig.get("signature"), str)
            and signing.verify(signer["public_key"], sig["signature"], manifest["bundle_sha256"].encode("ascii"))):
        raise BundleError(f"{name}: signature does not verify; the bundle was changed after the participant "
                          "exported it", fix=RESEND)
    return signing.fingerprint(signer["public_key"])


def _check_shape(manifest: dict[str, Any], name: str) -> None:
    """The fields readers index, with the types they expect (a sealed manifest may still be hostile)."""
    def bad(field: str, want: str) -> BundleError:
        return BundleError(f"{name}: {MANIFEST}: {field} is not {want}; not a bundle modlens wrote")

    for field in ("study_id", "study_key", "bundle_sha256", "modlens_version", "exported_at"):
        if not isinstance(manifest.get(field), str):
            raise bad(field, "a string")
    if not isinstance(manifest.get("schema_version"), int):
        raise bad("schema_version", "an integer")
    raters = manifest.get("rater_ids")
    if not isinstance(raters, list) or not all(isinstance(r, str) for r in raters):
        raise bad("rater_ids", "a list of strings")
    if not isinstance(manifest.get("consent"), dict):
        raise bad("consent", "an object")
    tables = manifest.get("tables")
    if not isinstance(tables, dict):
        raise bad("tables", "an object")
    for table, info in tables.items():
        if not (isinstance(info, dict) and isinstance(info.get("file"), str) and isinstance(info.get("sha256"), str)
                and isinstance(info.get("rows"), int) and isinstance(info.get("columns"), list)
                and all(isinstance(c, list) and len(c) == 2 and all(isinstance(x, str) for x in c)
                        for c in info["columns"])):
            raise bad(f"tables.{table}", "an object with file, rows, columns and sha256")


def _check_members(zf: SafeZip, manifest: dict[str, Any], name: str) -> None:
    """Each table where the export puts it, and no member the manifest does not declare: the
    signature covers the manifest only, so a member added beside it (`../../x`, `/etc/x`) would
    otherwise travel unseen inside a bundle that still verifies."""
    for table, info in manifest["tables"].items():
        if info["file"] != f"tables/{table}.parquet":
            raise BundleError(f"{name}: {MANIFEST}: table {table} is in {info['file']!r}, not tables/{table}.parquet; "
                              "not a bundle modlens wrote", fix=RESEND)
    names = zf.names()
    allowed = {MANIFEST, SIGNATURE} | {info["file"] for info in manifest["tables"].values()}
    undeclared = sorted(set(names) - allowed)
    if undeclared:
        more = f" (and {len(undeclared) - 1} more)" if len(undeclared) > 1 else ""
        raise BundleError(f"{name}: member {undeclared[0]!r}{more} is not declared in {MANIFEST}; not a bundle modlens "
                          "wrote", fix=RESEND)
    if len(names) != len(set(names)):
        twice = sorted({n for n in names if names.count(n) > 1})
        raise BundleError(f"{name}: member {twice[0]!r} is in the archive twice; not a bundle modlens wrote",
                          fix=RESEND)


def _verify(zf: SafeZip, manifest: Any, name: str) -> None:
    check_format(manifest, name=f"{name} ({MANIFEST})", what="modlens bundle", fmt=FORMAT, reads=READS, fix=RESEND,
                 error=BundleError)
    body = {k: v for k, v in manifest.items() if k != "bundle_sha256"}
    actual = hashlib.sha256(canonical_json(body).encode("utf-8")).hexdigest()
    if manifest.get("bundle_sha256") != actual:
        raise BundleError(f"{name}: bundle checksum mismatch (manifest says {manifest.get('bundle_sha256')}, its "
                          f"content hashes to {actual}); the file was changed after export",
                          fix=RESEND)
    _check_shape(manifest, name)
    _check_members(zf, manifest, name)
    for table, info in manifest["tables"].items():
        data = _member(zf, info["file"])
        if hashlib.sha256(data).hexdigest() != info["sha256"]:
            raise BundleError(f"{name}: table {table}: checksum mismatch; the file was changed after export")
        rows = _read_parquet(name, table, data, metadata_only=True).num_rows
        if rows != info["rows"]:
            raise BundleError(f"{name}: table {table}: {rows} rows, the manifest says {info['rows']}")


def describe(bundle: Bundle, sample_rows: int = 3, width: int = 60) -> str:
    """What a participant sees before sending: who, what study, every table with its columns and a few rows."""
    m = bundle.manifest
    lines = [f"bundle of study {m['study_id']!r} (key {m['study_key']}), schema {m['schema_version']}, "
             f"modlens {m['modlens_version']}, exported {m['exported_at']}",
             "raters: " + ", ".join(f"{r} (consent {m['consent'].get(r)})" for r in m["rater_ids"]),
             f"checksum: {m['bundle_sha256']}",
             f"signed by: {bundle.signer}" if bundle.signer else "unsigned", ""]
    for name, info in m["tables"].items():
        lines.append(f"{name}: {info['rows']} rows; columns: {', '.join(c[0] for c in info['columns'])}")
        if info["rows"]:
            for row in bundle.table(name).slice(0, sample_rows).to_pylist():
                shown = {k: (v if not isinstance(v, str) or len(v) <= width else v[:width] + "…") for k, v in row.items()}
                lines.append(f"    {shown}")
    return "\n".join(lines + ["", *free_text_fields(bundle, width)])


def free_text_fields(bundle: Bundle, width: int = 60) -> list[str]:
    """Every text field that leaves this computer (table.column), with how many values and a sample."""
    lines = ["free-text fields that leave this computer (table.column: values, a sample):"]
    for name, info in bundle.manifest["tables"].items():
        text_columns = [c for c, kind in info["columns"] if kind == "str"]
        if not text_columns or not info["rows"]:
            continue
        table = bundle.table(name)
        for column in text_columns:
            values = [v for v in table.column(column).to_pylist() if v]
            if not values:
                continue
            sample = max(values, key=len)  # the longest says most about what the column holds
            sample = sample if len(sample) <= width else sample[:width] + "…"
            how = "paths, home folder, user and host names removed" if scrubbed_column(name, column, "str") \
                else "as recorded"
            lines.append(f"  {name}.{column}: {len(values)} ({how}); e.g. {sample!r}")
    return lines
