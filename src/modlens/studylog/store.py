"""`StudyLog`: one open study log (SQLite), and `LogWriter`, its single async writer.

The study-log package, by room:
- `connection.py`  opening (WAL, pragmas, files created 0600), waiting for the write lock on one
                   monotonic deadline, transactions (`LogConnection`, `begin_immediate`)
- `migrate.py`     applying `schema.MIGRATIONS`
- `codec.py`       `now_iso`, `canonical_json`, `text_hash`
- `records/`       the row functions, batch-first, one module per table group: the only code
                   that writes the log's SQL
- `writer.py`      the writer thread behind `LogWriter`
- this module      `StudyLog`, a thin facade whose methods call the row functions; each other name
                   is imported from the module that defines it
Plain record types (`Variant`, `CommentRow`, ...) live in the leaf module `modlens.rows`.

CONTRACT (the daemon, audits and services code against it):
- `StudyLog(path)` opens the file in WAL mode, enables foreign keys, applies pending
  migrations. `StudyLog(path, readonly=True)` never writes (export, report), so readers never
  block the writer.
- Every write is idempotent: writing the same natural key again returns the existing row id
  and inserts nothing.
- One row and many go through the same function (`add_comment` is `add_comments_many` of one
  row): the same rows, ids and conflict rules whatever the batch, each call atomic
  (docs/PERFORMANCE.md, "Study-log ingest").
- Several processes may write one log at once: every write transaction starts with
  `BEGIN IMMEDIATE`, and a wait for the lock that runs past `connection.BUSY_TIMEOUT_MS` is a
  `StudyLogError` giving the seconds really waited.
- `LogWriter` owns one StudyLog in one dedicated thread; `await writer.submit(fn)` resolves
  after the COMMIT that included `fn(log)` (writer.py).

Transactions are managed by hand (the connection is in autocommit mode and we issue
BEGIN/SAVEPOINT/COMMIT ourselves), so sqlite-utils (`log.db`) is for reads and introspection
only: its write helpers wrap themselves in `with conn:`, which would commit a writer batch
early. `log.db` is built on first use because importing sqlite-utils imports pandas (about a
second), which the writer, the daemon and the crash-test children do not need.
"""
from __future__ import annotations

import functools
from pathlib import Path
from collections.abc import Mapping, Sequence
from typing import Any, Iterable

from modlens.rows import CommentRow, LabelRow, NormalizationRow, StepErrorRow, TextScoreRow, Variant
from modlens.studylog import migrate
from modlens.studylog.connection import CACHE_SIZE_KIB, LogConnection
from modlens.studylog.records import comments, reviews, runs, scores, sessions, texts, variants
from modlens.studylog.writer import BatchWriter


class StudyLog(LogConnection):
    def __init__(self, path: str | Path, *, readonly: bool = False, synchronous: str | None = None,
                 cache_kib: int = CACHE_SIZE_KIB) -> None:
        """`synchronous`: "FULL" (default, `connection.SYNCHRONOUS`) or "NORMAL" for a writer whose last
        transactions may be lost on power loss (never on a crash of the process; docs/DATA.md).
        `cache_kib`: the writer's SQLite page cache."""
        super().__init__(path, readonly=readonly, synchronous=synchronous, cache_kib=cache_kib)
        self._db: Any = None
        try:
            if readonly:
                migrate.check_readable(self)
            else:
                migrate.apply_migrations(self)
        except BaseException:
            self.close()
            raise

    # --- lifecycle and introspection -------------------------------------------------------
    def __enter__(self) -> "StudyLog":
        return self

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        # a block that failed keeps its own error; one that ended well has its read checked
        self.close(check=exc is None)

    @property
    def db(self) -> Any:
        """A `sqlite_utils.Database` on this connection (reads and introspection only)."""
        if self._db is None:
            import sqlite_utils
            self._db = sqlite_utils.Database(self.conn, execute_plugins=False)
        return self._db

    def table_names(self) -> list[str]:
        return [r[0] for r in self.conn.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY rowid")]

    def user_version(self) -> int:
        return migrate.user_version(self)

    def integrity_check(self) -> str:
        rows = [r[0] for r in self.conn.execute("PRAGMA integrity_check")]
        return "ok" if rows == ["ok"] else "; ".join(rows)

    def counts(self) -> dict[str, int]:
        return {t: self.conn.execute(f"SELECT count(*) FROM [{t}]").fetchone()[0] for t in self.table_names()}

    def query(self, sql: str, params: tuple[Any, ...] | dict[str, Any] = ()) -> list[dict[str, Any]]:
        cursor = self.conn.execute(sql, params)
        names = [d[0] for d in cursor.description or ()]
        return [dict(zip(names, row)) for row in cursor]

    # --- studies, raters, sessions, ratings (records/sessions.py) --------------------------------
    def ensure_study(self, study_id: str, title: str, config: dict[str, Any]) -> None:
        sessions.ensure_study(self, study_id, title, config)

    def ensure_rater(self, study_id: str, rater_id: str, consent_at: str | None, consent_text: str | None = None) -> None:
        sessions.ensure_rater(self, study_id, rater_id, consent_at, consent_text)

    def withdraw_consent(self, study_id: str, rater_id: str, withdrawn_at: str) -> int:
        return sessions.withdraw_consent(self, study_id, rater_id, withdrawn_at)

    def start_session(self, session_id: str, study_id: str, rater_id: str | None, client: str,
                      client_version: str | None, protocol_version: int | None) -> None:
        sessions.start_session(self, session_id, study_id, rater_id, client, client_version, protocol_version)

    def end_session(self, session_id: str, ended_by: str = "client", at: str | None = None) -> None:
        sessions.end_session(self, session_id, ended_by, at)

    def close_open_sessions(self, study_id: str | None = None, ended_by: str = "recovery") -> int:
        """After a crash: every open session ends at its last activity."""
        return sessions.close_open_sessions(self, study_id, ended_by)

    def stored_rating(self, study_id: str, rater_id: str, client_rating_id: str) -> dict[str, Any] | None:
        """The rating stored under this client id (what a resend is compared with), None when none is."""
        return sessions.stored_rating(self, study_id, rater_id, client_rating_id)

    def add_rating(self, study_id: str, rater_id: str, client_rating_id: str, session_id: str | None,
                   comment_id: int, values: dict[str, str], anchors: dict[str, Any] | None,
                   derived_toxicity: str | None, inconsistent: bool,
                   time_spent_ms: int | None, time_spent_over_limit_ms: int | None = None) -> sessions.AddedRating:
        """Returns (rating_id, newly created); a resent rating returns the stored one unchanged, its row
        in `.stored` (what the daemon compares a resend with).
        `time_spent_over_limit_ms`: an implausible reported time, kept apart (time_spent_ms is then None)."""
        return sessions.add_rating(self, study_id, rater_id, client_rating_id, session_id, comment_id, values,
                                   anchors, derived_toxicity, inconsistent, time_spent_ms, time_spent_over_limit_ms)

    def put_rater_reviews(self, rows: list[dict[str, Any]]) -> None:
        """Acceptance decisions per (study, rater, task), replacing earlier ones (records/reviews.py)."""
        reviews.put_reviews(self, rows)

    def add_crowd_import(self, study_id: str, fmt: str, source: str, source_sha256: str, records: str,
                         skipped: dict[str, int], counts: dict[str, int], on_change: str) -> int:
        """One `modlens rate FILE` import: its counts and the records it skipped (records/reviews.py)."""
        return reviews.add_import(self, study_id, fmt, source, source_sha256, records, skipped, counts, on_change)

    # --- texts, pages, comments, sightings, labels (records/texts.py, records/comments.py) -------
    def text_id(self, text: str) -> int:
        return texts.text_id(self, text)

    def text_ids(self, texts_: Iterable[str]) -> dict[str, int]:
        """{text: text_id} for every distinct text, inserting the missing ones in order of first appearance."""
        return texts.text_ids(self, texts_)

    def ensure_page(self, platform: str, page_key: str, url: str | None, title: str | None) -> int:
        return comments.ensure_page(self, platform, page_key, url, title)

    def add_comment(self, platform: str, comment_key: str, page_id: int | None, text: str, *,
                    parent_key: str | None = None, author_hash: str | None = None,
                    time_shown: str | None = None, truncated: bool = False,
                    original_length: int | None = None, first_labels: dict[str, tuple[Any, str]] | None = None) -> int:
        """`first_labels` (name -> (value, source)) are written with a new comment only: like its
        text and parent, they describe the first sighting."""
        return comments.add_comment(self, platform, comment_key, page_id, text, parent_key=parent_key,
                                    author_hash=author_hash, time_shown=time_shown, truncated=truncated,
                                    original_length=original_length, first_labels=first_labels)

    def add_comments_many(self, platform: str, rows: Iterable[CommentRow]) -> list[int]:
        """Comments of one platform (a known key keeps its first text); one comment_id per row, in order."""
        return comments.add_comments(self, platform, rows)

    def comment_id(self, platform: str, comment_key: str) -> int | None:
        return comments.comment_id(self, platform, comment_key)

    def comment_ids(self, platform: str, comment_keys: list[str]) -> dict[str, int]:
        """{comment_key: comment_id} of the keys that are in the log."""
        return comments.comment_ids(self, platform, comment_keys)

    def comment_text(self, comment_id: int) -> str | None:
        return comments.comment_text(self, comment_id)

    def add_sighting(self, comment_id: int, session_id: str) -> None:
        comments.add_sighting(self, comment_id, session_id)

    def add_sightings(self, rows: Iterable[tuple[int, str] | tuple[int, str, str]]) -> None:
        """(comment_id, session_id[, the text that session was sent]) rows."""
        comments.add_sightings(self, rows)

    def add_label(self, comment_id: int, name: str, value: Any, source: str) -> None:
        comments.add_label(self, comment_id, name, value, source)

    def add_labels_many(self, rows: Iterable[LabelRow]) -> None:
        """(comment_id, name, value, source) rows."""
        comments.add_labels(self, rows)

    def add_labels_per_comment(self, source: str, rows: Iterable[tuple[int, Mapping[str, Any]]],
                               leave_out: str | None = None) -> None:
        """(comment_id, {name: value}) rows: every label but `leave_out`, from `source`."""
        comments.add_labels_per_comment(self, source, rows, leave_out)

    # --- detectors and scores (records/scores.py) --------------------------------------------
    def ensure_detector(self, name: str, version: str, toxicity_label: str | None,
                        threshold: float | None, config: dict[str, Any]) -> int:
        return scores.ensure_detector(self, name, version, toxicity_label, threshold, config)

    def add_score(self, text: str, detector_id: int, labels: dict[str, float] | None,
                  toxicity: float | None, latency_ms: float | None, error: str | None) -> None:
        scores.add_score(self, text, detector_id, labels, toxicity, latency_ms, error)

    def add_scores_many(self, rows: Iterable[TextScoreRow]) -> scores.ScoresWritten:
        """(text, detector_id, labels, toxicity, latency_ms, error) rows; what the write did (given, added, replaced)."""
        return scores.add_scores(self, rows)

    def get_score(self, text: str, detector_id: int) -> dict[str, Any] | None:
        return scores.get_score(self, text, detector_id)

    def scored_texts(self, texts_: Iterable[str], detector_id: int) -> set[str]:
        """The texts among `texts_` this detector version has a good score for (not an error)."""
        return scores.scored_texts(self, texts_, detector_id)

    def seen_texts(self, texts_: Iterable[str], detector_ids: Sequence[int]) -> tuple[texts.Seen, dict[int, set[str]]]:
        """A chunk's texts in one lookup: (their hashes and ids, detector_id -> the texts it has a good score for)."""
        return scores.seen_texts(self, texts_, detector_ids)

    def known_texts(self, seen: texts.Seen) -> bool:
        """Inside a write transaction: `seen` taken as its lookup if nothing was written since (`texts.known`)."""
        return texts.known(self, seen)

    # --- variants, normalizations, step errors (records/variants.py) ---------------------------
    def add_variant(self, comment_id: int, variant: Variant, run_id: int | None = None) -> int:
        return variants.add_variant(self, comment_id, variant, run_id)

    def add_variants_many(self, rows: Iterable[tuple[int, Variant]], run_id: int | None = None) -> list[int]:
        """(comment_id, variant) rows; one variant_id per row, in order."""
        return variants.add_variants(self, rows, run_id)

    def set_attack_checks(self, rows: Iterable[tuple[int, dict[str, Any]]]) -> None:
        """Store each logged attack's model-dependent checks (quality verdicts) in its attack record."""
        variants.set_attack_checks(self, rows)

    def replace_attacks(self, rows: Iterable[tuple[int, Mapping[str, Any]]]) -> None:
        """Attack records whose result was unknown replaced by the same attack's, run again."""
        variants.replace_attacks(self, rows)

    def add_normalization(self, source_text: str, normalizer: str, version: str,
                          result_text: str, edits: Sequence[Mapping[str, object]]) -> None:
        variants.add_normalization(self, source_text, normalizer, version, result_text, edits)

    def add_normalizations_many(self, rows: Iterable[NormalizationRow]) -> None:
        """(source_text, normalizer, version, result_text, edits) rows."""
        variants.add_normalizations(self, rows)

    def add_step_errors(self, rows: Iterable[StepErrorRow]) -> None:
        """(text, step, component, version, run_id, message) rows: a step that failed for one text."""
        variants.add_step_errors(self, rows)

    # --- audit runs (records/runs.py) -----------------------------------------------------------
    def start_run(self, dataset: str, path: str | None, params: dict[str, Any],
                  label_set_id: int | None = None) -> int:
        return runs.start_run(self, dataset, path, params, label_set_id)

    def find_run(self, dataset: str, path: str | None, params: dict[str, Any], *,
                 unfinished_only: bool = False) -> int | None:
        """The latest run with these parameters, the record of the bytes read aside (to resume, or to add to)."""
        return runs.find_run(self, dataset, path, params, unfinished_only=unfinished_only)

    def add_run_item(self, run_id: int, comment_id: int) -> None:
        runs.add_run_item(self, run_id, comment_id)

    def add_run_items_many(self, run_id: int, comment_ids: Iterable[int]) -> None:
        runs.add_run_items(self, run_id, comment_ids)

    def set_run_progress(self, run_id: int, n_done: int) -> None:
        runs.set_run_progress(self, run_id, n_done)

    def set_run_status(self, run_id: int, status: str) -> None:
        """E.g. back to "running" when an interrupted audit resumes (finished_at is cleared)."""
        runs.set_run_status(self, run_id, status)

    def finish_run(self, run_id: int, status: str) -> None:
        runs.finish_run(self, run_id, status)


class LogWriter(BatchWriter[StudyLog]):
    """The one writer of a study log: a thread that commits queued calls in batches (writer.py)."""

    def __init__(self, path: str | Path, *, max_batch: int = 256, max_delay_ms: float = 20.0,
                 cache_kib: int = CACHE_SIZE_KIB) -> None:
        super().__init__(path, functools.partial(StudyLog, cache_kib=cache_kib), max_batch=max_batch,
                         max_delay_ms=max_delay_ms)
