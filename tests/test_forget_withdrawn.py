"""A participant who withdraws is told their data will be deleted: `modlens merge --forget-withdrawn LOG`
lists what the researcher's merged log still holds of them (earlier bundles brought it), and `--delete`
deletes it in one transaction, their consent rows staying as the record. A real daemon writes the
participants' log, real bundles are merged, the real command line deletes; every count it prints is
checked against the rows that really went."""
from __future__ import annotations

import re
import shutil
import sqlite3
from pathlib import Path

import pytest

from daemon_helpers import Client, comments_msg, connect, consent_sha256, rating_msg, running_daemon, study
from log_helpers import as_schema, rows
from test_consent_withdrawal import merge_listing
from modlens.analysis.report import report_from_db
from modlens.cli import main as cli_main
from modlens.studylog.records import forget
from modlens.studylog.codec import now_iso
from modlens.studylog.schema import SCHEMA_VERSION
from modlens.studylog.store import StudyLog
from modlens.studylog.tables import TABLES

AGREED = "2025-03-01T10:00:00.000Z"
WITHDRAWN = "2025-03-02T10:00:00.000Z"
TEXT = "You may withdraw at any time; your data will then be deleted."
# variants and normalized forms too: the rows that go with a comment only the withdrawn rater saw
CONFIG = {"consent_text": TEXT, "normalizer": {"enabled": True},
          "perturbation": {"enabled": True, "live_rate": 1000, "budget": 1, "strategies": ["repeat_char", "mixed_case"]}}


async def collect(url: str, sha: str, rater: str, items: list[tuple[str, str]], rate: list[str],
                  page_key: str = "video-1", variants_of: tuple[str, ...] = ()) -> None:
    async with connect(url) as ws:
        c = Client(ws)
        await c.hello(rater, study_id="test", consent_at=AGREED, consent_sha256=sha)
        msg = comments_msg(f"c-{rater}-{page_key}", items, page_key=page_key)
        for item in msg["items"]:
            item["time_shown"] = "2025-02-28T09:00:00Z"
        ack = await c.request(msg, "comments_ok")
        assert ack["type"] == "comments_ok", ack
        for key in variants_of:  # the daemon perturbs a toxic comment: wait for its variants
            await c.until(lambda m, key=key: m["type"] == "variants" and m["key"] == key, timeout=20)
        for key in rate:
            ok = await c.request(rating_msg(f"r-{rater}-{key}", key), "rating_ok")
            assert ok["type"] == "rating_ok", ok


async def withdraw(url: str, rater: str, at: str = WITHDRAWN) -> None:
    async with connect(url) as ws:
        await Client(ws).hello(rater, study_id="test", consent_withdrawn_at=at)


def export_and_merge(db, research, out, capsys) -> str:
    assert cli_main(["export", "--db", str(db), "--bundle", str(out)]) == 0
    capsys.readouterr()
    assert cli_main(["merge", "--out", str(research), str(out)]) == 0
    return capsys.readouterr().out


async def rated_and_merged(tmp_path: Path, capsys) -> tuple[Path, Path]:
    """rater-1 agreed, saw and rated one comment ('k'), and the first bundle is merged: (their log, the merged log)."""
    db, research = tmp_path / "study.sqlite", tmp_path / "merged.sqlite"
    async with running_daemon(tmp_path, study(consent_text=TEXT)) as (url, app):
        await collect(url, consent_sha256(app), "rater-1", [("k", "a comment")], ["k"])
    export_and_merge(db, research, tmp_path / "first.bundle", capsys)
    return db, research


def everything(db) -> dict[str, list[tuple]]:
    """Every row of every table, sorted: what a dry run must leave as it was."""
    return {t.name: sorted(rows(db, f"SELECT * FROM {t.name}"), key=repr) for t in TABLES}


def counts(db) -> dict[str, int]:
    return {t.name: rows(db, f"SELECT count(*) FROM {t.name}")[0][0] for t in TABLES}


def forget_cli(research, capsys, *extra: str) -> str:
    capsys.readouterr()
    assert cli_main(["merge", "--forget-withdrawn", str(research), *extra]) == 0
    return capsys.readouterr().out


def said_counts(line: str) -> dict[str, int]:
    """'... would delete 1 sessions, 2 sightings ...' (or '... deleted ...') -> {table: n}."""
    m = re.search(r"\): (?:would delete|deleted) ([^;]*)", line)
    assert m, line
    listed = m[1]
    return {table: int(n) for n, table in (part.split() for part in listed.split(", "))}


async def test_a_withdrawn_raters_merged_data_is_listed_then_deleted_and_shared_comments_stay(tmp_path, capsys):
    db, research = tmp_path / "study.sqlite", tmp_path / "merged.sqlite"
    async with running_daemon(tmp_path, study(**CONFIG)) as (url, app):
        sha = consent_sha256(app)
        # a page rater-2 visited first: what it and its comment keep is rater-2's, and stays
        await collect(url, sha, "rater-2", [("early", "rater two was here first")], [], page_key="video-3")
        await collect(url, sha, "rater-1", [("early", "rater two was here first")], [], page_key="video-3")
        await collect(url, sha, "rater-1", [("mine", "only rater one saw this, you stupid idiot"),
                                            ("shared", "both saw it")], ["mine", "shared"], variants_of=("mine",))
        await collect(url, sha, "rater-1", [("alone", "on a page only rater one visited")], [], page_key="video-2")
        await collect(url, sha, "rater-2", [("shared", "both saw it")], ["shared"])
    export_and_merge(db, research, tmp_path / "first.bundle", capsys)
    # a second export before the withdrawal, which reaches the researcher late
    assert cli_main(["export", "--db", str(db), "--bundle", str(tmp_path / "late.bundle")]) == 0
    async with running_daemon(tmp_path, study(**CONFIG)) as (url, _app):
        await withdraw(url, "rater-1")
    said = export_and_merge(db, research, tmp_path / "second.bundle", capsys)
    assert "modlens merge --forget-withdrawn LOG --delete" in said, said
    assert f"{research} holds data of 1 rater who withdrew consent (rater-1: 3 sessions, 2 ratings)" in said, said

    # the dry run: one line for rater-1, and the log exactly as it was
    before = everything(research)
    before_counts = counts(research)
    raw = research.read_bytes()
    out = forget_cli(research, capsys)
    assert unchanged(research, raw), out
    line = next(x for x in out.splitlines() if x.startswith("rater rater-1 "))
    assert f"(study 'test') withdrew consent ({WITHDRAWN}): would delete " in line, out
    assert "dry run, nothing deleted" in out and "--delete" in out, out
    assert everything(research) == before
    listed = said_counts(line)
    # their own rows: 2 sessions, 2 ratings and their values, 3 sightings, their raters row
    assert {t: listed[t] for t in ("sessions", "ratings", "rating_values", "sightings", "raters")} == {
        "sessions": 3, "ratings": 2, "rating_values": 8, "sightings": 4, "raters": 1}, line
    assert "would clear rater-1's visit from 1 comments and 1 pages" in line, line
    # the comments only rater-1 saw, and the page only rater-1 visited; 'shared' and video-1 stay
    assert (listed["comments"], listed["pages"]) == (2, 1), line
    assert listed["variants"] > 0 and listed["scores"] > 0 and listed["texts"] > 0, line

    # the deletion: exactly the rows the dry run listed, per table
    out = forget_cli(research, capsys, "--delete")
    line = next(x for x in out.splitlines() if x.startswith("rater rater-1 "))
    assert said_counts(line) == listed, (line, listed)
    after = counts(research)
    assert {t: before_counts[t] - after[t] for t in after if before_counts[t] != after[t]} == listed
    assert "their consent rows stay" in out, out
    # and it says what else still names them, as it does: the bundles' record of the raters each carried
    # (what ties a rater to the key that signed their bundles, so no one else's key may send theirs)
    assert "the merged bundles' record of the raters each carried still names them" in out, out
    assert rows(research, "SELECT count(*) FROM bundles, json_each(rater_ids_json) j WHERE j.value = 'rater-1'") \
        == [(2,)]

    # nothing of rater-1 is left but their consent rows (and the bundles' record of who they carried)
    assert rows(research, "SELECT count(*) FROM sessions WHERE rater_id = 'rater-1'") == [(0,)]
    assert rows(research, "SELECT count(*) FROM ratings WHERE rater_id = 'rater-1'") == [(0,)]
    assert rows(research, "SELECT count(*) FROM raters WHERE rater_id = 'rater-1'") == [(0,)]
    assert rows(research, "SELECT rater_id, consented_at, withdrawn_at FROM consents ORDER BY rater_id") == [
        ("rater-1", AGREED, WITHDRAWN), ("rater-2", AGREED, None)]
    texts = {t for t, in rows(research, "SELECT text FROM texts")}
    assert not any("only rater one" in t.lower() or "rater one visited" in t.lower() for t in texts), texts
    assert rows(research, "SELECT comment_key FROM comments ORDER BY comment_key") == [("early",), ("shared",)]
    assert rows(research, "SELECT page_key FROM pages ORDER BY page_key") == [("video-1",), ("video-3",)]
    # rater-2's data is whole: their sighting and rating of the shared comment, its text, its scores
    assert rows(research, "SELECT r.rater_id, c.comment_key FROM ratings r JOIN comments c USING (comment_id)") == [
        ("rater-2", "shared")]
    assert rows(research, "SELECT count(*) FROM sightings") == [(2,)]
    # what the shared comment and its page kept of rater-1's visit, which came first, is gone: first seen
    # when rater-2 saw them, the time shown and the page's address and title unknown (as a bundle leaves them)
    [(rater_two_saw,)] = rows(research, "SELECT seen_at FROM sightings JOIN comments USING (comment_id) "
                                        "WHERE comment_key = 'shared'")
    assert rows(research, "SELECT first_seen, time_shown FROM comments WHERE comment_key = 'shared'") == [
        (rater_two_saw, None)]
    assert rows(research, "SELECT first_seen, url, title FROM pages WHERE page_key = 'video-1'") == [
        (rater_two_saw, None, None)]
    assert [x for table in ("comments", "pages") for x in before[table] if "video-3" in repr(x) or "early" in repr(x)] \
        == [x for table in ("comments", "pages") for x in everything(research)[table]
            if "video-3" in repr(x) or "early" in repr(x)]
    assert "cleared rater-1's visit from 1 comments and 1 pages" in line, line
    assert rows(research, "SELECT count(*) FROM scores s JOIN comments c USING (text_id)")[0][0] > 0
    # no row points at a deleted one, no provenance names one
    con = sqlite3.connect(research)
    try:
        assert con.execute("PRAGMA foreign_key_check").fetchall() == []
    finally:
        con.close()
    assert rows(research, "SELECT count(*) FROM row_sources WHERE table_name = 'ratings' AND row_key NOT IN "
                          "(SELECT CAST(rating_id AS TEXT) FROM ratings)") == [(0,)]
    assert rows(research, "SELECT count(*) FROM row_sources WHERE table_name = 'comments' AND row_key NOT IN "
                          "(SELECT CAST(comment_id AS TEXT) FROM comments)") == [(0,)]
    assert rows(research, "SELECT count(*) FROM row_sources WHERE table_name = 'sessions' AND row_key NOT IN "
                          "(SELECT session_id FROM sessions)") == [(0,)]

    # done once: again, nothing is left to delete, and it says so
    again = forget_cli(research, capsys, "--delete")
    assert f"rater rater-1 (study 'test') withdrew consent ({WITHDRAWN}): the log holds none of their sessions, ratings or " \
        "sightings: nothing to delete" in again
    assert "deleted 0 rows" in again, again
    assert counts(research) == after
    # the listing still marks the withdrawal, and says the first bundle's rows of theirs were deleted, where
    # the second, which carried only their withdrawal, held none; rater-2's are as they were
    listed = merge_listing(research, capsys, with_ids=False)
    assert listed[("1", "rater-1")] == f"deleted 0 withdrew {WITHDRAWN}", listed
    assert listed[("2", "rater-1")] == f"+0/0 0 withdrew {WITHDRAWN}", listed
    assert listed[("1", "rater-2")].startswith("+1/1 1 "), listed
    assert "1 withdrew" in listed["total"], listed

    # the late bundle brings their data back: merge says so, and the deletion finds it again
    assert cli_main(["merge", "--out", str(research), str(tmp_path / "late.bundle")]) == 0
    said = capsys.readouterr().out
    assert f"{research} holds data of 1 rater who withdrew consent (rater-1: 3 sessions, 2 ratings)" in said, said
    listed = merge_listing(research, capsys, with_ids=False)
    assert listed[("1", "rater-1")] == f"deleted 2 withdrew {WITHDRAWN}", listed  # their rows are back, from the late one
    assert listed[("3", "rater-1")] == f"+2/2 2 withdrew {WITHDRAWN}", listed
    again = forget_cli(research, capsys, "--delete")
    assert said_counts(next(x for x in again.splitlines() if x.startswith("rater rater-1 ")))["ratings"] == 2, again
    assert rows(research, "SELECT count(*) FROM ratings WHERE rater_id = 'rater-1'") == [(0,)]
    listed = merge_listing(research, capsys, with_ids=False)
    assert [listed[(b, "rater-1")].split()[0] for b in "123"] == ["deleted", "+0/0", "deleted"], listed
    # a merge that brings none of a withdrawn rater's data, into a log that holds none, says nothing of it
    said = export_and_merge(db, research, tmp_path / "third.bundle", capsys)
    assert "merged " in said and "holds data of" not in said, said


async def test_a_comment_two_withdrawn_raters_saw_goes_with_the_second(tmp_path, capsys):
    db, research = tmp_path / "study.sqlite", tmp_path / "merged.sqlite"
    # the study's gold comment, which rater-1 rated in the calibration round: the study's, it stays
    cfg = study(consent_text=TEXT, gold=[{"key": "g1", "text": "Have a lovely day.", "expected": {"toxicity": "toxic"}}])
    async with running_daemon(tmp_path, cfg) as (url, app):
        sha = consent_sha256(app)
        await collect(url, sha, "rater-1", [("both", "two withdrawn raters saw this")], ["both"])
        await collect(url, sha, "rater-2", [("both", "two withdrawn raters saw this")], [])
        async with connect(url) as ws:
            c = Client(ws)
            await c.hello("rater-1", study_id="test", consent_at=AGREED, consent_sha256=sha)
            ok = await c.request(rating_msg("r-gold", "g1", platform="study"), "rating_ok")
            assert ok["type"] == "rating_ok", ok
    export_and_merge(db, research, tmp_path / "first.bundle", capsys)
    assert rows(research, "SELECT rater_id FROM ratings r JOIN comments c USING (comment_id) "
                          "WHERE c.comment_key = 'g1'") == [("rater-1",)]
    async with running_daemon(tmp_path, study(consent_text=TEXT)) as (url, _app):
        await withdraw(url, "rater-1")
        await withdraw(url, "rater-2")
    export_and_merge(db, research, tmp_path / "second.bundle", capsys)
    with StudyLog(research, readonly=True) as log:  # what merge counts of the raters a bundle names: theirs alone
        every = forget.held(log.conn)
        assert [r["rater_id"] for r in every] == ["rater-1", "rater-2"] and every[0]["ratings"] == 2
        assert forget.held(log.conn, [("test", "rater-1"), ("other", "rater-2")]) == every[:1]
    out = forget_cli(research, capsys, "--delete")
    lines = {x.split()[1]: said_counts(x) for x in out.splitlines() if x.startswith("rater ")}
    assert "comments" not in lines["rater-1"] and lines["rater-2"]["comments"] == 1, lines
    # left: the study's own comments (its gold and anchors) and their texts alone
    assert ("study", "g1") in rows(research, "SELECT platform, comment_key FROM comments")
    assert rows(research, "SELECT count(*) FROM comments WHERE platform <> 'study'") == [(0,)]
    assert rows(research, "SELECT count(*) FROM texts WHERE text_id NOT IN (SELECT text_id FROM comments)") == [(0,)]
    assert rows(research, "SELECT count(*) FROM ratings") == [(0,)]
    assert rows(research, "SELECT count(*) FROM consents") == [(2,)]


async def test_a_merged_log_with_nothing_to_delete_says_why_and_stays_as_it_was(tmp_path, capsys):
    db, research = await rated_and_merged(tmp_path, capsys)
    # no one withdrew
    raw = research.read_bytes()
    out = forget_cli(research, capsys)
    assert out == f"{research}: no participant in the log withdrew consent: nothing to delete\n", out
    assert unchanged(research, raw)
    # rater-1 withdrew, and what the log held of them was deleted: the dry run finds nothing left
    async with running_daemon(tmp_path, study(consent_text=TEXT)) as (url, _app):
        await withdraw(url, "rater-1")
    export_and_merge(db, research, tmp_path / "second.bundle", capsys)
    forget_cli(research, capsys, "--delete")
    raw = research.read_bytes()
    out = forget_cli(research, capsys)
    assert out.splitlines() == [
        f"rater rater-1 (study 'test') withdrew consent ({WITHDRAWN}): the log holds none of their sessions, "
        "ratings or sightings: nothing to delete",
        f"{research}: nothing to delete: the log holds none of the sessions, ratings or sightings of the 1 raters "
        "who withdrew"], out
    assert unchanged(research, raw)


def test_a_missing_file_another_programs_database_or_an_empty_file_is_refused_untouched(tmp_path, capsys):
    missing = tmp_path / "missing.sqlite"
    assert cli_main(["merge", "--forget-withdrawn", str(missing)]) == 3  # not found
    assert not missing.exists()  # and not created by asking
    # another program's database, an empty file: refused, and nothing written to either
    other, empty = tmp_path / "other.sqlite", tmp_path / "empty.sqlite"
    con = sqlite3.connect(other)
    con.execute("CREATE TABLE notes (x)")
    con.commit()
    con.close()
    empty.write_bytes(b"")
    newer, garbage = tmp_path / "newer.sqlite", tmp_path / "garbage.sqlite"  # a newer modlens's log; not SQLite
    con = sqlite3.connect(newer)
    con.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    con.close()
    garbage.write_bytes(b"not a database at all" * 100)
    for path, said in ((other, "not a modlens study log"), (empty, "is not a merged study log"),
                       (newer, "newer than this modlens reads"), (garbage, "not a modlens study log")):
        raw = path.read_bytes()
        capsys.readouterr()
        assert cli_main(["merge", "--forget-withdrawn", str(path), "--delete"]) != 0
        assert said in capsys.readouterr().err
        assert unchanged(path, raw)


def test_delete_without_forget_withdrawn_is_a_usage_error(tmp_path, capsys):
    assert cli_main(["merge", "--delete", "--out", str(tmp_path / "x.sqlite"), "a.bundle"]) == 2
    assert "--delete goes with --forget-withdrawn" in capsys.readouterr().err
    assert not (tmp_path / "x.sqlite").exists()


async def test_a_participants_own_log_is_refused(tmp_path, capsys):
    async with running_daemon(tmp_path, study(consent_text=TEXT)) as (url, app):
        await collect(url, consent_sha256(app), "rater-1", [("k", "a comment")], ["k"])
        await withdraw(url, "rater-1")
    db = tmp_path / "study.sqlite"
    before = counts(db)
    capsys.readouterr()
    assert cli_main(["merge", "--forget-withdrawn", str(db), "--delete"]) == 2
    assert "is not a merged study log" in capsys.readouterr().err
    assert counts(db) == before
    # refused before anything opens it for writing: an older one is not upgraded on the way
    as_schema(db, SCHEMA_VERSION - 1)
    raw = db.read_bytes()
    assert cli_main(["merge", "--forget-withdrawn", str(db), "--delete"]) == 2
    assert "is not a merged study log" in capsys.readouterr().err
    assert unchanged(db, raw)


def test_every_reference_to_a_shared_row_says_whether_it_keeps_it(monkeypatch):
    """A table added later that names a comment, page, media or text must be classified, else a
    deletion would leave it pointing nowhere or delete a row someone else's data needs."""
    forget._check()
    monkeypatch.delitem(forget.REFERENCES, ("gold_labels", "comment_id"))
    with pytest.raises(RuntimeError, match="gold_labels"):
        forget._check()


def unchanged(db, before: bytes) -> bool:
    """The log's file holds `before`, and nothing waits beside it to be written into it: a -wal, if a
    reader left one (as every read-only open of a WAL log does), holds no frame."""
    wal = db.with_name(db.name + "-wal")
    return db.read_bytes() == before and (not wal.exists() or wal.stat().st_size == 0)


async def test_the_dry_run_leaves_an_older_log_as_it_was(tmp_path, capsys):
    """The dry run changes nothing, an older log's schema included: it counts on a copy (migrated as the
    deletion would migrate the log), so what it lists is what `--delete` deletes from the upgraded log."""
    db, research = await rated_and_merged(tmp_path, capsys)
    as_schema(research, SCHEMA_VERSION - 1)  # as the researcher's older modlens left it
    before = research.read_bytes()
    assert rows(research, "PRAGMA user_version") == [(SCHEMA_VERSION - 1,)]
    out = forget_cli(research, capsys)
    assert unchanged(research, before), out
    assert f"schema {SCHEMA_VERSION - 1}, left as it is" in out, out
    # what the deletion then says of that log, on a copy: the same raters, the same rows
    copy = tmp_path / "copy.sqlite"
    shutil.copy(research, copy)
    deleted = forget_cli(copy, capsys, "--delete")
    assert rows(copy, "PRAGMA user_version") == [(SCHEMA_VERSION,)]
    assert f"schema {SCHEMA_VERSION - 1}, upgraded to {SCHEMA_VERSION} before the deletion" in deleted, deleted

    def said(text: str) -> list[str]:
        return [x.replace("would delete", "deleted").replace("would clear", "cleared") for x in text.splitlines()
                if x.startswith("rater ")]
    assert said(out) == said(deleted), (out, deleted)
    assert ("nothing to delete" in out) == ("deleted 0 rows" in deleted or "nothing to delete" in deleted)


async def test_a_comment_others_saw_only_edited_keeps_the_version_the_withdrawn_rater_was_sent_and_says_so(
        tmp_path, capsys):
    """The log keeps one text per comment, the first one sent (with its first_seen and time shown). When
    that was the withdrawn rater's and the others were sent only an edited version, the comment stays
    (their data needs it) as the withdrawn rater was sent it: the deletion must say so, not that their
    visit is gone from every comment that stays."""
    db, research = tmp_path / "study.sqlite", tmp_path / "merged.sqlite"
    async with running_daemon(tmp_path, study(consent_text=TEXT)) as (url, app):
        sha = consent_sha256(app)
        await collect(url, sha, "rater-1", [("c", "the first version rater one saw")], [])
        await collect(url, sha, "rater-2", [("c", "the edited version rater two saw")], ["c"])
    export_and_merge(db, research, tmp_path / "first.bundle", capsys)
    async with running_daemon(tmp_path, study(consent_text=TEXT)) as (url, _app):
        await withdraw(url, "rater-1")
    export_and_merge(db, research, tmp_path / "second.bundle", capsys)
    for extra in ((), ("--delete",)):
        out = forget_cli(research, capsys, *extra)
        line = next(x for x in out.splitlines() if x.startswith("rater rater-1 "))
        kept = "kept" if extra else "would keep"
        assert (f"; {kept} 1 comments that stay as rater-1's sessions were sent them (text, first seen, time "
                "shown), since no one left was sent that version") in line, line
    # as it says: the comment is rater-2's rating's, with the text only rater-1 was sent
    assert rows(research, "SELECT t.text FROM comments c JOIN texts t USING (text_id)") == [
        ("the first version rater one saw",)]
    assert rows(research, "SELECT count(*) FROM ratings WHERE rater_id = 'rater-2'") == [(1,)]
    again = forget_cli(research, capsys)
    assert "the log holds no rows of theirs" not in again, again
    assert "holds none of their sessions, ratings or sightings" in again, again


async def test_merge_says_a_withdrawn_raters_rows_the_deletion_would_delete_beyond_sessions_and_ratings(
        tmp_path, capsys):
    """What merge says the log holds of a rater who withdrew is what `--forget-withdrawn` deletes of
    theirs: a `raters` row or a task review alone, with no session or rating left, is held data too."""
    db, research = tmp_path / "study.sqlite", tmp_path / "merged.sqlite"
    async with running_daemon(tmp_path, study(consent_text=TEXT)) as (url, app):
        await collect(url, consent_sha256(app), "rater-1", [("k", "a comment")], [])
    export_and_merge(db, research, tmp_path / "first.bundle", capsys)
    # their sessions gone by other hands (the comment stays, no one's sighting): their raters row is left
    con = sqlite3.connect(research)
    try:
        con.execute("PRAGMA foreign_keys = ON")
        con.execute("DELETE FROM sightings WHERE session_id IN (SELECT session_id FROM sessions "
                    "WHERE rater_id = 'rater-1')")
        con.execute("DELETE FROM sessions WHERE rater_id = 'rater-1'")
        con.commit()
    finally:
        con.close()
    async with running_daemon(tmp_path, study(consent_text=TEXT)) as (url, _app):
        await withdraw(url, "rater-1")
    said = export_and_merge(db, research, tmp_path / "second.bundle", capsys)
    assert f"rater rater-1 withdrew consent ({WITHDRAWN}): this log still holds, from earlier bundles, a raters row " \
           "of theirs" in said, said
    assert f"{research} holds data of 1 rater who withdrew consent (rater-1: 0 sessions, 0 ratings, a raters row)" \
        in said, said
    # a task review of their work, written on this log (`modlens rate`)
    with StudyLog(research) as log:
        log.put_rater_reviews([{"study_id": "test", "rater_id": "rater-1", "task": "t01", "source": "protocol",
                                "decision": "accept", "reason": "all rated", "n_items": 1, "missed": 0,
                                "inconsistent_gold": 0, "wrong_gold": 0, "inconsistent": 0, "comment_ids": []}])
    said = export_and_merge(db, research, tmp_path / "third.bundle", capsys)
    assert f"rater rater-1 withdrew consent ({WITHDRAWN}): this log still holds 1 task review of theirs" in said, said
    assert "(rater-1: 0 sessions, 0 ratings, 1 task reviews)" in said, said
    out = forget_cli(research, capsys, "--delete")
    line = next(x for x in out.splitlines() if x.startswith("rater rater-1 "))
    assert {t: n for t, n in said_counts(line).items() if t != "row_sources"} == {"rater_reviews": 1, "raters": 1}, line
    said = export_and_merge(db, research, tmp_path / "fourth.bundle", capsys)
    assert "this log holds nothing of theirs" in said and "holds data of" not in said, said


async def test_a_comment_and_page_kept_only_by_another_raters_rating_keep_nothing_of_the_withdrawn_visit(
        tmp_path, capsys):
    """rater-2 rated a comment no remaining session was sent (only rater-1's sighting recorded it): the
    comment stays, their rating needs it, with its text, the subject of that rating; but its time shown
    and first seen, and its page's address, title and first seen, were rater-1's visit, and go."""
    db, research = tmp_path / "study.sqlite", tmp_path / "merged.sqlite"
    async with running_daemon(tmp_path, study(consent_text=TEXT)) as (url, app):
        sha = consent_sha256(app)
        await collect(url, sha, "rater-1", [("c", "a comment rater one saw")], [], page_key="video-9")
        async with connect(url) as ws:
            c = Client(ws)
            await c.hello("rater-2", study_id="test", consent_at=AGREED, consent_sha256=sha)
            ok = await c.request(rating_msg("r-rater-2-c", "c"), "rating_ok")
            assert ok["type"] == "rating_ok", ok
    export_and_merge(db, research, tmp_path / "first.bundle", capsys)
    [(rater_one_saw, url_before)] = rows(research, "SELECT c.first_seen, p.url FROM comments c JOIN pages p "
                                                    "USING (page_id) WHERE c.comment_key = 'c'")
    assert url_before and "video-9" in url_before
    async with running_daemon(tmp_path, study(consent_text=TEXT)) as (url, _app):
        await withdraw(url, "rater-1")
    export_and_merge(db, research, tmp_path / "second.bundle", capsys)
    out = forget_cli(research, capsys, "--delete")
    line = next(x for x in out.splitlines() if x.startswith("rater rater-1 "))
    assert "cleared rater-1's visit from 1 comments and 1 pages" in line, line
    assert "kept" not in line, line  # nothing of their visit is kept
    [(rated_at,)] = rows(research, "SELECT created_at FROM ratings WHERE rater_id = 'rater-2'")
    assert rows(research, "SELECT c.first_seen, c.time_shown, t.text FROM comments c JOIN texts t USING (text_id)") \
        == [(rated_at, None, "a comment rater one saw")]
    assert rows(research, "SELECT page_key, url, title, first_seen FROM pages WHERE page_key = 'video-9'") == [
        ("video-9", None, None, rated_at)]
    assert rated_at != rater_one_saw


async def agree_again_and_rate(url: str, sha: str, rater: str, key: str, text: str) -> str:
    """`rater` agrees again now (the real clock: after their withdrawal) and rates a comment; the consent's time."""
    again = now_iso()
    async with connect(url) as ws:
        c = Client(ws)
        await c.hello(rater, study_id="test", consent_at=again, consent_sha256=sha)
        assert (await c.request(comments_msg(f"c-{rater}-again", [(key, text)]), "comments_ok"))["type"] == "comments_ok"
        ok = await c.request(rating_msg(f"r-{rater}-{key}", key), "rating_ok")
        assert ok["type"] == "rating_ok", ok
    return again


async def test_a_consent_given_again_does_not_bring_back_what_the_deletion_deleted(tmp_path, capsys):
    """A participant withdraws, the researcher deletes their data, they agree again: the consent counts from
    then on. The next bundle carries what they recorded since and nothing from before the new consent, merge
    adds only that, and `--list` says the first bundle's rows of theirs were deleted and when they agreed
    again. Times from the real clock, as the daemon stamps the data: a withdrawal after it, a consent after that."""
    db, research = await rated_and_merged(tmp_path, capsys)
    withdrawn = now_iso()
    async with running_daemon(tmp_path, study(consent_text=TEXT)) as (url, _app):
        await withdraw(url, "rater-1", withdrawn)
    export_and_merge(db, research, tmp_path / "second.bundle", capsys)
    forget_cli(research, capsys, "--delete")
    assert rows(research, "SELECT count(*) FROM ratings") == [(0,)]
    async with running_daemon(tmp_path, study(consent_text=TEXT)) as (url, app):
        again = await agree_again_and_rate(url, consent_sha256(app), "rater-1", "k2", "rated after agreeing again")
    said = export_and_merge(db, research, tmp_path / "third.bundle", capsys)
    assert "+1/1 ratings" in said and "withdrew" not in said, said
    assert rows(research, "SELECT c.comment_key FROM ratings r JOIN comments c USING (comment_id) "
                          "WHERE r.rater_id = 'rater-1'") == [("k2",)]
    assert rows(research, "SELECT count(*) FROM comments WHERE comment_key = 'k'") == [(0,)]
    listed = merge_listing(research, capsys, with_ids=False)
    assert listed[("1", "rater-1")].startswith("deleted "), listed
    assert listed[("3", "rater-1")].startswith(f"+1/1 1 again {again}"), listed
    assert "1 raters (1 agreed again after withdrawing: from then on)" in listed["total"], listed
    # nothing left of theirs that the withdrawal covers
    out = forget_cli(research, capsys)
    assert (f"rater rater-1 (study 'test') withdrew consent ({withdrawn}) and agreed again ({again}), which counts "
            "from then on: the log holds none of their sessions, ratings or sightings of what they recorded "
            "before agreeing again: nothing to delete") in out, out


async def test_a_consent_given_again_before_the_deletion_leaves_what_came_before_it_to_delete(tmp_path, capsys):
    """Agreeing again before the researcher deleted anything: merge still says what the log holds from before
    the withdrawal, reports leave it out, and `--delete` deletes it, their `raters` row and what they recorded
    since staying."""
    db, research = await rated_and_merged(tmp_path, capsys)
    withdrawn = now_iso()
    async with running_daemon(tmp_path, study(consent_text=TEXT)) as (url, app):
        await withdraw(url, "rater-1", withdrawn)
        again = await agree_again_and_rate(url, consent_sha256(app), "rater-1", "k2", "rated after agreeing again")
    said = export_and_merge(db, research, tmp_path / "second.bundle", capsys)
    assert "+1/1 ratings" in said, said
    assert (f"holds data of 1 rater who withdrew consent (rater-1: 1 sessions, 1 ratings from before agreeing "
            f"again ({again}))") in said, said
    assert report_from_db(research)["withdrawn"] == {"raters": 1, "studies": 1, "ratings": 1, "agreed_again": 1,
                                                        "still_withdrawn": 0}
    out = forget_cli(research, capsys, "--delete")
    line = next(x for x in out.splitlines() if x.startswith("rater rater-1 "))
    assert line.startswith(f"rater rater-1 (study 'test') withdrew consent ({withdrawn}) and agreed again ({again}), "
                           "which counts from then on: deleted of what they recorded before agreeing again: "
                           "1 sessions, 1 ratings, "), line
    assert rows(research, "SELECT c.comment_key FROM ratings r JOIN comments c USING (comment_id) "
                          "WHERE r.rater_id = 'rater-1'") == [("k2",)]
    assert rows(research, "SELECT count(*) FROM raters WHERE rater_id = 'rater-1'") == [(1,)]
    # the session since agreeing again alone: the one whose hello said the withdrawal came while withdrawn,
    # before the new consent, which it does not cover (it never left the participant's log)
    assert rows(research, "SELECT count(*) FROM sessions WHERE rater_id = 'rater-1' AND julianday(started_at) > "
                          f"julianday('{withdrawn}')") == [(1,)]
    assert rows(research, "SELECT count(*) FROM sessions WHERE rater_id = 'rater-1'") == [(1,)]
    report = report_from_db(research)
    assert (report["withdrawn"], report["counts"]["ratings"]) == ({"raters": 0, "studies": 0, "ratings": 0, "agreed_again": 0,
                                                                 "still_withdrawn": 0}, 1)
    listed = merge_listing(research, capsys, with_ids=False)
    assert listed[("1", "rater-1")].startswith("deleted "), listed
    assert listed[("2", "rater-1")].startswith(f"+1/1 1 again {again}"), listed


async def test_a_withdrawal_merged_after_the_consent_given_again_does_not_say_the_log_holds_nothing(tmp_path, capsys):
    """The bundle exported while the rater had withdrawn is merged after the one exported once they agreed
    again: the log holds what they recorded since, so merge must not say of that rater 'this log holds
    nothing of theirs' (nor ask for a deletion: the withdrawal covers nothing the log holds)."""
    db, research = tmp_path / "study.sqlite", tmp_path / "merged.sqlite"
    async with running_daemon(tmp_path, study(consent_text=TEXT)) as (url, app):
        await collect(url, consent_sha256(app), "rater-1", [("k", "a comment")], ["k"])
    async with running_daemon(tmp_path, study(consent_text=TEXT)) as (url, _app):
        await withdraw(url, "rater-1", now_iso())
    withdrawal = tmp_path / "withdrawal.bundle"
    assert cli_main(["export", "--db", str(db), "--bundle", str(withdrawal)]) == 0
    async with running_daemon(tmp_path, study(consent_text=TEXT)) as (url, app):
        await agree_again_and_rate(url, consent_sha256(app), "rater-1", "k2", "rated after agreeing again")
    export_and_merge(db, research, tmp_path / "again.bundle", capsys)
    capsys.readouterr()
    assert cli_main(["merge", "--out", str(research), str(withdrawal)]) == 0
    said = capsys.readouterr().out
    assert "rater rater-1 withdrew consent" not in said and "holds data of" not in said, said
    assert rows(research, "SELECT c.comment_key FROM ratings r JOIN comments c USING (comment_id) "
                          "WHERE r.rater_id = 'rater-1'") == [("k2",)]
