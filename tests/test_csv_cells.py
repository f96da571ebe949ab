"""CSV files a person opens in a spreadsheet: a cell that begins with `=`, `+`, `-`, `@`, a tab or a
carriage return is written with a leading `'` (OWASP's CSV-injection guidance), so the spreadsheet
shows it as text; modlens reading its own file back gets the exact text again, `'=x` typed by a
person included; a file modlens did not write keeps its quotes; Parquet and JSONL keep the text."""
from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from modlens.datasets.base import read_rows
from modlens.datasets.generic import read as read_generic
from modlens.studylog import csvcells
from modlens.studylog.export import export
from modlens.studylog.store import StudyLog

HOSTILE = ['=HYPERLINK("http://evil.example","x")', "+1+1", "-2+3", "@SUM(A1:A2)", "\t=1", "\r=1",
           "'=typed by a person", "''=two quotes", "'plain quote", "-", "=", "a=b", "", "'", "plain text"]
TRIGGERS = tuple("=+-@\t\r")


def test_the_rule_neutralises_every_trigger_and_gives_every_text_back():
    for text in HOSTILE + [q + t + "x" for q in ("", "'", "''") for t in TRIGGERS]:
        written = csvcells.neutralise(text)
        assert not written.startswith(TRIGGERS), text
        assert csvcells.restore(written) == text, text
    assert csvcells.neutralise("=1") == "'=1" and csvcells.neutralise("'=1") == "''=1"
    assert csvcells.neutralise("'plain") == "'plain" and csvcells.restore("'plain") == "'plain"
    assert csvcells.neutralise(-0.5) == -0.5 and csvcells.neutralise(3) == 3  # numbers stay numbers


def test_the_writer_quotes_cells_for_spreadsheets():
    buf = io.StringIO()
    csvcells.writer(buf).writerows([["=1+1", 2, "ok"]])
    assert buf.getvalue() == "'=1+1,2,ok\r\n"


@pytest.fixture
def hostile_log(tmp_path: Path) -> Path:
    db = tmp_path / "log.sqlite"
    with StudyLog(db) as log:
        page = log.ensure_page("youtube", "vid", "https://www.youtube.com/watch?v=vid", None)
        for n, text in enumerate(HOSTILE):
            log.add_comment("youtube", f"c{n}", page, text)
    return db


def _cells(path: Path) -> list[str]:
    with path.open(newline="", encoding="utf-8") as fh:
        return [c for row in csv.reader(fh) for c in row]


def test_exported_csv_opens_as_text_and_reads_back_exactly(hostile_log: Path, tmp_path: Path):
    export(hostile_log, tmp_path / "csv", "csv")
    for name in ("comments.csv", "texts.csv"):
        cells = _cells(tmp_path / "csv" / name)
        assert not [c for c in cells if c.startswith(TRIGGERS)], name
        assert "'" + HOSTILE[0] in cells and "''=typed by a person" in cells
    # modlens reads its own export back: the dataset readers (`modlens audit texts.csv`) get the texts
    texts = [r["text"] for r in read_rows(tmp_path / "csv" / "comments.csv")]
    assert texts == HOSTILE
    audited = [item.text for item in read_generic(tmp_path / "csv" / "texts.csv").iter_items()]
    assert sorted(t for t in HOSTILE if t.strip()) == sorted(t for t in audited if t.strip())
    # Parquet and JSONL keep the exact text
    export(hostile_log, tmp_path / "j", "jsonl")
    export(hostile_log, tmp_path / "p", "parquet")
    lines = (tmp_path / "j" / "comments.jsonl").read_text(encoding="utf-8").splitlines()
    assert [json.loads(line)["text"] for line in lines] == HOSTILE
    assert pq.read_table(tmp_path / "p" / "comments.parquet").column("text").to_pylist() == HOSTILE


def test_a_csv_modlens_did_not_write_keeps_its_quotes(tmp_path: Path):
    f = tmp_path / "mine.csv"
    with f.open("w", newline="", encoding="utf-8") as fh:
        csv.writer(fh).writerows([["id", "text"], ["1", "'=x"], ["2", "''-y"]])
    assert [r["text"] for r in read_rows(f)] == ["'=x", "''-y"]


def test_own_headers_are_the_exported_tables_and_survey_task_files():
    from modlens.studylog.tables import EXPORTS

    assert csvcells.is_own_header([c.name for c in EXPORTS["texts"].columns])
    assert csvcells.is_own_header(["assignment", "task", "item1_ref", "item1_text", "item2_ref", "item2_text"])
    assert not csvcells.is_own_header(["id", "text"])
    assert not csvcells.is_own_header(["assignment", "task", "comment"])
