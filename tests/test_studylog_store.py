"""StudyLog and LogWriter: idempotent writes, batching with per-call savepoints, readers
beside the writer, migrations."""
from __future__ import annotations

import asyncio
import sqlite3
import threading

import pytest

from modlens.errors import UPGRADE
from modlens.perturb.base import Variant
from modlens.studylog import schema
from modlens.studylog.store import LogWriter, StudyLog
from modlens.studylog.codec import text_hash
from modlens.studylog.connection import StudyLogError
from modlens.studylog.schema import SCHEMA_VERSION


@pytest.fixture
def db(tmp_path):
    return tmp_path / "study.sqlite"


def seeded(log: StudyLog) -> int:
    log.ensure_study("s1", "Study", {"a": 1})
    log.ensure_rater("s1", "r1", None)
    log.start_session("sess1", "s1", "r1", "extension", "0.1", 1)
    page = log.ensure_page("youtube", "vid1", "https://www.youtube.com/watch?v=vid1", None)
    return log.add_comment("youtube", "c1", page, "you are a stupid idiot", author_hash="ab12")


def test_open_sets_wal_foreign_keys_durability_and_schema_version(db):
    with StudyLog(db) as log:
        assert log.conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert log.conn.execute("PRAGMA foreign_keys").fetchone()[0] == 1
        assert log.conn.execute("PRAGMA synchronous").fetchone()[0] == 2  # FULL
        assert log.user_version() == schema.SCHEMA_VERSION
        assert set(log.counts()) >= {"comments", "ratings", "scores", "variants", "texts", "audit_runs"}
        assert log.integrity_check() == "ok"


def test_every_write_is_idempotent_by_natural_key(db):
    with StudyLog(db) as log:
        run = None
        for attempt in range(2):  # the second pass is a client resending everything after a reconnect
            cid = seeded(log)
            log.ensure_rater("s1", "r1", "2025-01-01T00:00:00Z")
            log.add_sighting(cid, "sess1")
            log.add_label(cid, "gold", {"toxicity": "toxic"}, "noisyhate")
            det = log.ensure_detector("minilm", "abc123", "toxic", 0.5, {"k": 1})
            log.add_score("you are a stupid idiot", det, {"toxic": 0.9}, 0.9, 3.5, None)
            log.add_normalization("st00pid", "default", "v1", "stupid", [{"start": 0, "end": 7}])
            vid = log.add_variant(cid, Variant("you are a stup1d idiot", "char_attack", {"rate": 0.1}, 7, [(10, 16)]))
            rid, _ = log.add_rating("s1", "r1", "client-1", "sess1", cid, {"toxicity": "toxic", "formality": "informal"},
                                    {"vs_hard": "more"}, "toxic", False, 1200)
            run = log.start_run("noisyhate", None, {}) if attempt == 0 else run
            log.add_run_item(run, cid)
        counts = log.counts()
        assert {k: counts[k] for k in ("studies", "raters", "sessions", "pages", "comments", "sightings", "labels",
                                       "detectors", "scores", "normalizations", "variants", "ratings", "run_items")} == \
            dict.fromkeys(["studies", "raters", "sessions", "pages", "comments", "sightings", "labels", "detectors",
                           "scores", "normalizations", "variants", "ratings", "run_items"], 1)
        assert counts["rating_values"] == 2
        # texts: comment, normalization source + result, variant (the variant's source is the comment)
        assert counts["texts"] == 4
        assert log.add_rating("s1", "r1", "client-1", "sess1", cid, {}, None, None, False, None) == (rid, False)
        assert log.query("SELECT consent_at FROM raters")[0]["consent_at"] == "2025-01-01T00:00:00Z"
        assert log.query("SELECT n_items FROM audit_runs")[0]["n_items"] == 1
        assert log.query("SELECT text_hash FROM texts WHERE text_id = (SELECT text_id FROM comments)")[0]["text_hash"] == \
            text_hash("you are a stupid idiot")
        assert vid == log.query("SELECT variant_id FROM variants")[0]["variant_id"]


def test_score_error_is_replaced_by_a_later_success_but_not_the_reverse(db):
    with StudyLog(db) as log:
        det = log.ensure_detector("perspective", "v1", "TOXICITY", 0.5, {})
        log.add_score("hi", det, None, None, None, "TimeoutError")
        assert log.get_score("hi", det)["error"] == "TimeoutError"
        log.add_score("hi", det, {"TOXICITY": 0.1}, 0.1, 12.0, None)
        log.add_score("hi", det, None, None, None, "429 quota")
        got = log.get_score("hi", det)
        assert got["error"] is None and got["toxicity"] == 0.1 and got["labels"] == {"TOXICITY": 0.1}
        assert log.get_score("never scored", det) is None


def test_texts_are_keyed_by_the_exact_text(db):
    with StudyLog(db) as log:
        ids = {log.text_id(t) for t in ["Idiot", "idiot", "idiot ", "idiot"]}
        assert len(ids) == 3


def test_bad_input_raises_clearly_and_leaves_no_partial_rows(db):
    with StudyLog(db) as log:
        cid = seeded(log)
        before = log.counts()
        with pytest.raises(sqlite3.IntegrityError):  # unknown study: foreign key
            log.add_rating("no-such-study", "r1", "x", None, cid, {"toxicity": "toxic"}, None, None, False, None)
        with pytest.raises(TypeError):
            log.add_comment("youtube", "c2", None, None)  # type: ignore[arg-type]
        assert log.counts() == before


def test_readonly_log_refuses_writes_and_missing_files(db, tmp_path):
    with StudyLog(db) as log:
        seeded(log)
    with StudyLog(db, readonly=True) as ro:
        assert ro.counts()["comments"] == 1
        with pytest.raises(StudyLogError):
            ro.add_comment("youtube", "c9", None, "x")
        with pytest.raises(sqlite3.OperationalError, match="readonly"):  # even raw SQL cannot write
            ro.conn.execute("DELETE FROM comments")
    with pytest.raises(StudyLogError, match="no study log"):
        StudyLog(tmp_path / "absent.sqlite", readonly=True)


def test_migrations_apply_pending_steps_once(db, monkeypatch):
    sqlite3.connect(db).close()  # an empty file at version 0
    with StudyLog(db) as log:
        assert log.user_version() == schema.SCHEMA_VERSION
    extra = "CREATE TABLE notes (note_id INTEGER PRIMARY KEY, body TEXT NOT NULL);"
    monkeypatch.setattr("modlens.studylog.migrate.MIGRATIONS", [*schema.MIGRATIONS, extra])
    monkeypatch.setattr("modlens.studylog.migrate.SCHEMA_VERSION", schema.SCHEMA_VERSION + 1)
    with StudyLog(db) as log:
        assert log.user_version() == schema.SCHEMA_VERSION + 1
        assert "notes" in log.counts()
    with StudyLog(db) as log:  # reopening does not re-run it (CREATE TABLE would fail)
        assert log.user_version() == schema.SCHEMA_VERSION + 1


def test_failed_migration_rolls_back_entirely(db, monkeypatch):
    monkeypatch.setattr("modlens.studylog.migrate.SCHEMA_VERSION", 1)
    StudyLog(db).close()  # a log an older modlens wrote
    monkeypatch.setattr("modlens.studylog.migrate.MIGRATIONS", [*schema.MIGRATIONS[:1], "CREATE TABLE a (x); BROKEN SQL;"])
    monkeypatch.setattr("modlens.studylog.migrate.SCHEMA_VERSION", 2)
    raw = sqlite3.connect(db)
    before = raw.execute("SELECT sql FROM sqlite_master ORDER BY rowid").fetchall()
    with pytest.raises(sqlite3.OperationalError):
        StudyLog(db)
    assert raw.execute("PRAGMA user_version").fetchone()[0] == 1
    assert raw.execute("SELECT sql FROM sqlite_master ORDER BY rowid").fetchall() == before  # no table `a`
    raw.close()


def test_a_failed_creation_leaves_an_empty_file(db, monkeypatch):
    monkeypatch.setattr("modlens.studylog.migrate.create_script", lambda version: "CREATE TABLE a (x); BROKEN SQL;")
    with pytest.raises(sqlite3.OperationalError):
        StudyLog(db)
    raw = sqlite3.connect(db)
    assert raw.execute("PRAGMA user_version").fetchone()[0] == 0
    assert raw.execute("SELECT count(*) FROM sqlite_master").fetchone()[0] == 0
    raw.close()


async def test_writer_batches_calls_and_isolates_a_failing_one(db):
    writer = LogWriter(db, max_batch=64, max_delay_ms=5)
    await writer.start()
    try:
        await writer.submit(lambda log: log.ensure_study("s1", "Study", {}))

        def bad(log: StudyLog):
            log.add_comment("youtube", "half-done", None, "this row must be undone")
            raise ValueError("boom")

        calls = [writer.submit(lambda log, i=i: log.add_comment("youtube", f"c{i}", None, f"text {i}")) for i in range(200)]
        calls.insert(100, writer.submit(bad))
        results = await asyncio.gather(*calls, return_exceptions=True)
        assert isinstance(results[100], ValueError)
        ok = [r for r in results if not isinstance(r, Exception)]
        assert len(ok) == 200 and len(set(ok)) == 200
        assert writer.batches < 50  # 201 calls in a handful of transactions, not one each
        with StudyLog(db, readonly=True) as ro:
            assert ro.counts()["comments"] == 200
            assert ro.comment_id("youtube", "half-done") is None
    finally:
        await writer.stop()
    with pytest.raises(RuntimeError, match="not running"):
        writer.submit(lambda log: None)


async def test_submit_resolves_only_after_commit_is_visible_to_another_connection(db):
    writer = LogWriter(db, max_delay_ms=1)
    await writer.start()
    try:
        await writer.submit(lambda log: seeded(log))
        for i in range(20):
            rid, new = await writer.submit(
                lambda log, i=i: log.add_rating("s1", "r1", f"c{i}", None, 1, {"toxicity": "toxic"}, None, None, False, 5))
            assert new
            with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as other:  # a separate reader sees it at once
                assert other.execute("SELECT 1 FROM ratings WHERE rating_id = ?", (rid,)).fetchone() == (1,)
    finally:
        await writer.stop()


async def test_coroutine_functions_are_rejected(db):
    writer = LogWriter(db)
    await writer.start()

    async def wrong(log):
        return 1

    try:
        with pytest.raises(TypeError, match="coroutine"):
            await writer.submit(wrong)
    finally:
        await writer.stop()


async def test_writer_open_failure_is_raised_by_start(tmp_path):
    not_a_db = tmp_path / "garbage.sqlite"
    not_a_db.write_bytes(b"this is not sqlite" * 100)
    with pytest.raises(sqlite3.DatabaseError):
        await LogWriter(not_a_db).start()


async def test_readers_never_block_the_writer(db):
    """A reader holding a long read transaction: the writer still commits, quickly."""
    writer = LogWriter(db, max_delay_ms=1)
    await writer.start()
    try:
        await writer.submit(lambda log: seeded(log))
        reader = StudyLog(db, readonly=True)
        reader.conn.execute("BEGIN")
        assert reader.conn.execute("SELECT count(*) FROM comments").fetchone()[0] == 1
        for i in range(50):
            await asyncio.wait_for(writer.submit(
                lambda log, i=i: log.add_comment("youtube", f"k{i}", None, f"t{i}")), timeout=5)
        # the reader's snapshot is stable; a new transaction sees the writes
        assert reader.conn.execute("SELECT count(*) FROM comments").fetchone()[0] == 1
        reader.conn.execute("COMMIT")
        assert reader.conn.execute("SELECT count(*) FROM comments").fetchone()[0] == 51
        reader.close()
    finally:
        await writer.stop()


def test_submit_threadsafe_from_a_plain_thread(db):
    async def main():
        writer = LogWriter(db)
        await writer.start()
        out = []
        t = threading.Thread(target=lambda: out.append(
            writer.submit_threadsafe(lambda log: log.ensure_page("x", "p", None, "T")).result(timeout=5)))
        t.start()
        await asyncio.get_running_loop().run_in_executor(None, t.join)
        await writer.stop()
        return out

    assert asyncio.run(main()) == [1]


def test_readonly_open_refuses_a_log_from_another_schema_version(db):
    StudyLog(db).close()
    raw = sqlite3.connect(db)
    raw.execute(f"PRAGMA user_version = {SCHEMA_VERSION - 1}")
    raw.commit()
    raw.close()
    with pytest.raises(StudyLogError, match=f"schema version {SCHEMA_VERSION - 1}.*open it once for writing"):
        StudyLog(db, readonly=True)
    raw = sqlite3.connect(db)
    raw.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")  # a newer modlens's: no writer here migrates it back
    raw.commit()
    raw.close()
    with pytest.raises(StudyLogError, match=f"schema version {SCHEMA_VERSION + 1}") as newer:
        StudyLog(db, readonly=True)
    assert "upgrade modlens" in (newer.value.fix or "") and "open it once for writing" not in str(newer.value)


def test_a_log_of_a_newer_schema_is_refused_in_the_same_words_by_a_reader_and_a_writer(db):
    """One meaning, one wording: the log's schema is newer than this modlens's, so only upgrading helps,
    whether it was opened to read or to write (and the writer leaves it as it was)."""
    StudyLog(db).close()
    raw = sqlite3.connect(db)
    raw.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    raw.commit()
    raw.close()
    refusals = []
    for readonly in (True, False):
        with pytest.raises(StudyLogError) as refused:
            StudyLog(db, readonly=readonly)
        refusals.append((refused.value.message, refused.value.fix))
    assert refusals[0] == refusals[1], refusals
    message, fix = refusals[0]
    assert message == (f"{db} has schema version {SCHEMA_VERSION + 1}, newer than this modlens reads "
                       f"({SCHEMA_VERSION}): a newer modlens wrote it"), message
    assert fix == UPGRADE
    raw = sqlite3.connect(db)
    assert raw.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION + 1
    raw.close()


def test_readonly_open_of_another_programs_database_says_it_is_no_study_log(tmp_path):
    """A SQLite file modlens did not write (user_version 0, tables of its own) is not an old study log:
    a reader must not advise opening it for writing to migrate it, and a writer must leave it as it
    was (it added modlens's tables to it, and switched it to WAL)."""
    other = tmp_path / "notes.sqlite"
    raw = sqlite3.connect(other)
    raw.execute("CREATE TABLE notes (body TEXT)")
    raw.executemany("INSERT INTO notes VALUES (?)", [("x" * 500,)] * 40)  # more than the first page
    raw.commit()
    raw.close()
    before = other.read_bytes()
    with pytest.raises(StudyLogError) as read:
        StudyLog(other, readonly=True)
    assert "not a modlens study log" in str(read.value) and "open it once for writing" not in str(read.value)
    with pytest.raises(StudyLogError, match="not a modlens study log"):  # a writer: nothing added, not even WAL
        StudyLog(other)
    assert other.read_bytes() == before
    assert [r[0] for r in sqlite3.connect(other).execute("SELECT name FROM sqlite_master")] == ["notes"]


def test_a_writer_refuses_another_programs_wal_database_without_checkpointing_its_wal(tmp_path):
    """Another program's WAL database whose -wal was left behind (the program was killed): the writer's
    refusal must leave both files as they were (closing a connection that read it checkpointed the
    -wal into the file and removed it, though the message said nothing was written)."""
    import subprocess
    import sys

    other = tmp_path / "notes.sqlite"
    subprocess.run([sys.executable, "-c", (
        "import os, sqlite3, sys; c = sqlite3.connect(sys.argv[1]); c.execute('PRAGMA journal_mode=WAL');"
        "c.execute('PRAGMA wal_autocheckpoint=0'); c.execute('CREATE TABLE notes (body TEXT)');"
        "c.executemany('INSERT INTO notes VALUES (?)', [('x' * 500,)] * 40); c.commit(); os._exit(0)"),
        str(other)], check=True)
    wal = tmp_path / "notes.sqlite-wal"
    assert wal.stat().st_size > 0  # the killed program's commits are in its -wal only
    before = (other.read_bytes(), wal.read_bytes())
    with pytest.raises(StudyLogError, match="not a modlens study log"):
        StudyLog(other)
    assert (other.read_bytes(), wal.read_bytes()) == before
