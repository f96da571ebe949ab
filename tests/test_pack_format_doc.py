"""docs/MULTI.md's pack table says which format versions modlens writes and reads; they are the code's
(once the doc said 2 while the code wrote and read 3)."""
from __future__ import annotations

import json
import re
from pathlib import Path

from modlens.study import folder, pack

DOC = Path(__file__).resolve().parents[1] / "docs" / "MULTI.md"


def pack_format_row() -> str:
    rows = [line for line in DOC.read_text(encoding="utf-8").splitlines()
            if line.startswith("| `format`, `format_version` |") and pack.FORMAT in line]
    assert len(rows) == 1, rows
    return rows[0]


def test_the_doc_names_the_pack_versions_the_code_writes_and_reads(tmp_path):
    row = pack_format_row()
    reads = re.search(r"reads versions up to `(\d+)`", row)
    assert reads and int(reads.group(1)) == pack.FORMAT_VERSION, row
    written = sorted(int(v) for v in re.findall(r"`(\d+)`", row.split("reads versions")[0]))
    folder.init_folder(tmp_path / "study", "pilot")  # no item set: the plain pack's version
    pack.write(folder.load_folder(tmp_path / "study"), tmp_path / "pilot.modlens")
    plain = json.loads((tmp_path / "pilot.modlens").read_text(encoding="utf-8"))["format_version"]
    assert written == [plain, pack.ITEMSET_VERSION], row
