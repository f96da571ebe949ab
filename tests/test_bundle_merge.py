"""Participant bundles and the researcher's merge: real study logs written through the real
writer (`LogWriter`), real bundle files, the real `modlens` command line; no mocks."""
from __future__ import annotations

import asyncio
import io
import json
import sqlite3
import zipfile
from pathlib import Path

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from log_helpers import add_sighting

from modlens.cli import main as cli_main
from modlens.study import load
from modlens.study import folder, join, pack
from modlens.exchange import bundle as bundle_mod
from modlens.studylog import migrate, schema
from modlens.exchange.bundle import read_bundle, write_archive, write_bundle_file
from modlens.exchange.merge import merge_files
from modlens.studylog.store import LogWriter, StudyLog

SHARED = [f"c{i}" for i in range(10)]
LEVELS = ["not toxic", "hard to say", "toxic"]


def make_pack(tmp_path: Path, study_id: str = "pilot") -> Path:
    root = tmp_path / f"{study_id}-folder"
    folder.init_folder(root, study_id)
    out = tmp_path / f"{study_id}.modlens"
    pack.write(folder.load_folder(root), out)
    return out


async def _write_participant(db: Path, study, rater: int, *, edited: bool = False, version: str = "h1",
                             score_shift: float = 0.0) -> None:
    """What the daemon writes for one participant: study, detector, a consented extension session
    (comments, sightings, scores, ratings) and an unconsented feed session that must stay behind.
    `score_shift`: added to every score (the same detector version scoring the same texts otherwise)."""
    writer = LogWriter(db)
    await writer.start()
    rid = f"rater-{rater}"

    def fill(lg: StudyLog) -> None:
        lg.ensure_study(study.study_id, study.title, study.model_dump(mode="json"))
        det = lg.ensure_detector("minilm-toxicity", version, "toxic", 0.5, {})
        lg.ensure_rater(study.study_id, rid, "2025-05-01T10:00:00Z")
        lg.start_session(f"s-{rater}", study.study_id, rid, "modlens-extension", "0.1", 1)
        page = lg.ensure_page("youtube", "vid-1", "https://www.youtube.com/watch?v=vid-1", "Video")
        keys = SHARED + [f"own-{rater}"]
        for i, key in enumerate(keys):
            text = f"comment {key}" + (" (edited)" if edited and key == "c9" else "")
            cid = lg.add_comment("youtube", key, page, text, author_hash=f"h{i}")
            add_sighting(lg, cid, f"s-{rater}")
            lg.add_score(text, det, {"toxic": i / 10 + score_shift}, i / 10 + score_shift, 3.0, None)
            level = LEVELS[(i + (rater == 2 and i % 3 == 0)) % 3]  # rater 2 disagrees now and then
            lg.add_rating(study.study_id, rid, f"r-{key}", f"s-{rater}", cid, {"toxicity": level}, None, None, False, 900)
        lg.ensure_rater(study.study_id, "modlens-feed", None)  # no consent: nothing of it leaves
        lg.start_session(f"feed-{rater}", study.study_id, "modlens-feed", "modlens-feed", "0.1", 1)
        cid = lg.add_comment("youtube", f"feed-only-{rater}", page, "seen without consent")
        add_sighting(lg, cid, f"feed-{rater}")

    await writer.submit(fill)
    await writer.stop()


def participant(tmp_path: Path, monkeypatch, study_pack: Path, rater: int, **kw) -> Path:
    """One participant's machine: its own modlens home, `modlens join`, a study log, a bundle."""
    home = tmp_path / f"home-{rater}"
    home.mkdir(exist_ok=True)
    monkeypatch.setenv("MODLENS_HOME", str(home))
    assert cli_main(["join", str(study_pack), "--allow-unsigned"]) == 0
    study = load(join.joined_study_file())  # what `modlens serve` runs with after the join
    db = home / "study.sqlite"
    asyncio.run(_write_participant(db, study, rater, **kw))
    out = tmp_path / f"rater-{rater}.bundle"
    assert cli_main(["export", "--bundle", str(out)]) == 0
    return out


@pytest.fixture
def bundles(tmp_path, monkeypatch):
    study_pack = make_pack(tmp_path)
    made = [participant(tmp_path, monkeypatch, study_pack, r, edited=(r == 1), version="h2" if r == 2 else "h1")
            for r in range(3)]
    return study_pack, made


def counts(db: Path) -> dict[str, int]:
    with StudyLog(db, readonly=True) as log:
        return log.counts()


def test_bundle_holds_only_consented_rows_and_show_writes_nothing(bundles, tmp_path, capsys):
    _pack, (first, *_rest) = bundles
    b = read_bundle(first)
    m = b.manifest
    assert m["rater_ids"] == ["rater-0"] and m["consent"] == {"rater-0": "2025-05-01T10:00:00Z"}
    assert m["schema_version"] == schema.SCHEMA_VERSION and m["study_id"] == "pilot"
    comments = b.table("comments").column("comment_key").to_pylist()
    assert sorted(comments) == sorted(SHARED + ["own-0"]), "the feed session had no consent"
    assert b.table("sessions").column("session_id").to_pylist() == ["s-0"]
    assert m["tables"]["ratings"]["rows"] == 11 and m["tables"]["scores"]["rows"] == 11
    b.close()
    shown = tmp_path / "shown.bundle"
    assert cli_main(["export", "--db", str(tmp_path / "home-0" / "study.sqlite"), "--bundle", str(shown), "--show"]) == 0
    out = capsys.readouterr().out
    assert not shown.exists() and "comments: 11 rows; columns: comment_id, platform, comment_key" in out
    assert "rater-0 (consent 2025-05-01T10:00:00Z)" in out and "feed-only" not in out


def test_merge_dedups_keeps_raters_and_versions_records_provenance_and_is_idempotent(bundles, tmp_path, capsys,
                                                                                     monkeypatch):
    _pack, made = bundles
    merged = tmp_path / "study.sqlite"
    assert cli_main(["merge", "--out", str(merged), *map(str, made)]) == 0
    after = counts(merged)
    # 10 shared + 3 own + rater 1's edited c9 kept apart under its own key
    assert after["comments"] == 14 and after["ratings"] == 33 and after["raters"] == 3
    assert after["detectors"] == 2  # h1 and h2: scores are kept per detector version
    with StudyLog(merged, readonly=True) as log:
        keys = {r[0] for r in log.conn.execute("SELECT comment_key FROM comments")}
        assert any(k.startswith("c9#") for k in keys) and not any(k.startswith("feed-only") for k in keys)
        per_version = dict(log.conn.execute("SELECT d.version, count(*) FROM scores JOIN detectors d USING (detector_id) "
                                            "GROUP BY d.version").fetchall())
        assert per_version == {"h1": 13, "h2": 11}  # rater 1 adds its own and the edited c9
        cid = log.conn.execute("SELECT comment_id FROM comments WHERE comment_key = 'c0'").fetchone()[0]
        sources = log.conn.execute("SELECT bundle_id, added FROM row_sources WHERE table_name = 'comments' "
                                   "AND row_key = ? ORDER BY bundle_id", (str(cid),)).fetchall()
        assert sources == [(1, 1), (2, 0), (3, 0)]
        assert log.conn.execute("SELECT count(*) FROM bundles").fetchone()[0] == 3
    capsys.readouterr()
    # the same bundles again, and a fresh export of participant 0 (new checksum, same rows): nothing added
    again = tmp_path / "again.bundle"
    monkeypatch.setenv("MODLENS_HOME", str(tmp_path / "home-0"))  # participant 0's machine: its bundle key
    write_bundle_file(tmp_path / "home-0" / "study.sqlite", again, "pilot")
    assert cli_main(["merge", "--out", str(merged), *map(str, made), str(again)]) == 0
    out = capsys.readouterr().out
    assert out.count("already merged") == 3 and "+0/11 comments, +0/11 scores, +0/11 ratings" in out
    assert {k: v for k, v in counts(merged).items() if k not in ("bundles", "row_sources")} == \
           {k: v for k, v in after.items() if k not in ("bundles", "row_sources")}
    assert cli_main(["merge", "--list", str(merged)]) == 0
    listing = capsys.readouterr().out
    for r in range(3):
        assert f"rater-{r}" in listing
    # each bundle row says its own ratings: participant 0's second bundle held its 11 and added none
    lines = {(cells[0], cells[1]): cells for cells in (line.split() for line in listing.splitlines()[1:-1])}
    assert lines[("1", "rater-0")][2:4] == ["+11/11", "11"]
    assert lines[("4", "rater-0")][2:4] == ["+0/11", "11"]
    assert "2025-05-01T10:00:00Z" in listing and "4 bundles, 3 raters" in listing


def test_report_on_the_merged_log_computes_alpha_over_raters_who_share_comments(bundles, tmp_path, capsys):
    _pack, made = bundles
    merged = tmp_path / "study.sqlite"
    merge_files(merged, made)
    assert cli_main(["report", "--db", str(merged), "--format", "json"]) == 0  # in-process: no interpreter start
    human = json.loads(capsys.readouterr().out)["sections"]["human"]
    assert human["n_raters"] == 3
    toxicity = next(a for a in human["attributes"] if a["name"] == "toxicity")
    assert toxicity["alpha"] is not None and 0 < toxicity["alpha"] < 1  # raters 0/1 agree, rater 2 not always
    assert toxicity["n_ratings"] == 33


def _merge_refused(merged: Path, path: Path, capsys) -> str:
    before = counts(merged)
    assert cli_main(["merge", "--out", str(merged), str(path)]) == 2
    assert counts(merged) == before, "a refused bundle writes nothing"
    return capsys.readouterr().err


def _rezip(src: Path, dst: Path, change) -> None:
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(dst, "w") as zout:
        for item in zin.infolist():
            zout.writestr(item, change(item.filename, zin.read(item.filename)))


def test_refusals_name_the_problem_and_write_nothing(bundles, tmp_path, monkeypatch, capsys):
    study_pack, made = bundles
    merged = tmp_path / "study.sqlite"
    merge_files(merged, made[:1])
    capsys.readouterr()

    other = participant(tmp_path, monkeypatch, make_pack(tmp_path, "other-study"), 7)
    capsys.readouterr()
    assert "belongs to another study ('other-study'" in _merge_refused(merged, other, capsys)

    truncated = tmp_path / "truncated.bundle"
    truncated.write_bytes(made[1].read_bytes()[:-200])
    assert "not a modlens bundle, or truncated" in _merge_refused(merged, truncated, capsys)

    flipped = tmp_path / "flipped.bundle"  # one byte of a table changed, manifest untouched
    _rezip(made[1], flipped, lambda name, data: data[:-40] + bytes([data[-40] ^ 1]) + data[-39:]
           if name == "tables/ratings.parquet" else data)
    assert "table ratings: checksum mismatch" in _merge_refused(merged, flipped, capsys)

    def edit_manifest(name, data):
        if name != "manifest.json":
            return data
        m = json.loads(data)
        m["rater_ids"] = ["someone-else"]
        return json.dumps(m).encode()

    tampered = tmp_path / "tampered.bundle"
    _rezip(made[1], tampered, edit_manifest)
    assert "bundle checksum mismatch" in _merge_refused(merged, tampered, capsys)

    b = read_bundle(made[1])
    tables = {n: (b.columns(n), [tuple(r.values()) for r in b.table(n).to_pylist()]) for n in b.manifest["tables"]}
    fields = {k: b.manifest[k] for k in ("study_id", "study_key", "rater_ids", "consent", "modlens_version", "exported_at")}
    b.close()
    newer = tmp_path / "newer.bundle"
    with open(newer, "wb") as fh:
        write_archive(fh, fields | {"schema_version": schema.SCHEMA_VERSION + 1}, tables)
    assert f"newer than this modlens merges ({schema.SCHEMA_VERSION})" in _merge_refused(merged, newer, capsys)

    broken = tmp_path / "no-sessions.bundle"  # ratings point at sessions the bundle lacks: fails mid-merge
    with open(broken, "wb") as fh:
        write_archive(fh, fields | {"schema_version": schema.SCHEMA_VERSION}, tables | {"sessions": (tables["sessions"][0], [])},
                      key=Ed25519PrivateKey.generate())  # signed, so it gets as far as the rows
    assert "rolled back, nothing of it was merged" in _merge_refused(merged, broken, capsys)

    with StudyLog(tmp_path / "own.sqlite") as log:  # a participant's own log is no merge target
        log.ensure_study("pilot", "x", {})
    assert cli_main(["merge", "--out", str(tmp_path / "own.sqlite"), str(made[1])]) == 2
    assert "is not a merged study log" in capsys.readouterr().err

    assert cli_main(["merge", "--out", str(merged), "--study", str(make_pack(tmp_path, "third")), str(made[1])]) == 2
    assert "belongs to another study" in capsys.readouterr().err
    assert cli_main(["merge", "--out", str(merged), "--study", str(study_pack), str(made[1])]) == 0


def test_a_bundle_of_the_older_schema_is_upgraded_on_the_fly(tmp_path, monkeypatch):
    study_pack = make_pack(tmp_path)
    current = participant(tmp_path, monkeypatch, study_pack, 0)
    # a participant still on schema 1: the log is written and the bundle exported by those rules
    monkeypatch.setattr(migrate, "MIGRATIONS", schema.MIGRATIONS[:1])
    monkeypatch.setattr(migrate, "SCHEMA_VERSION", 1)
    old = participant(tmp_path, monkeypatch, study_pack, 1)
    with StudyLog(tmp_path / "home-1" / "study.sqlite", readonly=True) as log:
        assert log.user_version() == 1 and "bundles" not in log.table_names()
    monkeypatch.undo()
    with zipfile.ZipFile(old) as zf:
        assert json.loads(zf.read("manifest.json"))["schema_version"] == 1
    merged = tmp_path / "study.sqlite"
    results = merge_files(merged, [current, old])
    assert [r["status"] for r in results] == ["merged", "merged"]
    with StudyLog(merged, readonly=True) as log:
        assert log.conn.execute("SELECT schema_version FROM bundles ORDER BY bundle_id").fetchall() == [(schema.SCHEMA_VERSION,), (1,)]
        assert log.counts()["ratings"] == 22


def test_bundle_needs_consent_and_a_known_study(tmp_path, capsys):
    db = tmp_path / "log.sqlite"
    with StudyLog(db) as log:
        log.ensure_study("s", "x", {})
        log.ensure_rater("s", "r", None)
    assert cli_main(["export", "--db", str(db), "--bundle", str(tmp_path / "b")]) == 2
    assert "has given consent" in capsys.readouterr().err
    assert cli_main(["export", "--db", str(db), "--bundle", str(tmp_path / "b"), "--study-id", "nope"]) == 2
    assert "study 'nope' is not in" in capsys.readouterr().err
    assert not (tmp_path / "b").exists()
    with pytest.raises(bundle_mod.BundleError, match="not a modlens bundle"):
        read_bundle(io.BytesIO(b"PK\x03\x04 nonsense"), "junk")
    assert sqlite3.connect(db).execute("PRAGMA integrity_check").fetchone()[0] == "ok"


def test_every_schema_version_has_a_bundle_upgrade():
    """A new migration needs its bundle upgrade (even one that does nothing), or every older
    participant's bundle is refused ("KeyError: 4" when migration 5 arrived without one)."""
    from modlens.exchange.merge import OLDEST_SCHEMA, UPGRADES

    assert sorted(UPGRADES) == list(range(OLDEST_SCHEMA, schema.SCHEMA_VERSION))


def test_merge_says_when_a_bundle_scores_a_text_otherwise_than_the_merged_log(tmp_path, monkeypatch, capsys):
    """Two participants' daemons with the same detector version scored the same ten texts, the second
    0.25 higher each (another machine, a version string that missed a change): merge keeps the first
    bundle's scores, and must say so, with how far apart they are, not report a clean merge."""
    study_pack = make_pack(tmp_path)
    first = participant(tmp_path, monkeypatch, study_pack, 0)
    second = participant(tmp_path, monkeypatch, study_pack, 1, score_shift=0.25)
    merged = tmp_path / "study.sqlite"
    assert cli_main(["merge", "--out", str(merged), str(first), str(second)]) == 0
    out = capsys.readouterr().out
    first_line, second_line = (line for line in out.splitlines() if line.startswith("merged "))
    assert "differ" not in first_line
    assert "10 scores differ from the merged log's (kept the merged log's; largest toxicity difference 0.25)" \
        in second_line
    with StudyLog(merged, readonly=True) as log:
        rows = json.loads(log.conn.execute("SELECT rows_json FROM bundles WHERE bundle_id = 2").fetchone()[0])
        # the merged log holds the first bundle's scores: the 10 shared texts at i/10, not i/10 + 0.25
        kept = sorted(r[0] for r in log.conn.execute(
            "SELECT s.toxicity FROM scores s JOIN texts t USING (text_id) WHERE t.text LIKE 'comment c%'"))
    assert kept == pytest.approx([i / 10 for i in range(10)])
    assert rows["scores"]["differ"] == {"kept": 10, "replaced": 0, "largest": {"toxicity": pytest.approx(0.25)}}
    assert "differ" not in rows["comments"]  # comments compare nothing: an edited text is kept apart instead


def test_merge_counts_the_errors_a_bundle_replaces(tmp_path, monkeypatch, capsys):
    """A score replaces an earlier error (docs/MULTI.md): that is a conflict merge resolves, so it says how many."""
    study_pack = make_pack(tmp_path)
    first = participant(tmp_path, monkeypatch, study_pack, 0)
    db = tmp_path / "home-0" / "study.sqlite"
    with sqlite3.connect(db) as conn:  # participant 0's detector failed on two texts
        conn.execute("UPDATE scores SET toxicity = NULL, labels_json = NULL, error = 'timeout' WHERE text_id IN "
                     "(SELECT text_id FROM texts WHERE text IN ('comment c1', 'comment c2'))")
    conn.close()
    monkeypatch.setenv("MODLENS_HOME", str(tmp_path / "home-0"))
    write_bundle_file(db, first, "pilot")
    second = participant(tmp_path, monkeypatch, study_pack, 1)
    merged = tmp_path / "study.sqlite"
    assert cli_main(["merge", "--out", str(merged), str(first), str(second)]) == 0
    second_line = [line for line in capsys.readouterr().out.splitlines() if line.startswith("merged ")][1]
    assert "2 scores differ from the merged log's (replaced by this bundle's)" in second_line
    with StudyLog(merged, readonly=True) as log:
        assert log.conn.execute("SELECT count(*) FROM scores WHERE error IS NOT NULL").fetchone()[0] == 0


def test_rows_pointing_at_rows_the_bundle_lacks_are_refused_not_dropped(tmp_path, monkeypatch, capsys):
    """docs/MULTI.md: rows that do not fit together are refused, nothing merged. A score whose text the
    bundle lacks was dropped from the merge instead (with its comment, which points at it too), and a
    comment whose page it lacks merged with no page."""
    study_pack = make_pack(tmp_path)
    made = participant(tmp_path, monkeypatch, study_pack, 0)
    b = read_bundle(made)
    tables = {n: (b.columns(n), [tuple(r.values()) for r in b.table(n).to_pylist()]) for n in b.manifest["tables"]}
    fields = {k: b.manifest[k] for k in ("study_id", "study_key", "rater_ids", "consent", "modlens_version",
                                         "exported_at", "schema_version")}
    b.close()
    capsys.readouterr()
    for name, table, why in (("no-text", "texts", "comments.text_id"), ("no-page", "pages", "comments.page_id")):
        columns, rows = tables[table]
        broken = tmp_path / f"{name}.bundle"
        kept = rows[1:] if table == "texts" else []
        with open(broken, "wb") as fh:  # signed, so it gets as far as the rows
            write_archive(fh, fields, tables | {table: (columns, kept)}, key=Ed25519PrivateKey.generate())
        merged = tmp_path / f"{name}.sqlite"
        assert cli_main(["merge", "--out", str(merged), str(broken)]) == 2
        err = capsys.readouterr().err
        assert "rolled back, nothing of it was merged" in err and why in err, err
        assert not merged.exists()


def test_merge_says_when_a_bundle_judges_a_detector_version_at_another_threshold(tmp_path, monkeypatch, capsys):
    """A log judges a detector version at one threshold (the one it was registered with). A bundle whose
    daemon ran the same version at 0.7 merges under the merged log's 0.5, so its scores are judged at
    0.5 from then on: merge must say so, not report a clean merge."""
    study_pack = make_pack(tmp_path)
    first = participant(tmp_path, monkeypatch, study_pack, 0)
    second = participant(tmp_path, monkeypatch, study_pack, 1)
    db = tmp_path / "home-1" / "study.sqlite"
    with sqlite3.connect(db) as conn:
        conn.execute("UPDATE detectors SET threshold = threshold + 0.2")
    conn.close()
    monkeypatch.setenv("MODLENS_HOME", str(tmp_path / "home-1"))
    write_bundle_file(db, second, "pilot")
    merged = tmp_path / "study.sqlite"
    assert cli_main(["merge", "--out", str(merged), str(first), str(second)]) == 0
    second_line = [line for line in capsys.readouterr().out.splitlines() if line.startswith("merged ")][1]
    assert "1 detectors differ from the merged log's (kept the merged log's; largest threshold difference 0.2)" \
        in second_line
    with StudyLog(merged, readonly=True) as log:
        assert [r[0] for r in log.conn.execute("SELECT threshold FROM detectors")] == [pytest.approx(0.5)]


def test_a_study_whose_consent_text_another_study_used_first_merges(tmp_path, capsys):
    """A pilot and the main study in one log with the same consent text (the default text, the same
    detectors): the text is one row, and exporting the main study must not carry the pilot's id with it
    (merge refused it: FOREIGN KEY constraint failed)."""
    text = "You agree to rate comments."
    db = tmp_path / "log.sqlite"
    with StudyLog(db) as log:
        for study, rater in (("pilot", "rater-p"), ("main", "rater-m")):
            log.ensure_study(study, study, {})
            log.ensure_rater(study, rater, "2025-05-01T10:00:00Z", text)
            log.start_session(f"s-{study}", study, rater, "modlens-extension", "0.1", 1)
            page = log.ensure_page("youtube", "vid-1", "https://www.youtube.com/watch?v=vid-1", "Video")
            cid = log.add_comment("youtube", f"{study}-c", page, f"comment of {study}")
            log.add_sighting(cid, f"s-{study}")
            log.add_rating(study, rater, f"r-{study}", f"s-{study}", cid, {"toxicity": "toxic"}, None, None, False, 900)
    out = tmp_path / "main.bundle"
    assert cli_main(["export", "--db", str(db), "--bundle", str(out), "--study-id", "main"]) == 0
    merged = tmp_path / "merged.sqlite"
    results = merge_files(merged, [out], allow_unsigned=True)
    assert [r if isinstance(r, Exception) else r["status"] for r in results] == ["merged"]
    with StudyLog(merged, readonly=True) as log:
        assert log.conn.execute("SELECT study_id, rater_id FROM consents").fetchall() == [("main", "rater-m")]
        assert log.conn.execute("SELECT text FROM consent_texts").fetchall() == [(text,)]


def test_a_schema_6_bundle_with_two_pages_of_one_x_post_merges_into_one_page(tmp_path, monkeypatch):
    """A participant on schema 6 kept an X post twice (the extension's row naming the author, `modlens
    feed`'s with the address as key): the upgrade (UPGRADES[6]) writes each as schema 7 keeps pages, so
    the merged log holds one page without the author, with both comments on it."""
    monkeypatch.setattr(migrate, "MIGRATIONS", schema.MIGRATIONS[:6])
    monkeypatch.setattr(migrate, "SCHEMA_VERSION", 6)
    db = tmp_path / "v6.sqlite"
    with StudyLog(db) as log:
        log.ensure_study("pilot", "Pilot", {})
        log.ensure_rater("pilot", "rater-0", "2025-05-01T10:00:00Z")
        log.start_session("s-0", "pilot", "rater-0", "modlens-extension", "0.1", 1)
        # as a schema-6 modlens wrote them: the author in the address and title, the feed's key an address
        log.conn.executemany("INSERT INTO pages (page_id, platform, page_key, url, title, first_seen) "
                             "VALUES (?, 'x', ?, ?, ?, '2025-05-01T10:00:00Z')", [
                                 (1, "123", "https://x.com/alice/status/123?s=20", 'Alice on X: "hi there" / X'),
                                 (2, "https://x.com/Alice/status/123", "https://x.com/Alice/status/123",
                                  "https://x.com/Alice/status/123")])
        log.conn.commit()
        for n, page in ((1, 1), (2, 2)):
            cid = log.add_comment("x", f"c{n}", page, f"reply {n}")
            add_sighting(log, cid, "s-0")
            log.add_rating("pilot", "rater-0", f"r-{n}", "s-0", cid, {"toxicity": "toxic"}, None, None, False, 900)
        assert log.user_version() == 6
    out = tmp_path / "v6.bundle"
    assert cli_main(["export", "--db", str(db), "--bundle", str(out)]) == 0
    monkeypatch.undo()
    with zipfile.ZipFile(out) as zf:
        assert json.loads(zf.read("manifest.json"))["schema_version"] == 6
    merged = tmp_path / "merged.sqlite"
    results = merge_files(merged, [out], allow_unsigned=True)
    assert [r if isinstance(r, Exception) else r["status"] for r in results] == ["merged"]
    with StudyLog(merged, readonly=True) as log:
        pages = log.conn.execute("SELECT page_id, platform, page_key, url, title FROM pages").fetchall()
        comments = log.conn.execute("SELECT c.comment_key, c.page_id FROM comments c ORDER BY c.comment_key").fetchall()
        consents = log.conn.execute("SELECT count(*) FROM consents").fetchone()
        consent_at = log.conn.execute("SELECT consent_at FROM raters WHERE rater_id = 'rater-0'").fetchone()
    assert [p[1:] for p in pages] == [("x", "123", "https://x.com/i/status/123", "hi there")]
    assert comments == [("c1", pages[0][0]), ("c2", pages[0][0])]
    # an older bundle carries no consents: the rater's consent is raters.consent_at alone
    assert consents == (0,) and consent_at == ("2025-05-01T10:00:00Z",)
