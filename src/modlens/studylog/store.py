"""Synchronous access to a study log (SQLite through sqlite-utils) and its single async writer.

CONTRACT (implemented by the study-log work; the daemon and audits code against it):
- `StudyLog(path)` opens the file in WAL mode, enables foreign keys, applies pending
  migrations from `schema.MIGRATIONS`. `StudyLog(path, readonly=True)` never writes
  (export, report), so readers never block the writer.
- Every write method is idempotent: calling it again with the same natural key returns the
  existing row id and inserts nothing.
- Corpus-scale ingest uses the batched twins (`add_scores_many`, `add_comments_many`,
  `text_ids`, `add_variants_many`, …): the same rows, ids and conflict rules as the row-at-a-time
  methods called in the same order, each batch atomic (docs/PERFORMANCE.md, "Study-log ingest").
- Several processes may write one log at once (two audits, an audit beside the daemon): every
  write transaction starts with `BEGIN IMMEDIATE` (`begin_immediate`), which takes the write
  lock up front and waits for it (SQLite's busy timeout, then a few retries with backoff). A
  deferred transaction that read first could not wait: SQLite refuses its upgrade to a writer
  at once with "database is locked". A wait that still runs out is a `StudyLogError` saying so.
- `LogWriter` owns one StudyLog in one dedicated thread. `await writer.submit(fn)` queues
  `fn(log)`; the writer batches queued calls into one transaction (each call in its own
  SAVEPOINT so one failing call does not undo the others) and resolves the awaitable only
  after COMMIT returned. A rating is acknowledged to a client only after that.

Transactions are managed by hand (the connection is in autocommit mode and we issue
BEGIN/SAVEPOINT/COMMIT ourselves), so sqlite-utils (`log.db`) is for reads and introspection
only: its write helpers wrap themselves in `with conn:`, which would commit a writer batch
early. `log.db` is built on first use because importing sqlite-utils imports pandas (about a
second), which the writer, the daemon and the crash-test children do not need.
"""
from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import hashlib
import json
import queue
import sqlite3
import threading
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Awaitable, Callable, Iterable, Iterator, NamedTuple, Sequence, TypeVar

from modlens.perturb.base import Variant
from modlens.studylog.schema import MIGRATIONS, SCHEMA_VERSION

T = TypeVar("T")

# FULL: the WAL is fsynced at every COMMIT, so an acknowledged rating survives power loss,
# not only a killed process (docs/DATA.md, "Durability"). Batching amortizes the fsync.
SYNCHRONOUS = "FULL"
# Writer connection tuning (docs/PERFORMANCE.md, "Study-log ingest"): a 64 MiB page cache keeps the
# hot parts of the texts' hash index in memory at corpus scale (sha256 keys land at random pages),
# temporary b-trees stay in memory, and the WAL is checkpointed every ~16 MiB instead of every
# ~4 MiB (fewer, larger checkpoints, each an fsync of the database under FULL) and truncated back
# to 64 MiB after each, so it does not stay as large as the largest transaction.
CACHE_SIZE_KIB = 64 * 1024
WAL_AUTOCHECKPOINT_PAGES = 4096
JOURNAL_SIZE_LIMIT = 64 * 1024 * 1024
# rows per statement when a batch reads ids back by key (`IN (SELECT value FROM json_each(?))`)
_LOOKUP_CHUNK = 5000
BUSY_TIMEOUT_MS = 10_000
# After a busy timeout runs out, BEGIN IMMEDIATE is tried again this many times (backoff
# doubling from BUSY_BACKOFF_S): another writer's commits are short, so a longer wait means
# something holds the lock (a stuck process, a DB browser with a write open).
BUSY_RETRIES = 3
BUSY_BACKOFF_S = 0.05


class StudyLogError(RuntimeError):
    """A study log that cannot be opened or used as asked (message says why and what to do)."""

    def __init__(self, message: str, fix: str | None = None) -> None:
        super().__init__(message)
        self.fix = fix


def is_busy(err: sqlite3.OperationalError) -> bool:
    """SQLITE_BUSY / SQLITE_LOCKED: another connection holds the lock."""
    return "locked" in str(err) or "busy" in str(err)


def busy_error(path: Path, waited_s: float) -> StudyLogError:
    return StudyLogError(
        f"the study log {path} stayed locked by another writer for {waited_s:.0f} s (another `modlens audit`, "
        "`modlens serve` or a program with a write transaction open on it)",
        fix="let the other writer finish or stop it, then run this again (an audit resumes where it stopped)")


def begin_immediate(conn: sqlite3.Connection, path: Path, *, retries: int | None = None) -> None:
    """BEGIN IMMEDIATE: the write lock now, waiting for other writers (the busy timeout, then
    `retries` (default BUSY_RETRIES) more tries with backoff); StudyLogError when it never comes."""
    retries = BUSY_RETRIES if retries is None else retries
    t0 = time.monotonic()
    for attempt in range(retries + 1):
        try:
            conn.execute("BEGIN IMMEDIATE")
            return
        except sqlite3.OperationalError as err:
            if not is_busy(err) or attempt == retries:
                if is_busy(err):
                    raise busy_error(path, time.monotonic() - t0) from None
                raise
            time.sleep(BUSY_BACKOFF_S * 2 ** attempt)


def now_iso() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds")


def text_hash(text: str) -> str:
    """sha256 of the exact text (UTF-8), the key of the `texts` table."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


# The C encoder behind `json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"),
# default=str)`, built once: `json.dumps` with options builds a new encoder at every call, which
# was a third of the cost of storing a score row. No circular-reference check (a shared marker dict
# would not be thread-safe): a self-containing value fails with RecursionError instead of ValueError.
_C_ENCODER = getattr(json.encoder, "c_make_encoder", None)
_CANONICAL = None if _C_ENCODER is None else _C_ENCODER(
    None, str, json.encoder.encode_basestring, None, ":", ",", True, False, True)


def canonical_json(value: Any) -> str:
    """JSON with sorted keys, so equal parameters give equal strings (used in unique keys)."""
    if _CANONICAL is None:  # a Python without the C accelerator
        return json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=str)
    return "".join(_CANONICAL(value, 0))



def _split_sql(script: str) -> list[str]:
    """Split a migration into statements, so it can run inside one transaction
    (`executescript` would commit first)."""
    statements, buf = [], ""
    for piece in script.split(";"):
        buf += piece + ";"
        if sqlite3.complete_statement(buf):
            if buf.strip(" \n\t;"):
                statements.append(buf.strip())
            buf = ""
    if buf.strip(" \n\t;"):
        raise StudyLogError(f"incomplete SQL statement in migration: {buf.strip()[:80]!r}")
    return statements


class StudyLog:
    def __init__(self, path: str | Path, *, readonly: bool = False, synchronous: str | None = None) -> None:
        """`synchronous`: "FULL" (default, `SYNCHRONOUS`) or "NORMAL" for a writer whose last
        transactions may be lost on power loss (never on a crash of the process; docs/DATA.md)."""
        if synchronous is not None and synchronous.upper() not in ("FULL", "NORMAL"):
            raise ValueError(f"synchronous must be FULL or NORMAL, not {synchronous!r}")
        self.path = Path(path)
        self.readonly = readonly
        if readonly:
            if not self.path.exists():
                raise StudyLogError(f"no study log at {self.path} (file not found); "
                                    "run `modlens serve` or `modlens audit` first, or pass --db")
            # mode=ro: this connection can never take the write lock, so it never blocks the writer
            conn = sqlite3.connect(f"{self.path.resolve().as_uri()}?mode=ro", uri=True,
                                   isolation_level=None, check_same_thread=False)
        else:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            conn = sqlite3.connect(str(self.path), isolation_level=None, timeout=BUSY_TIMEOUT_MS / 1000)
        self.conn = conn
        self._db = None
        conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        conn.execute("PRAGMA foreign_keys = ON")
        if readonly:
            try:
                version = self.user_version()
            except sqlite3.DatabaseError as err:
                conn.close()
                raise StudyLogError(f"{self.path}: not a modlens study log ({err})") from None
            if version != SCHEMA_VERSION:
                conn.close()
                raise StudyLogError(
                    f"{self.path} has schema version {version}, this modlens reads {SCHEMA_VERSION}; "
                    "open it once for writing (e.g. `modlens serve --db PATH`) to migrate it, or upgrade modlens")
        else:
            try:
                mode = conn.execute("PRAGMA journal_mode = WAL").fetchone()[0]
                if mode.lower() != "wal":
                    raise StudyLogError(f"could not switch {self.path} to WAL mode (got {mode!r})")
                conn.execute(f"PRAGMA synchronous = {synchronous or SYNCHRONOUS}")
                conn.execute(f"PRAGMA cache_size = -{CACHE_SIZE_KIB}")
                conn.execute("PRAGMA temp_store = MEMORY")
                conn.execute(f"PRAGMA wal_autocheckpoint = {WAL_AUTOCHECKPOINT_PAGES}")
                conn.execute(f"PRAGMA journal_size_limit = {JOURNAL_SIZE_LIMIT}")
                self._migrate()
            except sqlite3.OperationalError as err:
                conn.close()
                if is_busy(err):
                    raise busy_error(self.path, BUSY_TIMEOUT_MS / 1000) from None
                raise
            except BaseException:
                conn.close()
                raise
        self._closed = False

    # --- lifecycle -------------------------------------------------------------------
    def close(self) -> None:
        if not self._closed:
            self._closed = True
            self.conn.close()

    def __enter__(self) -> "StudyLog":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    @property
    def db(self):
        """A `sqlite_utils.Database` on this connection (reads and introspection only)."""
        if self._db is None:
            import sqlite_utils
            self._db = sqlite_utils.Database(self.conn, execute_plugins=False)
        return self._db

    def table_names(self) -> list[str]:
        return [r[0] for r in self.conn.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY rowid")]

    def user_version(self) -> int:
        return int(self.conn.execute("PRAGMA user_version").fetchone()[0])

    def _migrate(self) -> None:
        if self.user_version() >= SCHEMA_VERSION:
            if self.user_version() > SCHEMA_VERSION:
                raise StudyLogError(f"{self.path} was written by a newer modlens (schema "
                                    f"{self.user_version()} > {SCHEMA_VERSION}); upgrade modlens")
            return
        begin_immediate(self.conn, self.path)
        try:
            current = self.user_version()  # re-read under the lock: another process may have migrated
            for number in range(current, SCHEMA_VERSION):
                for statement in _split_sql(MIGRATIONS[number]):
                    self.conn.execute(statement)
                self.conn.execute(f"PRAGMA user_version = {number + 1}")
            self.conn.execute("COMMIT")
        except BaseException:
            self.conn.execute("ROLLBACK")
            raise

    def integrity_check(self) -> str:
        rows = [r[0] for r in self.conn.execute("PRAGMA integrity_check")]
        return "ok" if rows == ["ok"] else "; ".join(rows)

    def counts(self) -> dict[str, int]:
        return {t: self.conn.execute(f"SELECT count(*) FROM [{t}]").fetchone()[0] for t in self.table_names()}

    @contextlib.contextmanager
    def transaction(self) -> Iterator["StudyLog"]:
        """Atomic block. Outside a transaction: BEGIN IMMEDIATE … COMMIT, waiting for other
        writers (a deferred start would fail at once when another process wrote in between);
        inside one (a writer batch, an enclosing block): a SAVEPOINT, so it nests."""
        if not self.conn.in_transaction:
            begin_immediate(self.conn, self.path)
            try:
                yield self
            except BaseException:
                if self.conn.in_transaction:  # SQLite may have rolled back already (disk full, I/O error)
                    self.conn.execute("ROLLBACK")
                raise
            self.conn.execute("COMMIT")
            return
        self.conn.execute("SAVEPOINT modlens_tx")
        try:
            yield self
        except BaseException:
            self.conn.execute("ROLLBACK TO modlens_tx")
            self.conn.execute("RELEASE modlens_tx")
            raise
        self.conn.execute("RELEASE modlens_tx")

    @contextlib.contextmanager
    def snapshot(self) -> Iterator["StudyLog"]:
        """Consistent reads across several queries (one read transaction)."""
        self.conn.execute("BEGIN")
        try:
            yield self
        finally:
            self.conn.execute("COMMIT")

    def query(self, sql: str, params: tuple | dict = ()) -> list[dict[str, Any]]:
        cursor = self.conn.execute(sql, params)
        names = [d[0] for d in cursor.description or ()]
        return [dict(zip(names, row)) for row in cursor]

    def _one(self, sql: str, params: tuple) -> Any:
        row = self.conn.execute(sql, params).fetchone()
        return None if row is None else row[0]

    def _write(self, sql: str, params: tuple) -> sqlite3.Cursor:
        if self.readonly:
            raise StudyLogError("this study log was opened read-only")
        try:
            return self.conn.execute(sql, params)
        except sqlite3.OperationalError as err:  # a single statement waited the whole busy timeout
            if is_busy(err) and not self.conn.in_transaction:
                raise busy_error(self.path, BUSY_TIMEOUT_MS / 1000) from None
            raise

    # --- writes (idempotent) ---------------------------------------------------------
    def ensure_study(self, study_id: str, title: str, config: dict[str, Any]) -> None:
        # keeps the first config: a study's ratings refer to the settings it started with
        self._write("INSERT OR IGNORE INTO studies (study_id, title, config_json, created_at) VALUES (?, ?, ?, ?)",
                    (study_id, title, canonical_json(config), now_iso()))

    def ensure_rater(self, study_id: str, rater_id: str, consent_at: str | None) -> None:
        with self.transaction():
            self._write("INSERT OR IGNORE INTO raters (study_id, rater_id, consent_at, first_seen) VALUES (?, ?, ?, ?)",
                        (study_id, rater_id, consent_at, now_iso()))
            if consent_at is not None:  # consent given later than the first contact
                self._write("UPDATE raters SET consent_at = ? WHERE study_id = ? AND rater_id = ? AND consent_at IS NULL",
                            (consent_at, study_id, rater_id))

    def start_session(self, session_id: str, study_id: str, rater_id: str | None, client: str,
                      client_version: str | None, protocol_version: int | None) -> None:
        self._write("INSERT OR IGNORE INTO sessions (session_id, study_id, rater_id, client, client_version, "
                    "protocol_version, started_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
                    (session_id, study_id, rater_id, client, client_version, protocol_version, now_iso()))

    def end_session(self, session_id: str) -> None:
        self._write("UPDATE sessions SET ended_at = ? WHERE session_id = ? AND ended_at IS NULL", (now_iso(), session_id))

    def ensure_page(self, platform: str, page_key: str, url: str | None, title: str | None) -> int:
        # a later visit may know the title the first one did not: fill gaps, never erase
        self._write("INSERT INTO pages (platform, page_key, url, title, first_seen) VALUES (?, ?, ?, ?, ?) "
                    "ON CONFLICT (platform, page_key) DO UPDATE SET url = coalesce(pages.url, excluded.url), "
                    "title = coalesce(pages.title, excluded.title)",
                    (platform, page_key, url, title, now_iso()))
        return self._one("SELECT page_id FROM pages WHERE platform = ? AND page_key = ?", (platform, page_key))

    def text_id(self, text: str) -> int:
        if not isinstance(text, str):
            raise TypeError(f"text must be str, not {type(text).__name__}")
        h = text_hash(text)
        found = self._one("SELECT text_id FROM texts WHERE text_hash = ?", (h,))
        if found is not None:
            return found
        return self._write("INSERT INTO texts (text_hash, text) VALUES (?, ?)", (h, text)).lastrowid

    def add_comment(self, platform: str, comment_key: str, page_id: int | None, text: str, *,
                    parent_key: str | None = None, author_hash: str | None = None,
                    time_shown: str | None = None, truncated: bool = False,
                    original_length: int | None = None, first_labels: dict[str, tuple[Any, str]] | None = None) -> int:
        """`first_labels` (name -> (value, source)) are written with a new comment only: like its
        text and parent, they describe the first sighting."""
        with self.transaction():
            existing = self.comment_id(platform, comment_key)
            if existing is not None:  # the first text seen under this key stays (re-sends are no-ops)
                return existing
            tid = self.text_id(text)
            cid: int = self._write(
                "INSERT INTO comments (platform, comment_key, page_id, parent_key, text_id, author_hash, time_shown, "
                "truncated, original_length, first_seen) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (platform, comment_key, page_id, parent_key, tid, author_hash, time_shown, int(bool(truncated)),
                 len(text) if original_length is None else original_length, now_iso())).lastrowid
            for name, (value, source) in (first_labels or {}).items():
                self.add_label(cid, name, value, source)
            return cid

    def comment_id(self, platform: str, comment_key: str) -> int | None:
        return self._one("SELECT comment_id FROM comments WHERE platform = ? AND comment_key = ?", (platform, comment_key))

    def comment_text(self, comment_id: int) -> str | None:
        return self._one("SELECT t.text FROM comments c JOIN texts t USING (text_id) WHERE c.comment_id = ?", (comment_id,))

    def add_sighting(self, comment_id: int, session_id: str) -> None:
        self._write("INSERT OR IGNORE INTO sightings (comment_id, session_id, seen_at) VALUES (?, ?, ?)",
                    (comment_id, session_id, now_iso()))

    def add_label(self, comment_id: int, name: str, value: Any, source: str) -> None:
        stored = None if value is None else value if isinstance(value, str) else canonical_json(value)
        # a re-import of the same source corrects its value rather than duplicating it
        self._write("INSERT INTO labels (comment_id, name, value, source) VALUES (?, ?, ?, ?) "
                    "ON CONFLICT (comment_id, name, source) DO UPDATE SET value = excluded.value",
                    (comment_id, name, stored, source))

    def ensure_detector(self, name: str, version: str, toxicity_label: str | None,
                        threshold: float | None, config: dict[str, Any]) -> int:
        self._write("INSERT OR IGNORE INTO detectors (name, version, toxicity_label, threshold, config_json, first_used) "
                    "VALUES (?, ?, ?, ?, ?, ?)",
                    (name, version, toxicity_label, threshold, canonical_json(config), now_iso()))
        return self._one("SELECT detector_id FROM detectors WHERE name = ? AND version = ?", (name, version))

    def add_score(self, text: str, detector_id: int, labels: dict[str, float] | None,
                  toxicity: float | None, latency_ms: float | None, error: str | None) -> None:
        with self.transaction():
            tid = self.text_id(text)
            self._write(
                _SCORE_UPSERT,
                (tid, detector_id, None if labels is None else canonical_json(labels),
                 None if toxicity is None else float(toxicity), latency_ms, error, now_iso()))

    def get_score(self, text: str, detector_id: int) -> dict[str, Any] | None:
        row = self.conn.execute(
            "SELECT s.labels_json, s.toxicity, s.latency_ms, s.error, s.created_at FROM scores s "
            "JOIN texts t USING (text_id) WHERE t.text_hash = ? AND s.detector_id = ?",
            (text_hash(text), detector_id)).fetchone()
        if row is None:
            return None
        return {"labels": None if row[0] is None else json.loads(row[0]), "toxicity": row[1],
                "latency_ms": row[2], "error": row[3], "created_at": row[4]}

    def add_normalization(self, source_text: str, normalizer: str, version: str,
                          result_text: str, edits: list[dict[str, Any]]) -> None:
        with self.transaction():
            self._write("INSERT OR IGNORE INTO normalizations (source_text_id, normalizer, version, result_text_id, "
                        "edits_json, created_at) VALUES (?, ?, ?, ?, ?, ?)",
                        (self.text_id(source_text), normalizer, version, self.text_id(result_text),
                         json.dumps(edits, ensure_ascii=False), now_iso()))

    def add_variant(self, comment_id: int, variant: Variant, run_id: int | None = None) -> int:
        with self.transaction():
            source = variant.source_text or self.comment_text(comment_id)
            if source is None:
                raise StudyLogError(f"no comment with id {comment_id}")
            key = (comment_id, self.text_id(variant.text), variant.strategy, canonical_json(variant.params), int(variant.seed))
            self._write(
                "INSERT OR IGNORE INTO variants (comment_id, source_text_id, text_id, strategy, params_json, seed, "
                "positions_json, target_detector, attack_json, run_id, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (key[0], self.text_id(source), key[1], key[2], key[3], key[4],
                 json.dumps([list(p) for p in variant.positions]), variant.target_detector,
                 None if variant.attack is None else canonical_json(variant.attack), run_id, now_iso()))
            return self._one("SELECT variant_id FROM variants WHERE comment_id = ? AND text_id = ? AND strategy = ? "
                             "AND params_json = ? AND seed = ?", key)

    def add_rating(self, study_id: str, rater_id: str, client_rating_id: str, session_id: str | None,
                   comment_id: int, values: dict[str, str], anchors: dict[str, Any] | None,
                   derived_toxicity: str | None, inconsistent: bool,
                   time_spent_ms: int | None) -> tuple[int, bool]:
        """Returns (rating_id, newly created); a resent rating returns the stored one unchanged."""
        with self.transaction():
            existing = self._one("SELECT rating_id FROM ratings WHERE study_id = ? AND rater_id = ? AND client_rating_id = ?",
                                 (study_id, rater_id, client_rating_id))
            if existing is not None:
                return existing, False
            rating_id = self._write(
                "INSERT INTO ratings (study_id, rater_id, client_rating_id, session_id, comment_id, values_json, "
                "anchors_json, derived_toxicity, inconsistent, time_spent_ms, created_at) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (study_id, rater_id, client_rating_id, session_id, comment_id, canonical_json(values),
                 None if anchors is None else canonical_json(anchors), derived_toxicity, int(bool(inconsistent)),
                 time_spent_ms, now_iso())).lastrowid
            self.conn.executemany("INSERT INTO rating_values (rating_id, attribute, value) VALUES (?, ?, ?)",
                                  [(rating_id, a, str(v)) for a, v in values.items()])
            return rating_id, True

    def start_run(self, dataset: str, path: str | None, params: dict[str, Any]) -> int:
        return self._write("INSERT INTO audit_runs (dataset, path, params_json, status, started_at) VALUES (?, ?, ?, ?, ?)",
                           (dataset, path, canonical_json(params), "running", now_iso())).lastrowid

    def add_run_item(self, run_id: int, comment_id: int) -> None:
        with self.transaction():
            if self._write("INSERT OR IGNORE INTO run_items (run_id, comment_id) VALUES (?, ?)", (run_id, comment_id)).rowcount:
                self._write("UPDATE audit_runs SET n_items = n_items + 1 WHERE run_id = ?", (run_id,))

    def set_run_progress(self, run_id: int, n_done: int) -> None:
        self._write("UPDATE audit_runs SET n_done = ? WHERE run_id = ?", (n_done, run_id))

    def set_run_status(self, run_id: int, status: str) -> None:
        """E.g. back to "running" when an interrupted audit resumes (finished_at is cleared)."""
        self._write("UPDATE audit_runs SET status = ?, finished_at = NULL WHERE run_id = ?", (status, run_id))

    def finish_run(self, run_id: int, status: str) -> None:
        self._write("UPDATE audit_runs SET status = ?, finished_at = ? WHERE run_id = ?", (status, now_iso(), run_id))

    # --- batched writes (corpus-scale ingest) ---------------------------------------------
    # Each one stores exactly the rows that the row-at-a-time methods above would store when
    # called in the same order (same ids, same dedup, same conflict rules), in one atomic
    # block: a few `executemany` statements instead of several statements per row.
    # docs/PERFORMANCE.md, "Study-log ingest", has the numbers (bench/bench_studylog.py).

    def _executemany(self, sql: str, rows: Iterable[tuple]) -> sqlite3.Cursor:
        if self.readonly:
            raise StudyLogError("this study log was opened read-only")
        return self.conn.executemany(sql, rows)

    def _ids_by_key(self, sql: str, keys: Sequence[str], params: tuple = ()) -> dict[str, int]:
        """{key: id} from `sql`, a SELECT of (key, id) whose last parameter is a JSON array of keys."""
        out: dict[str, int] = {}
        for start in range(0, len(keys), _LOOKUP_CHUNK):
            out.update(self.conn.execute(sql, (*params, json.dumps(keys[start:start + _LOOKUP_CHUNK]))).fetchall())
        return out

    def text_ids(self, texts: Iterable[str]) -> dict[str, int]:
        """{text: text_id} for every distinct text, inserting the missing ones in order of first
        appearance (so they get the ids `text_id` called in that order would give)."""
        uniq = list(dict.fromkeys(texts))
        for t in uniq:
            if not isinstance(t, str):
                raise TypeError(f"text must be str, not {type(t).__name__}")
        if not uniq:
            return {}
        hashes = [text_hash(t) for t in uniq]
        with self.transaction():  # the lookup and the inserts under one write lock
            by_hash = self._ids_by_key(_TEXT_IDS, hashes)
            missing = [(h, t) for h, t in zip(hashes, uniq) if h not in by_hash]
            if missing:
                self._executemany("INSERT INTO texts (text_hash, text) VALUES (?, ?)", missing)
                by_hash.update(self._ids_by_key(_TEXT_IDS, [h for h, _ in missing]))
        return {t: by_hash[h] for h, t in zip(hashes, uniq)}

    def add_scores_many(self, rows: Iterable[tuple[str, int, dict[str, float] | None, float | None,
                                                    float | None, str | None]]) -> int:
        """(text, detector_id, labels, toxicity, latency_ms, error) rows, as `add_score` each (a
        later good score replaces an earlier error, never the reverse); the number of rows given."""
        rows = rows if isinstance(rows, list) else list(rows)
        if not rows:
            return 0
        enc, join = _CANONICAL, "".join
        if enc is None:  # a Python without the C accelerator
            def enc(value: Any, _indent: int) -> tuple[str]:
                return (canonical_json(value),)
        with self.transaction():
            ids = self.text_ids([r[0] for r in rows])
            now = now_iso()
            # canonical_json inlined: this comprehension is most of the Python time per score row
            self._executemany(_SCORE_UPSERT, [
                (ids[text], det, None if labels is None else join(enc(labels, 0)),
                 None if toxicity is None else float(toxicity), latency, error, now)
                for text, det, labels, toxicity, latency, error in rows])
        return len(rows)

    def scored_texts(self, texts: Iterable[str], detector_id: int) -> set[str]:
        """The texts among `texts` that this detector version has a good score for (not an
        error): what an audit or a rerun must not score again."""
        by_hash = {text_hash(t): t for t in dict.fromkeys(texts)}
        found = self._ids_by_key(
            "SELECT t.text_hash, 1 FROM texts t JOIN scores s ON s.text_id = t.text_id AND s.detector_id = ? "
            "WHERE t.text_hash IN (SELECT value FROM json_each(?)) AND s.error IS NULL", list(by_hash), (detector_id,))
        return {by_hash[h] for h in found}

    def add_comments_many(self, platform: str, rows: Iterable[CommentRow]) -> list[int]:
        """Comments of one platform, as `add_comment` each: a key already in the log (or earlier in
        `rows`) keeps its first text and returns its id; one comment_id per row, in order."""
        rows = list(rows)
        if not rows:
            return []
        for r in rows:
            if not isinstance(r.text, str):
                raise TypeError(f"text must be str, not {type(r.text).__name__}")
        with self.transaction():
            keys = list(dict.fromkeys(r.key for r in rows))
            sql = ("SELECT comment_key, comment_id FROM comments WHERE platform = ? "
                   "AND comment_key IN (SELECT value FROM json_each(?))")
            existing = self._ids_by_key(sql, keys, (platform,))
            new: dict[str, CommentRow] = {}
            for r in rows:
                if r.key not in existing and r.key not in new:
                    new[r.key] = r
            if new:
                tids = self.text_ids(r.text for r in new.values())
                now = now_iso()
                self._executemany(
                    "INSERT INTO comments (platform, comment_key, page_id, parent_key, text_id, author_hash, time_shown, "
                    "truncated, original_length, first_seen) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    [(platform, r.key, r.page_id, r.parent_key, tids[r.text], r.author_hash, r.time_shown,
                      int(bool(r.truncated)), len(r.text) if r.original_length is None else r.original_length, now)
                     for r in new.values()])
                existing.update(self._ids_by_key(sql, list(new), (platform,)))
        return [existing[r.key] for r in rows]

    def add_labels_many(self, rows: Iterable[tuple[int, str, Any, str]]) -> None:
        """(comment_id, name, value, source) rows, as `add_label` each."""
        with self.transaction():
            self._executemany(
                "INSERT INTO labels (comment_id, name, value, source) VALUES (?, ?, ?, ?) "
                "ON CONFLICT (comment_id, name, source) DO UPDATE SET value = excluded.value",
                [(cid, name, None if value is None else value if isinstance(value, str) else canonical_json(value),
                  source) for cid, name, value, source in rows])

    def add_normalizations_many(self, rows: Iterable[tuple[str, str, str, str, list[dict[str, Any]]]]) -> None:
        """(source_text, normalizer, version, result_text, edits) rows, as `add_normalization` each."""
        rows = list(rows)
        if not rows:
            return
        with self.transaction():
            ids = self.text_ids(t for r in rows for t in (r[0], r[3]))
            now = now_iso()
            self._executemany(
                "INSERT OR IGNORE INTO normalizations (source_text_id, normalizer, version, result_text_id, "
                "edits_json, created_at) VALUES (?, ?, ?, ?, ?, ?)",
                [(ids[src], normalizer, version, ids[result], json.dumps(edits, ensure_ascii=False), now)
                 for src, normalizer, version, result, edits in rows])

    def add_variants_many(self, rows: Iterable[tuple[int, Variant]], run_id: int | None = None) -> list[int]:
        """(comment_id, variant) rows, as `add_variant` each; one variant_id per row, in order."""
        rows = list(rows)
        if not rows:
            return []
        with self.transaction():
            sources: dict[int, str] = {}
            for cid, v in rows:
                if not v.source_text and cid not in sources:
                    text = self.comment_text(cid)
                    if text is None:
                        raise StudyLogError(f"no comment with id {cid}")
                    sources[cid] = text
            src = [v.source_text or sources[cid] for cid, v in rows]
            ids = self.text_ids(t for (_, v), s in zip(rows, src) for t in (v.text, s))
            now = now_iso()
            keys = [(cid, ids[v.text], v.strategy, canonical_json(v.params), int(v.seed)) for cid, v in rows]
            self._executemany(
                "INSERT OR IGNORE INTO variants (comment_id, source_text_id, text_id, strategy, params_json, seed, "
                "positions_json, target_detector, attack_json, run_id, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [(k[0], ids[s], k[1], k[2], k[3], k[4], json.dumps([list(p) for p in v.positions]), v.target_detector,
                  None if v.attack is None else canonical_json(v.attack), run_id, now)
                 for k, s, (_, v) in zip(keys, src, rows)])
            ids_out: list[int] = []
            for start in range(0, len(keys), _LOOKUP_CHUNK):  # the ids back by their unique key
                part = keys[start:start + _LOOKUP_CHUNK]
                found = dict(self.conn.execute(_VARIANT_IDS, (json.dumps(part, ensure_ascii=False),)).fetchall())
                ids_out += [found[i] for i in range(len(part))]
            return ids_out

    def add_run_items_many(self, run_id: int, comment_ids: Iterable[int]) -> None:
        """As `add_run_item` for each comment (n_items counts the new ones)."""
        with self.transaction():
            added = self._executemany("INSERT OR IGNORE INTO run_items (run_id, comment_id) VALUES (?, ?)",
                                      [(run_id, cid) for cid in comment_ids]).rowcount
            if added > 0:
                self._write("UPDATE audit_runs SET n_items = n_items + ? WHERE run_id = ?", (added, run_id))


class CommentRow(NamedTuple):
    """One comment for `StudyLog.add_comments_many` (the keyword arguments of `add_comment`)."""
    key: str
    text: str
    page_id: int | None = None
    parent_key: str | None = None
    author_hash: str | None = None
    time_shown: str | None = None
    truncated: bool = False
    original_length: int | None = None


_TEXT_IDS = "SELECT text_hash, text_id FROM texts WHERE text_hash IN (SELECT value FROM json_each(?))"
# (position in the JSON array, variant_id) for an array of [comment_id, text_id, strategy, params_json, seed]
_VARIANT_IDS = ("SELECT j.key, v.variant_id FROM json_each(?) j JOIN variants v ON v.comment_id = j.value ->> 0 "
                "AND v.text_id = j.value ->> 1 AND v.strategy = j.value ->> 2 AND v.params_json = j.value ->> 3 "
                "AND v.seed = j.value ->> 4")
# the one score statement (row-at-a-time and batched): a score replaces an earlier error for the
# same text and detector version, never the reverse
_SCORE_UPSERT = (
    "INSERT INTO scores (text_id, detector_id, labels_json, toxicity, latency_ms, error, created_at) "
    "VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (text_id, detector_id) DO UPDATE SET "
    "labels_json = excluded.labels_json, toxicity = excluded.toxicity, latency_ms = excluded.latency_ms, "
    "error = excluded.error, created_at = excluded.created_at "
    "WHERE scores.error IS NOT NULL AND excluded.error IS NULL")



_STOP = object()


class LogWriter:
    """The one writer of a study log: a thread that commits queued calls in batches."""

    def __init__(self, path: str | Path, *, max_batch: int = 256, max_delay_ms: float = 20.0) -> None:
        self.path = Path(path)
        self.max_batch = max_batch
        self.max_delay = max_delay_ms / 1000
        self._queue: queue.Queue = queue.Queue()
        self._thread: threading.Thread | None = None
        self._accepting = False
        self.batches = 0   # committed transactions (for benchmarks and status)
        self.calls = 0

    async def start(self) -> None:
        if self._thread is not None:
            return
        ready: concurrent.futures.Future = concurrent.futures.Future()
        self._thread = threading.Thread(target=self._run, args=(ready,), name="studylog-writer", daemon=True)
        self._thread.start()
        await asyncio.wrap_future(ready)  # raises if the log could not be opened or migrated
        self._accepting = True

    async def stop(self) -> None:
        """Drains the queue, commits, closes."""
        if self._thread is None:
            return
        self._accepting = False
        self._queue.put(_STOP)
        thread, self._thread = self._thread, None
        await asyncio.get_running_loop().run_in_executor(None, thread.join)

    def submit(self, fn: Callable[[StudyLog], T]) -> Awaitable[T]:
        """Queue `fn(log)`; the awaitable resolves with its result after the COMMIT that included it."""
        return asyncio.wrap_future(self.submit_threadsafe(fn))

    def submit_threadsafe(self, fn: Callable[[StudyLog], T]) -> concurrent.futures.Future:
        """Same as `submit`, for code outside the event loop (blocks nothing; `.result()` waits)."""
        if not self._accepting:
            raise RuntimeError("LogWriter is not running (call `await writer.start()` first, and not after stop())")
        fut: concurrent.futures.Future = concurrent.futures.Future()
        self._queue.put((fn, fut))
        return fut

    # --- the writer thread ------------------------------------------------------------------
    def _run(self, ready: concurrent.futures.Future) -> None:
        try:
            log = StudyLog(self.path)
        except BaseException as err:
            ready.set_exception(err)
            return
        ready.set_result(None)
        try:
            stopping = False
            while not stopping:
                batch, stopping = self._collect()
                if batch:
                    self._commit(log, batch)
        finally:
            log.close()

    def _collect(self) -> tuple[list, bool]:
        first = self._queue.get()
        if first is _STOP:
            return [], True
        batch = [first]
        deadline = time.monotonic() + self.max_delay
        while len(batch) < self.max_batch:
            try:
                item = self._queue.get_nowait()
            except queue.Empty:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    break
                try:
                    item = self._queue.get(timeout=remaining)
                except queue.Empty:
                    break
            if item is _STOP:
                return batch, True
            batch.append(item)
        return batch, False

    def _commit(self, log: StudyLog, batch: list) -> None:
        conn = log.conn
        outcomes: list[tuple[bool, Any]] = []
        try:
            begin_immediate(conn, self.path)  # waits for another process's writer (an audit)
            for fn, _fut in batch:
                conn.execute("SAVEPOINT call")
                try:
                    result = fn(log)
                    if asyncio.iscoroutine(result):
                        result.close()
                        raise TypeError("LogWriter.submit takes a plain function of the StudyLog, not a coroutine")
                    conn.execute("RELEASE call")
                    outcomes.append((True, result))
                except Exception as err:  # this call alone is undone; the rest of the batch commits
                    conn.execute("ROLLBACK TO call")
                    conn.execute("RELEASE call")
                    outcomes.append((False, err))
            conn.execute("COMMIT")
        except BaseException as err:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            for _fn, fut in batch:
                _settle(fut, False, StudyLogError(f"study log commit failed: {err}"))
            if not isinstance(err, Exception):
                raise
            return
        self.batches += 1
        self.calls += len(batch)
        for (ok, value), (_fn, fut) in zip(outcomes, batch):
            _settle(fut, ok, value)


def _settle(fut: concurrent.futures.Future, ok: bool, value: Any) -> None:
    if fut.set_running_or_notify_cancel():  # False when the caller gave up waiting
        fut.set_result(value) if ok else fut.set_exception(value)
