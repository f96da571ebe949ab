"""`modlens export` writes every table of the study log: a log holding rows in each table
(written through the StudyLog API, the record functions and a real bundle merge) exports a
file per table carrying every one of its rows and columns."""
from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from fused_helpers import record, text_image
from media_helpers import blank_image

from modlens.media.store import MediaStore
from modlens.perturb.base import Variant
from modlens.studylog.records import media as media_records
from modlens.exchange.bundle import write_bundle_file
from modlens.studylog.records.deferred import defer_variants
from modlens.studylog.records.labels import add_gold_labels, run_label_set
from modlens.studylog.export import export
from modlens.exchange.merge import merge_files
from modlens.studylog.store import StudyLog
from modlens.studylog.tables import EXPORTS


TEXT = "you are a st00pid idiot"


def fill(log: StudyLog, media: MediaStore) -> None:
    """A row in every table but the merge provenance."""
    log.ensure_study("s1", "Study", {"author_salt": "salt"})
    log.ensure_rater("s1", "r1", "2025-05-01T10:00:00Z", "I agree to take part.")
    log.start_session("sess", "s1", "r1", "modlens-extension", "0.1", 1)
    page = log.ensure_page("youtube", "vid", "https://www.youtube.com/watch?v=vid", "A video")
    cid = log.add_comment("youtube", "c1", page, TEXT, author_hash="h1")
    log.add_sighting(cid, "sess")
    log.add_label(cid, "functionality", "derog", "hatecheck")
    det = log.ensure_detector("minilm-toxicity", "abc", "toxic", 0.5, {})
    log.add_score(TEXT, det, {"toxic": 0.8, "non_toxic": 0.2}, 0.8, 4.0, None)
    log.add_normalization(TEXT, "default", "1", "you are a stupid idiot",
                          [{"start": 10, "end": 17, "original": "st00pid", "normalized": "stupid", "step": "leet",
                            "confidence": 0.9, "hidden": None}])
    run = log.start_run("noisyhate", "/data/dev.csv", {"limit": 1})
    log.add_variant(cid, Variant("you are a stup!d idiot", "special_char", {"rate": 0.2}, 3, [(10, 16)]), run_id=run)
    log.add_run_item(run, cid)
    add_gold_labels(log, run_label_set(log, run, "hatecheck", "label_gold"), [(cid, "hateful")])
    log.add_step_errors([(TEXT, "normalize", "default", "1", run, "ValueError: bad input")])
    defer_variants(log, [(cid, "variant budget: 50 comments/s")])
    log.finish_run(run, "done")
    log.add_rating("s1", "r1", "cr1", "sess", cid, {"toxicity": "toxic", "formality": "informal"},
                   {"vs_hard": "more"}, "toxic", False, 2500)
    log.put_rater_reviews([{"study_id": "s1", "rater_id": "r1", "task": "t01", "source": "protocol", "decision": "accept",
                            "reason": "0 problems", "n_items": 1, "missed": 0, "inconsistent_gold": 0, "wrong_gold": 0,
                            "inconsistent": 0, "comment_ids": [cid]}])
    log.add_crowd_import("s1", "survey", "results.csv", "ab" * 32, "rows", {"Prolific Status RETURNED": 1},
                         {"workers": 1, "ratings_new": 1, "ratings_known": 0, "changed": 0, "empty": 0, "incomplete": 0,
                          "repeated": 0}, "keep")
    image = blank_image()
    media.put(image)
    mid = media_records.add_media(log, image, path=media.relative_path(image))
    media_records.add_comment_media(log, cid, mid, 0, "https://i.ytimg.com/x.png")
    media_records.add_ocr(log, mid, "tesseract", "5 eng psm6", "", None)
    media_records.add_asr(log, mid, "pocketsphinx", "5.1.1+en-us", "", None)
    media_records.add_comment_media_score(log, cid, (det, {"toxic": 0.7}, 0.7, 5.0, None, {"ocr": ""}))
    case_id = record(log, media, text_image("abuse_hate", "women", "are", "pigs"))
    media_records.add_case_scores_many(log, [(case_id, "case", (det, {"toxic": 0.9}, 0.9, 6.0, None, {}))])


@pytest.fixture
def full_log(tmp_path) -> Path:
    """A researcher's log: a participant's bundle merged in (bundles, row_sources), then a row in
    every other table."""
    participant, media = tmp_path / "participant.sqlite", MediaStore(tmp_path / "media")
    with StudyLog(participant) as log:
        fill(log, media)
    write_bundle_file(participant, tmp_path / "p.bundle", study_id="s1")
    db = tmp_path / "study.sqlite"
    [merged] = merge_files(db, [tmp_path / "p.bundle"])
    assert not isinstance(merged, Exception), merged
    with StudyLog(db) as log:
        fill(log, media)
    return db


def sqlite_tables(db: Path) -> dict[str, list[dict]]:
    con = sqlite3.connect(db)
    con.row_factory = sqlite3.Row
    try:
        names = [r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type = 'table' "
                                           "AND name NOT LIKE 'sqlite_%' ORDER BY name")]
        return {name: [dict(r) for r in con.execute(f"SELECT * FROM {name}")] for name in names}
    finally:
        con.close()


def primary_key(db: Path, table: str) -> list[str]:
    con = sqlite3.connect(db)
    try:
        info = sorted((r[5], r[1]) for r in con.execute(f"PRAGMA table_info({table})") if r[5])
        return [name for _, name in info]
    finally:
        con.close()


def test_export_writes_every_table_with_all_its_rows(full_log, tmp_path):
    tables = sqlite_tables(full_log)
    empty = sorted(name for name, rows in tables.items() if not rows)
    assert not empty, f"the test log should hold rows in every table: {empty}"
    manifest = export(full_log, tmp_path / "out", "jsonl")
    missing = sorted(set(tables) - set(manifest["tables"]))
    assert not missing, f"tables without an export: {missing}"
    for name, rows in tables.items():
        exported = [json.loads(line) for line in (tmp_path / "out" / f"{name}.jsonl").read_text().splitlines()]
        key = primary_key(full_log, name)
        assert key and set(key) <= set(exported[0]), f"{name}: the export lacks its key {key}"
        in_log = {tuple(r[k] for k in key) for r in rows}
        in_export = {tuple(r[k] for k in key) for r in exported if all(r[k] is not None for k in key)}
        assert in_export == in_log, name


def test_each_export_carries_its_tables_columns_and_values(full_log, tmp_path):
    """Beyond the keys: every column of the table, under its own name and with its value (but for
    the columns the description says an export leaves out, and why)."""
    export(full_log, tmp_path / "out", "jsonl")
    for name, rows in sqlite_tables(full_log).items():
        assert EXPORTS[name].carries == name
        exported = [json.loads(line) for line in (tmp_path / "out" / f"{name}.jsonl").read_text().splitlines()]
        key = primary_key(full_log, name)
        by_key = {tuple(r[k] for k in key): r for r in exported}
        for row in rows:
            out = by_key[tuple(row[k] for k in key)]
            for column, value in row.items():
                if column in EXPORTS[name].omits:
                    continue
                got = out[column]
                assert (int(got) if isinstance(got, bool) else got) == value, (name, column)
