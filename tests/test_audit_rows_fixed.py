"""The chunk pipeline was made faster (2026-11-27) without changing a single row. The same three
small audits (Davidson with a resume; a comments file with normalization, generated variants and
score errors) export exactly the rows the pipeline wrote before the change (`audit_rows.py`)."""
from __future__ import annotations

import json
from pathlib import Path

from audit_rows import audit_rows, digests

GOLDEN = Path(__file__).parent / "fixtures" / "audit_rows" / "golden.json"


def test_an_audit_writes_the_rows_it_wrote_before_the_pipeline_was_batched(tmp_path):
    golden = json.loads(GOLDEN.read_text(encoding="utf-8"))
    got = digests(audit_rows(tmp_path))
    filled = {name for name, d in golden.items() if d["rows"]}
    assert {"comments", "labels", "gold_labels", "scores", "normalizations", "variants", "run_items"} <= filled
    for name in sorted(filled):  # tables a change adds later, empty here, are not this test's business
        assert got.get(name) == golden[name], f"{name}: rows differ from before (python tests/audit_rows.py OUT to diff)"
