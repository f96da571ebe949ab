"""Comment images in participant bundles and the researcher's merge: only the images of consented
comments travel (hash, OCR text, media scores; never the files or the sender's path), and two
participants who saw the same image merge into one media row."""
from __future__ import annotations

import hashlib
import sqlite3
from pathlib import Path

from modlens.media import MediaBlob
from modlens.services.comment_media import record_comment_media
from modlens.exchange.bundle import read_bundle, write_bundle_file
from modlens.exchange.merge import merge_files
from modlens.studylog.store import StudyLog

PNG = b"\x89PNG\r\n\x1a\n" + b"shared meme"
STUDY = "media-study"


class Result:
    def __init__(self, toxicity: float, ocr_text: str, sha: str):
        self.labels, self.toxicity, self.latency_ms, self.error = {"offensive": toxicity}, toxicity, 12.0, None
        self.details = {"ocr": [{"sha256": sha, "engine": "tesseract", "version": "5.3.0", "text": ocr_text,
                                 "confidence": 0.9}], "fused_text": f"caption {ocr_text}"}


def participant_log(db: Path, rater: str, own_png: bytes) -> None:
    """A consented extension session with a comment carrying two images (one shared with the
    other participant), and an unconsented feed session whose comment image must stay behind."""
    shared, own = MediaBlob.from_bytes(PNG, "https://pbs.twimg.com/media/s.png"), MediaBlob.from_bytes(own_png)
    secret = MediaBlob.from_bytes(b"\x89PNG\r\n\x1a\n" + f"unconsented {rater}".encode())
    with StudyLog(db) as lg, lg.transaction():
        lg.ensure_study(STUDY, "media", {"study_id": STUDY, "author_salt": "salt"})
        det = lg.ensure_detector("ocr+profanity-check", "v1", "offensive", 0.5, {})
        lg.ensure_rater(STUDY, rater, "2026-01-01T00:00:00Z")
        lg.start_session(f"s-{rater}", STUDY, rater, "modlens-extension", "0.1", 1)
        page = lg.ensure_page("x", "1", "https://x.com/a/status/1", "post")
        cid = lg.add_comment("x", "100", page, "look at this")
        lg.add_sighting(cid, f"s-{rater}")
        record_comment_media(lg, cid, [(0, shared, "ab/kept.png"), (1, own, None)], {"ocr": det},
                             {"ocr": Result(0.97, "you idiot", shared.sha256)})
        lg.ensure_rater(STUDY, "modlens-feed", None)
        lg.start_session(f"feed-{rater}", STUDY, "modlens-feed", "modlens-feed", "0.1", 1)
        hidden = lg.add_comment("x", f"feed-{rater}", page, "fed without consent")
        lg.add_sighting(hidden, f"feed-{rater}")
        record_comment_media(lg, hidden, [(0, secret, None)], {"ocr": det}, {"ocr": Result(0.1, "secret words", secret.sha256)})


def rows(db: Path, sql: str) -> list[tuple]:
    con = sqlite3.connect(db)
    try:
        return con.execute(sql).fetchall()
    finally:
        con.close()


def test_bundle_carries_consented_comment_media_and_merge_dedupes_by_hash(tmp_path):
    bundles = []
    for rater, own in (("r1", b"\x89PNG\r\n\x1a\nfirst own"), ("r2", b"\x89PNG\r\n\x1a\nsecond own")):
        db = tmp_path / f"{rater}.sqlite"
        participant_log(db, rater, own)
        out = tmp_path / f"{rater}.bundle"
        write_bundle_file(db, out, STUDY)
        bundles.append(out)

    b = read_bundle(bundles[0])
    media = b.table("media").to_pylist()
    assert sorted(m["sha256"] for m in media) == sorted([hashlib.sha256(PNG).hexdigest(),
                                                         hashlib.sha256(b"\x89PNG\r\n\x1a\nfirst own").hexdigest()])
    assert all(m["path"] is None for m in media)  # the sender's folder means nothing to the researcher
    assert b.table("comment_media").num_rows == 2
    assert [r["text_id"] for r in b.table("ocr_results").to_pylist()]  # its OCR text travels as a text row
    texts = {r["text"] for r in b.table("texts").to_pylist()}
    assert "you idiot" in texts and "secret words" not in texts and "fed without consent" not in texts
    assert [d["name"] for d in b.table("detectors").to_pylist()] == ["ocr+profanity-check"]
    assert b.table("comment_media_scores").num_rows == 1
    b.close()

    merged = tmp_path / "merged.sqlite"
    assert [r["status"] for r in merge_files(merged, bundles)] == ["merged", "merged"]
    # the shared image once, each participant's own once, the unconsented ones not at all
    assert rows(merged, "SELECT count(*), count(path) FROM media") == [(3, 0)]
    shared_sha = hashlib.sha256(PNG).hexdigest()
    attached = rows(merged, "SELECT c.comment_key, m.sha256, cm.position, cm.source_url FROM comment_media cm "
                            "JOIN comments c USING (comment_id) JOIN media m USING (media_id) ORDER BY cm.position, m.sha256")
    own = sorted(hashlib.sha256(b"\x89PNG\r\n\x1a\n" + w).hexdigest() for w in (b"first own", b"second own"))
    assert attached == [("100", shared_sha, 0, "https://pbs.twimg.com/media/s.png"),
                        ("100", own[0], 1, None), ("100", own[1], 1, None)]
    got = rows(merged, "SELECT t.text, o.confidence FROM ocr_results o JOIN texts t USING (text_id)")
    assert got == [("you idiot", 0.9)]
    assert rows(merged, "SELECT d.name, s.toxicity FROM comment_media_scores s JOIN detectors d USING (detector_id)") == [
        ("ocr+profanity-check", 0.97)]
    assert rows(merged, "SELECT count(*) FROM row_sources WHERE table_name = 'media'") == [(4,)]
