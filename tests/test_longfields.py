"""A CSV with a field of megabytes is read by `datasets/longfields.py` (the csv module's buffer would
hold 4-8 bytes per character of it for the whole file): the same records, line numbers and errors
as `csv.reader(strict=True)` on random texts, wherever the blocks it reads happen to end, and the
dataset readers give the exact long text back. Its memory: bench/bench_audit_memory.py."""
from __future__ import annotations

import csv
import io
import random
from pathlib import Path

import pytest

from modlens.datasets import longfields
from modlens.datasets.base import DatasetError, count_rows, iter_rows

PIECES = ["a", "b", ",", ";", '"', '""', "\n", "\r", "\r\n", " ", "é", "\t"]


def _records(reader) -> list:
    out = []
    try:
        for row in reader:
            out.append((row, reader.line_num))
    except csv.Error as err:
        out.append(("error", "end of data" in str(err)))
    return out


@pytest.mark.parametrize("block", [1, 2, 3, 7, 1 << 16])
def test_records_lines_and_errors_are_the_csv_modules(block, monkeypatch):
    monkeypatch.setattr(longfields, "BLOCK", block)
    rnd = random.Random(block)
    for _ in range(3000):
        text = "".join(rnd.choice(PIECES) for _ in range(rnd.randint(0, 16)))
        delimiter = rnd.choice([",", ";", "\t"])
        want = _records(csv.reader(io.StringIO(text, newline=""), delimiter=delimiter, strict=True))
        got = _records(longfields.Reader(io.StringIO(text, newline=""), delimiter))
        assert got == want, (text, delimiter)


def _write(path: Path, long_text: str, tail: str = "") -> Path:
    with path.open("w", encoding="utf-8", newline="") as fh:
        w = csv.writer(fh)
        w.writerows([["id", "text"], ["a", "short, \"quoted\"\nline"], ["big", long_text], ["z", "last"]])
        fh.write(tail)
    return path


def test_a_file_with_a_long_field_reads_back_exactly(tmp_path: Path):
    long_text = ("word, \"quote\" é\n" * 200_000)  # about 3 MB, quoted, with line breaks
    f = _write(tmp_path / "long.csv", long_text)
    assert longfields.has_long_line(f) is False  # its line breaks keep every line short: the csv module reads it
    flat = long_text.replace("\n", " ")
    g = _write(tmp_path / "flat.csv", flat)
    assert longfields.has_long_line(g)
    rows = list(iter_rows(g))
    assert [r["id"] for r in rows] == ["a", "big", "z"] and rows[1]["text"] == flat
    assert rows[0]["text"] == "short, \"quoted\"\nline" and count_rows(g) == 3


def test_an_unclosed_quote_after_a_long_field_names_its_line(tmp_path: Path):
    f = _write(tmp_path / "bad.csv", "x" * (3 << 20), tail='q,"never closed\nmore\n')
    with pytest.raises(DatasetError, match=r"line 6: a quote opened here is never closed"):
        list(iter_rows(f))


@pytest.mark.parametrize("scan_block", [1, 3, 4, 64])
def test_a_line_is_long_from_its_length_wherever_the_scan_blocks_end(scan_block, tmp_path: Path, monkeypatch):
    monkeypatch.setattr(longfields, "LONG_LINE", 10)
    monkeypatch.setattr(longfields, "SCAN_BLOCK", scan_block)
    longfields._has_long_line.cache_clear()
    for n, (content, long) in enumerate([(b"123456789\n" * 3, False), (b"ab\r\n" + b"x" * 9 + b"\r\nc", False),
                                         (b"ab\n" + b"x" * 10 + b"\n", True), (b"x" * 10, True),
                                         (b"ab\r" + b"y" * 12, True), (b"", False)]):
        f = tmp_path / f"f{n}.csv"
        f.write_bytes(content)
        assert longfields.has_long_line(f) is long, content
    longfields._has_long_line.cache_clear()
