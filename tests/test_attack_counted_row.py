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


class Flippable(Detector):
    """A target that 'idiot' spelt right makes toxic: any edit of it flips it."""
    name, version, labels, toxicity_label = "flippable", "1", ("toxicity",), "toxicity"

    def score(self, texts: Sequence[str]) -> list[Any]:
        return [{"toxicity": 0.9 if "idiot" in t else 0.1} for t in texts]


class Judge(Detector):
    """A judge at `version`: `answers`, every text is toxic to it (it agrees with each flip); else it
    has a score for the seed only (a call that fails on every other text)."""
    name, labels, toxicity_label = "judge", ("toxicity",), "toxicity"

    def __init__(self, version: str, answers: bool):
        self.version, self.answers = version, answers

    def score(self, texts: Sequence[str]) -> list[Any]:
        return [{"toxicity": 0.9} if self.answers or t == SEED else None for t in texts]


def test_a_judge_of_another_version_is_another_attack_to_the_audit_and_the_same_one_to_the_report(tmp_path):
    """What docs/ANALYSIS.md says of it: the audit reuses a row only when its judges' versions are the
    ones it runs with (`same_attack`), so a new judge version attacks the seed again, logging a row
    beside the first; the report groups an attack's rows without the judges' versions and counts one
    of them, `counting_attack`'s: the newest whose result is known, which is the earlier judge's row
    when the new judge left the new one unknown."""
    data, db = tmp_path / "seeds.csv", tmp_path / "log.sqlite"
    data.write_text(f"text,toxic\n{SEED},1\n", encoding="utf-8")

    def audit(judge: Judge) -> dict[str, int]:
        return run_audit(str(data), db=db, detector_objects={"t": Flippable(), "j": judge}, progress=False,
                         attack=AttackSpec("tae", targets=["t"], ensemble=["j"], recipe="deepwordbug")).attacks["t"]

    assert audit(Judge("1", answers=True))["success"] == 1
    assert audit(Judge("1", answers=True))["reused"] == 1
    assert audit(Judge("2", answers=False)) == {"success": 0, "failed": 1, "skipped": 0, "reused": 0, "unknown": 1}
    (first, _, a1), (second, _, a2) = _rows(db)
    assert a1["status"] == "success" and a2["status"] == "failed" and a2["unscored_by_ensemble"] > 0
    kept, set_aside = newest_attacks(load(db))
    assert [v["variant_id"] for v in kept] == [first] and set_aside == {first: 1}  # judge 1's success counts
    assert audit(Judge("2", answers=False))["unknown"] == 1  # while the audit with judge 2 attacks again

    assert audit(Judge("3", answers=True))["success"] == 1  # a third version: known, and the newest
    kept, set_aside = newest_attacks(load(db))
    assert [v["variant_id"] for v in kept] == [max(i for i, _, _ in _rows(db))] and set_aside[kept[0]["variant_id"]] >= 2
