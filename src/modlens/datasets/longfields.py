"""CSV files with a field of megabytes, read in memory proportional to that field.

Python's csv module builds each field in a buffer of 4 bytes per character that doubles as it
grows and lives as long as the reader: a 50 MB text field holds 256 MiB (and 384 MiB while the
buffer moves) for the whole file, on top of the text itself. A file with a line longer than
`LONG_LINE` bytes is read by `Reader` instead: the same records, fields and errors as
`csv.reader(fh, delimiter=..., strict=True)` (RFC 4180 quoting, `""` inside quotes, a line break
inside quotes kept as written), each field gathered as slices of the text and joined once (about
twice the field's size at the peak, briefly). Other files keep the csv module, which is faster.
"""
from __future__ import annotations

import csv
import re
from pathlib import Path
from typing import TextIO

from modlens.fileversion import per_version, stamp

LONG_LINE = 1 << 20   # bytes: a line this long or longer is read here
SCAN_BLOCK = 1 << 16  # bytes read at a time looking for one
BLOCK = 1 << 16       # characters read at a time


@per_version(maxsize=64)
def _has_long_line(path: str, _stamp: tuple[int, ...]) -> bool:
    run = 0  # bytes since the last line break
    with open(path, "rb") as fh:
        while block := fh.read(min(SCAN_BLOCK, LONG_LINE)):  # a line inside one block is shorter than LONG_LINE
            last = max(block.rfind(b"\n"), block.rfind(b"\r"))
            if last < 0:
                run += len(block)
            else:
                first = min(i for i in (block.find(b"\n"), block.find(b"\r")) if i >= 0)
                if run + first >= LONG_LINE:
                    return True
                run = len(block) - last - 1
            if run >= LONG_LINE:
                return True
    return False


def has_long_line(path: Path) -> bool:
    """Whether the file has a line of megabytes (checked once per file version: one pass over its bytes)."""
    return _has_long_line(str(path), stamp(path))


def _line_breaks(text: str) -> int:
    return text.count("\n") + text.count("\r") - text.count("\r\n")


class Reader:
    """`csv.reader(fh, delimiter=delimiter, strict=True)` for a file opened with newline="":
    iterate for records (lists of fields); `line_num` counts the lines read so far."""

    def __init__(self, fh: TextIO, delimiter: str) -> None:
        self.fh, self.delimiter = fh, delimiter
        self.buf, self.pos, self.eof = "", 0, False
        self.line_num = 0
        self._unquoted_end = re.compile(f"[{re.escape(delimiter)}\r\n]")

    def __iter__(self) -> Reader:
        return self

    def _more(self) -> bool:
        """The unread rest of the buffer plus the next block; False at the end of the file."""
        if self.eof:
            return False
        block = self.fh.read(BLOCK)
        if not block:
            self.eof = True
            return False
        self.buf, self.pos = self.buf[self.pos:] + block, 0
        return True

    def _ensure(self, n: int) -> bool:
        while len(self.buf) - self.pos < n:
            if not self._more():
                return False
        return True

    def _newline(self) -> None:
        """Past the line break at `pos` (`\\r\\n`, `\\r` or `\\n`)."""
        if self.buf[self.pos] == "\r":
            self.pos += 1
            if self._ensure(1) and self.buf[self.pos] == "\n":
                self.pos += 1
        else:
            self.pos += 1
        self.line_num += 1

    def __next__(self) -> list[str]:
        if not self._ensure(1):
            raise StopIteration
        if self.buf[self.pos] in "\r\n":  # an empty line: csv.reader's []
            self._newline()
            return []
        fields: list[str] = []
        while True:
            field, end = self._quoted() if self.buf[self.pos] == '"' else self._unquoted()
            fields.append(field)
            if end != "field":
                if end == "eof":
                    self.line_num += 1  # the last line, without a line break
                return fields
            if not self._ensure(1):  # a delimiter at the very end: one more, empty field
                fields.append("")
                self.line_num += 1
                return fields

    def _unquoted(self) -> tuple[str, str]:
        pieces: list[str] = []
        while True:
            m = self._unquoted_end.search(self.buf, self.pos)
            if m is None:
                pieces.append(self.buf[self.pos:])
                self.buf, self.pos = "", 0
                if not self._more():
                    return "".join(pieces), "eof"
                continue
            pieces.append(self.buf[self.pos:m.start()])
            self.pos = m.start()
            if self.buf[self.pos] == self.delimiter:
                self.pos += 1
                return "".join(pieces), "field"
            self._newline()
            return "".join(pieces), "record"

    def _quoted(self) -> tuple[str, str]:
        self.pos += 1  # the opening quote
        pieces: list[str] = []
        while True:
            i = self.buf.find('"', self.pos)
            if i < 0:
                pieces.append(self.buf[self.pos:])
                self.buf, self.pos = "", 0
                if not self._more():
                    raise csv.Error("unexpected end of data")
                continue
            pieces.append(self.buf[self.pos:i])
            self.pos = i + 1
            at_end = not self._ensure(1)
            if not at_end and self.buf[self.pos] == '"':  # "" inside quotes: one quote
                pieces.append('"')
                self.pos += 1
                continue
            field = "".join(pieces)
            del pieces[:]  # the slices go before the caller makes its own copies
            self.line_num += _line_breaks(field)
            if at_end:
                return field, "eof"
            c = self.buf[self.pos]
            if c == self.delimiter:
                self.pos += 1
                return field, "field"
            if c in "\r\n":
                self._newline()
                return field, "record"
            raise csv.Error(f"'{self.delimiter}' expected after '\"'")


__all__ = ["LONG_LINE", "Reader", "has_long_line"]
