"""The audit and the report count the same row of an attack. An attack logged twice with an unknown
result (the target had no score for some candidates: rows 1 and 2, two final texts), then run again with
the target answering, ends on row 1's text and parameters: the audit rewrites row 1's record in place,
known now, and reuses it from then on. The report counted the newest row (row 2, still unknown, "the
target had no score for N candidates"), a result the audit never counts again. One rule now decides
for both (`perturb.attack_record.counting_attack`): the newest row whose result is known, else the
newest row."""
from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any, Sequence

from modlens.analysis import attacks as attack_analysis
from modlens.analysis.attack_examples import newest_attacks
from modlens.analysis.data import load
from modlens.audit import AttackSpec, run_audit
from modlens.detectors.base import Detector

SEED = "you are an idiot"


class Moody(Detector):
    """The same model (one version) on three days: `down`, it answers only the seed; `some`, only
    texts in plain ASCII (a tokenizer that fails on homoglyphs), 0.8 to those but the seed; `ranking`,
    every text of four words at 0.9 and none of the ranking's shorter deletion texts (so the search
    ranks by the heuristic, as on the days before, and its parameters are theirs)."""
    name, version, labels, toxicity_label = "moody", "1", ("toxicity",), "toxicity"

    def __init__(self, mode: str):
        self.mode = mode

    def score(self, texts: Sequence[str]) -> list[Any]:
        out: list[Any] = []
        for t in texts:
            if t == SEED or (self.mode == "ranking" and len(t.split()) == 4):
                out.append({"toxicity": 0.9})
            elif self.mode == "some" and t.isascii():
                out.append({"toxicity": 0.8})
            else:
                out.append(None)
        return out


def _rows(db: Path) -> list[tuple[int, str, dict[str, Any]]]:
    con = sqlite3.connect(db)
    try:
        return [(i, t, json.loads(a)) for i, t, a in con.execute(
            "SELECT v.variant_id, t.text, v.attack_json FROM variants v JOIN texts t USING (text_id) "
            "WHERE v.attack_json IS NOT NULL ORDER BY v.variant_id")]
    finally:
        con.close()


def test_the_report_counts_the_row_the_audit_reuses(tmp_path):
    data, db = tmp_path / "seeds.csv", tmp_path / "log.sqlite"
    data.write_text(f"text,toxic\n{SEED},1\n", encoding="utf-8")

    def audit(mode: str) -> dict[str, int]:
        return run_audit(str(data), db=db, detector_objects={"t": Moody(mode)}, progress=False,
                         attack=AttackSpec("tae", ensemble=[], strategies=["char_swap", "char_delete", "homoglyph"])
                         ).attacks["t"]

    assert audit("down")["unknown"] == 1
    assert audit("some")["unknown"] == 1
    assert audit("ranking") == {"success": 0, "failed": 1, "skipped": 0, "reused": 0, "unknown": 0}
    (one, seed_text, first), (two, other_text, second) = _rows(db)
    assert seed_text == SEED != other_text
    assert first["unscored_by_target"] == 0 and second["unscored_by_target"] > 0  # row 1 rewritten, known now

    assert audit("ranking")["reused"] == 1  # the audit counts row 1 ...
    kept, set_aside = newest_attacks(load(db))
    assert [v["variant_id"] for v in kept] == [one], kept  # ... and so does the report
    assert set_aside == {one: 1}
    (row,) = attack_analysis.analyze(load(db))["rows"]
    assert row["failed"] == 1 and row["set_aside"] == 1
    assert not any("had no score" in reason for reason in row["failure_reasons"]), row["failure_reasons"]
