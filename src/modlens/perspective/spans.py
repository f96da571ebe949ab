"""Spans for `spanScores`: sentence boundaries with UTF-16 offsets, as Perspective reports them
(`begin` inclusive, `end` exclusive, counted in UTF-16 code units, as JavaScript strings index)."""
from __future__ import annotations

import re

SENTENCE = re.compile(r"[^.!?\n]*(?:[.!?]+|\n+|$)")


def utf16_len(text: str) -> int:
    return len(text.encode("utf-16-le", "surrogatepass")) // 2


def sentences(text: str) -> list[tuple[int, int, str]]:
    """(begin, end, sentence) per sentence with text in it, offsets in UTF-16 units; a text of one
    sentence is one span covering all of it."""
    out: list[tuple[int, int, str]] = []
    for m in SENTENCE.finditer(text):
        piece = m.group(0)
        if not piece.strip():
            continue
        lead = len(piece) - len(piece.lstrip())
        core = piece.strip()
        start = m.start() + lead
        begin = utf16_len(text[:start])
        out.append((begin, begin + utf16_len(core), core))
    if len(out) <= 1:
        return [(0, utf16_len(text), text)]
    return out
