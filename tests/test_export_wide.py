"""`modlens export` writes the wide per-row table: one row per comment with its gold label, one score
column per detector version and each one's in-sample mark, the same figures the report computes
(its labelled-data section's metrics from these rows, its in-sample counts from these marks)."""
import csv
import json

import pytest

from modlens.analysis.metrics import classification_metrics
from modlens.analysis.report import report_from_db
from modlens.audit import run_audit
from modlens.cli import main
from modlens.studylog import csvcells
from modlens.studylog.tables import WIDE_NAME
from test_report_tables import LengthDetector

HASH = "sha256-" + "89abcdef01234567" * 4


@pytest.fixture(scope="module")
def log(tmp_path_factory):
    folder = tmp_path_factory.mktemp("wide")
    db = folder / "log.sqlite"
    f = folder / "sample.csv"
    rows = [(f"=cmd {i} " + "very rude words " * (i % 4), int(i % 4 >= 2)) for i in range(40)]
    f.write_text("text,toxic\n" + "".join(f"{t},{y}\n" for t, y in rows))
    run_audit(str(f), db=db, detector_objects={"a": LengthDetector("1.0", 90.0), "b": LengthDetector(HASH, 60.0)},
              progress=False, reader_options={"label": "toxic"})
    run_audit("davidson", db=db, detectors=["profanity-check"], limit=30, progress=False)
    return db


def _read(path):
    with open(path, newline="", encoding="utf-8") as fh:
        return [{k: csvcells.restore(v) for k, v in row.items()} for row in csv.DictReader(fh)]


def test_wide_table_has_a_row_per_comment_and_a_column_per_detector(log, tmp_path):
    assert main(["export", "--db", str(log), "--out", str(tmp_path)]) == 0
    manifest = json.loads((tmp_path / "manifest.json").read_text())
    entry = manifest["tables"][WIDE_NAME]
    assert entry["detectors"]["length#2"]["version"] == HASH and entry["detectors"]["length#1"]["version"] == "1.0"
    rows = _read(tmp_path / f"{WIDE_NAME}.csv")
    assert len(rows) == entry["rows"] == 70
    assert list(rows[0])[:7] == ["comment_id", "source", "comment_key", "text_id", "text", "gold_toxic", "label_set_id"]
    assert {"score:length#1", "in_sample:length#1", "score:length#2", "score:profanity-check",
            "in_sample:profanity-check"} <= set(rows[0])
    header = (tmp_path / f"{WIDE_NAME}.csv").read_text().splitlines()[0].split(",")
    assert csvcells.is_own_header(header)  # read back by modlens, its texts come back exact
    raw = (tmp_path / f"{WIDE_NAME}.csv").read_text()
    assert ",'=cmd 0" in raw and ",=cmd" not in raw  # every such text neutralised: a spreadsheet shows it as text
    sample = [r for r in rows if r["source"] != "dataset:davidson"]  # sample.csv, named by its content
    assert len(sample) == 40 and all(r["text"].startswith("=cmd") for r in sample)  # text read back exactly
    # the scores are the detectors' own: length / scale
    for r in sample:
        assert float(r["score:length#1"]) == pytest.approx(min(1.0, len(r["text"]) / 90.0))
        assert r["score:profanity-check"] == ""  # it never scored these


def test_wide_rows_give_the_reports_figures(log, tmp_path):
    out = tmp_path / "out"
    assert main(["export", "--db", str(log), "--out", str(out), "--tables", WIDE_NAME, "--format", "jsonl"]) == 0
    assert sorted(p.name for p in out.iterdir()) == ["DATA.md", f"{WIDE_NAME}.jsonl", "manifest.json"]
    rows = [json.loads(line) for line in (out / f"{WIDE_NAME}.jsonl").read_text().splitlines()]
    report = report_from_db(log)
    for src in report["sections"]["labelled"]["sources"]:
        mine = [r for r in rows if r["source"] == src["source"] and r["gold_toxic"] is not None]
        assert len(mine) == src["n"] and sum(r["gold_toxic"] for r in mine) == src["positives"]
        for d in src["detectors"]:
            name = "length#1" if d["version"] == "1.0" else "length#2" if d["version"] == HASH else d["detector"]
            scored = [r for r in mine if r[f"score:{name}"] is not None]
            m = classification_metrics([r[f"score:{name}"] for r in scored], [r["gold_toxic"] for r in scored], d["threshold"])
            assert m["f1"] == pytest.approx(d["metrics"]["f1"]["value"]) and d["n"] == len(scored)
            marks = [r[f"in_sample:{name}"] for r in scored]
            n_in = d["training"].get("in_sample")
            if isinstance(n_in, int) and d["training"].get("checked") == "hash":
                assert sum(bool(x) for x in marks) == n_in and None not in marks
            elif d["training"].get("level") == "whole":
                assert marks == [True] * len(marks)  # trained on the data set whole: every row in-sample
            else:
                assert marks == [None] * len(marks)  # unknown row by row: no mark, never "out"
    davidson = [r for r in rows if r["source"] == "dataset:davidson"]
    # profanity-check declares Davidson's tweets as training data: its rows carry a mark, checked above
    assert davidson and any(r["in_sample:profanity-check"] for r in davidson)
    assert all(r["in_sample:length#1"] is None for r in rows)  # no training data declared


def test_unknown_table_is_refused_before_anything_is_read(log, tmp_path, capsys):
    assert main(["export", "--db", str(log), "--out", str(tmp_path / "o"), "--tables", "comentz", WIDE_NAME]) == 2
    assert "unknown table 'comentz'" in capsys.readouterr().err
    assert main(["export", "--db", str(log), "--out", str(tmp_path / "o"), "--tables", "comment_scores_wid"]) == 2
    assert f"did you mean {WIDE_NAME} or" in capsys.readouterr().err


def test_wide_table_in_parquet_keeps_types(log, tmp_path):
    import pyarrow.parquet as pq

    assert main(["export", "--db", str(log), "--out", str(tmp_path / "p"), "--tables", WIDE_NAME, "--format", "parquet"]) == 0
    t = pq.read_table(tmp_path / "p" / f"{WIDE_NAME}.parquet")
    assert t.num_rows == 70
    assert str(t.schema.field("score:length#2").type) == "double" and str(t.schema.field("in_sample:length#2").type) == "bool"
    assert str(t.schema.field("gold_toxic").type) == "int64"


def test_the_wide_table_and_the_logs_tables_are_one_snapshot(tmp_path, monkeypatch):
    """export reads every table in one read transaction, so a daemon writing meanwhile cannot make
    comments.csv and the wide table disagree; the wide table was read on its own, before, so a comment
    the daemon wrote in between was in comments.csv (11 rows) and not in the wide table (10)."""
    from modlens.analysis import wide
    from modlens.studylog.store import StudyLog

    db = tmp_path / "live.sqlite"
    with StudyLog(db) as lg:
        det = lg.ensure_detector("det", "1", "toxic", 0.5, {})
        page = lg.ensure_page("youtube", "vid", None, None)
        for i in range(10):
            lg.add_comment("youtube", f"c{i}", page, f"comment {i}")
            lg.add_score(f"comment {i}", det, {"toxic": 0.1}, 0.1, 1.0, None)
    build = wide.build

    def build_while_the_daemon_writes(data):
        out = build(data)
        with StudyLog(db) as lg:  # a real write, as the daemon's, landing while export runs
            lg.add_comment("youtube", "late", lg.ensure_page("youtube", "vid", None, None), "a late comment")
        return out

    monkeypatch.setattr(wide, "build", build_while_the_daemon_writes)
    out = tmp_path / "out"
    assert main(["export", "--db", str(db), "--out", str(out), "--tables", "comments", WIDE_NAME]) == 0
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["tables"]["comments"]["rows"] == manifest["tables"][WIDE_NAME]["rows"]
    assert len(_read(out / "comments.csv")) == len(_read(out / f"{WIDE_NAME}.csv")) == 10
