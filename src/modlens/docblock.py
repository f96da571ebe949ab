"""The generated part of a hand-written doc: what lies between `<!-- BEGIN GENERATED ... -->` and
`<!-- END GENERATED -->` is written by a generator (docs/CLI.md from the parsers, docs/DATA.md
from the table description) and checked by a test; the prose around it stays as written."""
from __future__ import annotations

import re
from pathlib import Path

BLOCK = re.compile(r"(<!-- BEGIN GENERATED[^>]*-->\n)(.*)(<!-- END GENERATED -->)", re.S)


def write_block(doc: Path, rendered: str) -> None:
    """Replace the generated block of `doc` with `rendered`."""
    text = doc.read_text(encoding="utf-8")
    if not BLOCK.search(text):
        raise SystemExit(f"{doc} has no <!-- BEGIN GENERATED --> ... <!-- END GENERATED --> block")
    doc.write_text(BLOCK.sub(lambda m: m.group(1) + rendered + m.group(3), text), encoding="utf-8")
