"""`modlens export`: tidy tables in every format, documented columns, reading beside a writer."""
from __future__ import annotations

import asyncio
import csv
import json
import re
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from modlens.cli import main as cli_main
from modlens.perturb.base import Variant
from modlens.studylog.dictionary import render_markdown
from modlens.studylog.export import export
from modlens.studylog.store import LogWriter, StudyLog
from modlens.studylog.tables import EXPORT_TABLES, TABLES

DATA_MD = Path(__file__).resolve().parents[1] / "docs" / "DATA.md"


def fill(log: StudyLog) -> None:
    log.ensure_study("s1", "Study", {"x": 1})
    log.ensure_rater("s1", "r1", "2025-05-01T10:00:00Z")
    log.start_session("sess", "s1", "r1", "extension", "0.1", 1)
    page = log.ensure_page("youtube", "vid", "https://www.youtube.com/watch?v=vid", "A video")
    cid = log.add_comment("youtube", "c1", page, "you are a st00pid idiot, \"quoted\",\nnew line", author_hash="h1")
    log.add_comment("news", "n1", None, "have a nice day")
    log.add_sighting(cid, "sess")
    log.add_label(cid, "toxicity", "toxic", "gold")
    det = log.ensure_detector("minilm-toxicity", "abc", "toxic", 0.5, {"pooling": "mean"})
    det2 = log.ensure_detector("perspective", "v1-123", "TOXICITY", 0.5, {})
    log.add_score("you are a st00pid idiot, \"quoted\",\nnew line", det, {"toxic": 0.8, "non_toxic": 0.2}, 0.8, 4.0, None)
    log.add_score("you are a st00pid idiot, \"quoted\",\nnew line", det2, None, None, None, "missing")
    log.add_normalization("you are a st00pid idiot, \"quoted\",\nnew line", "default", "1", "you are a stupid idiot",
                          [{"start": 10, "end": 17, "original": "st00pid", "normalized": "stupid", "step": "leet",
                            "confidence": 0.9, "hidden": None}])
    log.add_score("you are a stupid idiot", det, {"toxic": 0.95, "non_toxic": 0.05}, 0.95, 4.0, None)
    run = log.start_run("noisyhate", "/data/dev.csv", {"limit": 10})
    log.add_variant(cid, Variant("you are a stup!d idiot", "special_char", {"rate": 0.2}, 3, [(10, 16)],
                                 target_detector="minilm-toxicity"), run_id=run)
    log.add_run_item(run, cid)
    log.finish_run(run, "done")
    log.add_rating("s1", "r1", "cr1", "sess", cid, {"toxicity": "toxic", "formality": "informal"},
                   {"vs_hard": "more", "vs_extreme": "same"}, "toxic", False, 2500)
    log.add_rating("s1", "r1", "cr2", "sess", cid, {}, {"vs_hard": "less", "vs_extreme": "more"}, None, True, 900)


@pytest.fixture
def db(tmp_path):
    path = tmp_path / "study.sqlite"
    with StudyLog(path) as log:
        fill(log)
    return path


def read_csv(path: Path) -> list[dict[str, str]]:
    with open(path, newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


def test_csv_export_is_tidy_and_complete(db, tmp_path):
    manifest = export(db, tmp_path / "out", "csv")
    out = tmp_path / "out"
    assert set(manifest["tables"]) == {t.name for t in EXPORT_TABLES}
    comments = read_csv(out / "comments.csv")
    assert [c["comment_key"] for c in comments] == ["c1", "n1"]
    assert comments[0]["text"] == "you are a st00pid idiot, \"quoted\",\nnew line"  # quoting and newlines survive
    assert comments[0]["page_url"] == "https://www.youtube.com/watch?v=vid" and comments[0]["platform"] == "youtube"
    assert comments[1]["page_id"] == ""  # NULL
    scores = read_csv(out / "scores.csv")
    assert len(scores) == 3
    assert {(s["detector"], s["detector_version"], s["error"]) for s in scores} == {
        ("minilm-toxicity", "abc", ""), ("perspective", "v1-123", "missing")}
    labels = read_csv(out / "score_labels.csv")
    assert len(labels) == 4 and {lab["label"] for lab in labels} == {"toxic", "non_toxic"}
    ratings = read_csv(out / "ratings.csv")
    # cr1 has two attributes -> two rows; cr2 has none -> one row with an empty attribute
    assert sorted((r["client_rating_id"], r["attribute"]) for r in ratings) == [
        ("cr1", "formality"), ("cr1", "toxicity"), ("cr2", "")]
    assert {r["inconsistent"] for r in ratings if r["client_rating_id"] == "cr2"} == {"1"}
    variants = read_csv(out / "variants.csv")
    assert variants[0]["strategy"] == "special_char" and json.loads(variants[0]["params_json"]) == {"rate": 0.2}
    edits = read_csv(out / "normalization_edits.csv")
    assert (edits[0]["original"], edits[0]["normalized"], edits[0]["start"]) == ("st00pid", "stupid", "10")
    assert read_csv(out / "audit_runs.csv")[0]["n_items"] == "1"
    # joining scores to the normalized text works through text_id
    norm = read_csv(out / "normalizations.csv")[0]
    assert [s["toxicity"] for s in scores if s["text_id"] == norm["result_text_id"]] == ["0.95"]
    assert (out / "DATA.md").read_text().count("### `") == len(EXPORT_TABLES) + 1 + len(TABLES)  # + the wide table
    assert json.loads((out / "manifest.json").read_text())["tables"]["ratings"]["rows"] == 3
    assert not list(out.glob("*.tmp"))


def test_jsonl_and_parquet_carry_the_same_rows_with_types(db, tmp_path):
    export(db, tmp_path / "j", "jsonl")
    export(db, tmp_path / "p", "parquet")
    for table in ("comments", "scores", "ratings", "variants"):
        rows_j = [json.loads(line) for line in (tmp_path / "j" / f"{table}.jsonl").read_text().splitlines()]
        rows_p = pq.read_table(tmp_path / "p" / f"{table}.parquet").to_pylist()
        assert rows_j == rows_p, table
    ratings = pq.read_table(tmp_path / "p" / "ratings.parquet")
    assert str(ratings.schema.field("inconsistent").type) == "bool"
    assert str(ratings.schema.field("time_spent_ms").type) == "int64"
    empty = pq.read_table(tmp_path / "p" / "labels.parquet")  # typed even when there are few or no rows
    assert empty.num_rows == 1 and empty.schema.names == ["comment_id", "name", "value", "source"]


def test_cli_export_defaults_to_the_home_db_and_reports_errors(tmp_path, modlens_home, capsys):
    assert cli_main(["export", "--out", str(tmp_path / "none")]) == 3  # not found, as the README's table says
    assert "no study log" in capsys.readouterr().err
    assert not (tmp_path / "none").exists()
    with StudyLog(modlens_home / "study.sqlite") as log:
        fill(log)
    assert cli_main(["export", "--out", str(tmp_path / "o"), "--format", "jsonl", "--tables", "comments", "ratings"]) == 0
    assert sorted(p.name for p in (tmp_path / "o").iterdir()) == ["DATA.md", "comments.jsonl", "manifest.json", "ratings.jsonl"]
    assert cli_main(["export", "--out", str(tmp_path / "o"), "--tables", "nope"]) == 2
    assert "unknown table" in capsys.readouterr().err
    assert cli_main(["export", "--out", str(tmp_path / "o"), "--tables", "ocr_result"]) == 2
    assert "did you mean ocr_results" in capsys.readouterr().err
    assert cli_main(["export", "--out", str(tmp_path / "m"), "--tables", "media", "label_sets", "step_errors"]) == 0
    assert sorted(p.name for p in (tmp_path / "m").glob("*.csv")) == ["label_sets.csv", "media.csv", "step_errors.csv"]


async def test_export_while_a_writer_is_active(tmp_path):
    """The export runs in a thread while the writer commits pages; it must neither fail nor
    stall the writer, and each export is a consistent snapshot (ratings never point to
    comments missing from the same export)."""
    db = tmp_path / "busy.sqlite"
    writer = LogWriter(db, max_delay_ms=2)
    await writer.start()
    await writer.submit(lambda log: (log.ensure_study("s1", "S", {}), log.ensure_rater("s1", "r1", None)))
    stop = asyncio.Event()

    async def write_forever():
        n = 0
        while not stop.is_set():
            def page(log, n=n):
                ids = [log.add_comment("x", f"{n}-{i}", None, f"text {n} {i}") for i in range(10)]
                for i, cid in enumerate(ids):
                    log.add_rating("s1", "r1", f"{n}-{i}", None, cid, {"toxicity": "toxic"}, None, None, False, 1)
            await writer.submit(page)
            n += 1
        return n

    task = asyncio.create_task(write_forever())
    await asyncio.sleep(0.2)
    loop = asyncio.get_running_loop()
    for k in range(3):
        manifest = await loop.run_in_executor(None, export, db, tmp_path / f"e{k}", "csv", ["comments", "ratings"])
        comment_ids = {r["comment_id"] for r in read_csv(tmp_path / f"e{k}" / "comments.csv")}
        rated = {r["comment_id"] for r in read_csv(tmp_path / f"e{k}" / "ratings.csv")}
        assert manifest["tables"]["comments"]["rows"] > 0
        assert rated <= comment_ids
    stop.set()
    pages = await task
    await writer.stop()
    assert pages > 5  # the writer kept committing during the exports
    with StudyLog(db, readonly=True) as log:
        assert log.counts()["comments"] == pages * 10


def test_every_column_is_documented_and_docs_match_the_dictionary(db):
    with StudyLog(db, readonly=True) as log:
        tables = set(log.db.table_names())
        assert tables == {t.name for t in TABLES}, "every SQLite table needs an entry in studylog/tables.py"
        for table in TABLES:
            columns = [c.name for c in log.db[table.name].columns]
            assert columns == [c.name for c in table.columns], table.name
        for table in EXPORT_TABLES:  # the query yields exactly the documented columns
            names = [d[0] for d in log.conn.execute(table.sql).description]
            assert names == [c.name for c in table.columns], table.name
    text = DATA_MD.read_text()
    block = re.search(r"<!-- BEGIN GENERATED[^>]*-->\n(.*)<!-- END GENERATED -->", text, re.S)
    assert block, "docs/DATA.md lost its generated block"
    assert block.group(1) == render_markdown(), "regenerate: python -m modlens.studylog.dictionary --write"
