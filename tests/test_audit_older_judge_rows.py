"""A failed attack an older modlens logged before a judge's missing score was told apart from a judge's
no (`unscored_by_ensemble`) says "every flipping candidate was rejected by the judges" and counts the
flips a judge could not score among `rejected_by_ensemble`: what its judges did is unknown. An audit
run again redoes it (its result is not known, so the attack is not done); the new record replaces the
old one where the attack lands on the same row (same text and parameters), else the report counts
the new row and sets the old one aside (`newest_attacks`); a row whose judges said nothing (no
judges) is still reused. The log here is a real audit's, its rows rewritten as the older
modlens wrote them."""
from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from modlens.analysis import attacks as attack_analysis
from modlens.analysis.data import load
from modlens.cli import main

TOXIC = "you stupid idiot"
OLD_REASON = "every flipping candidate was rejected by the judges"


def _audit(seeds: Path, db: Path, capsys: pytest.CaptureFixture[str], args: list[str], code: int) -> dict[str, int]:
    assert main(["audit", str(seeds), "--quiet", "--db", str(db), "--attack", "tae", "--recipe", "deepwordbug",
                 "--target", "profanity-check", *args]) == code
    return json.loads(capsys.readouterr().out)["attacks"]["profanity-check"]


def _attacks(db: Path) -> list[tuple[int, dict[str, Any]]]:
    con = sqlite3.connect(db)
    try:
        return [(i, json.loads(a)) for i, a in
                con.execute("SELECT variant_id, attack_json FROM variants WHERE attack_json IS NOT NULL")]
    finally:
        con.close()


def _as_older_modlens_wrote_it(db: Path) -> None:
    """Each attack record as modlens wrote it before `unscored_by_ensemble`: a judge's missing score
    counted as its no, in `rejected_by_ensemble`, the reason and the judges_agree constraint."""
    con = sqlite3.connect(db)
    for vid, a in _attacks(db):
        unscored = a.pop("unscored_by_ensemble")
        assert a.pop("unscored_by_target") == 0  # a later field still; the target scored every candidate
        a["rejected_by_ensemble"] += unscored
        judged = (a.get("constraints") or {}).get("judges_agree")
        if judged:
            judged["rejected"] += judged.pop("unscored")
            last = judged.pop("last_unscored")
            judged["last_rejection"] = judged["last_rejection"] or last
        if a["status"] == "failed" and unscored:
            a["reason"] = OLD_REASON
        con.execute("UPDATE variants SET attack_json = ? WHERE variant_id = ?", (json.dumps(a), vid))
    con.commit()
    con.close()


@pytest.fixture
def seeds(tmp_path: Path) -> Path:
    path = tmp_path / "seeds.csv"
    path.write_text(f"text,toxic\n{TOXIC},1\n", encoding="utf-8")
    return path


def test_an_older_failed_row_whose_judge_had_no_score_is_redone(tmp_path, seeds, capsys):
    table = tmp_path / "scores.csv"
    table.write_text(f"text,score\n{TOXIC},0.9\n", encoding="utf-8")  # the seed only: no score for any flip
    db = tmp_path / "log.sqlite"
    args = ["--detectors", "profanity-check", f"cached:{table}", "--ensemble", "cached"]
    first = _audit(seeds, db, capsys, args, 1)  # the table has no score for the attack's text: exit 1
    assert first["failed"] == 1 and first["reused"] == 0 and first["unknown"] == 1  # a flip no judge could score
    _as_older_modlens_wrote_it(db)
    ((_, old),) = _attacks(db)
    assert old["reason"] == OLD_REASON and old["rejected_by_ensemble"] > 0 and "unscored_by_ensemble" not in old
    (row,) = attack_analysis.analyze(load(db))["rows"]
    assert row["judge_not_told_apart"] == 1

    again = _audit(seeds, db, capsys, args, 1)
    assert again["reused"] == 0 and again["failed"] == 1  # attacked again, not taken from the older row
    # the same text and parameters: the same row, its record now the one the attack gives
    ((_, new),) = _attacks(db)
    assert new["reason"] == "every flipping candidate lacked a judge's score" and new["unscored_by_ensemble"] > 0
    assert new["rejected_by_ensemble"] == 0 and new["unscored_by_ensemble"] == old["rejected_by_ensemble"]
    (row,) = attack_analysis.analyze(load(db))["rows"]
    assert (row["judge_not_told_apart"], row["judge_no_score"], row["judge_rejected"]) == (0, 1, 0)
    assert row["failed"] == 1 and not row.get("set_aside")

    # a flip a judge had no score for leaves the result unknown (it may have passed the judges): each
    # run attacks it again, says so (exit 1), and lands on the same row
    third = _audit(seeds, db, capsys, args, 1)
    assert (third["reused"], third["failed"], third["unknown"]) == (0, 1, 1)
    assert _attacks(db) == [(_attacks(db)[0][0], new)]


def test_an_older_row_without_judges_is_reused(tmp_path, seeds, capsys):
    """No judges: the older record says all there is (its rejected_by_ensemble is 0), so the rerun
    spends no query on it."""
    db = tmp_path / "log.sqlite"
    args = ["--detectors", "profanity-check", "--no-ensemble"]
    first = _audit(seeds, db, capsys, args, 0)
    assert first["reused"] == 0 and first["success"] + first["failed"] == 1
    _as_older_modlens_wrote_it(db)
    again = _audit(seeds, db, capsys, args, 0)
    assert again == {"success": 0, "failed": 0, "skipped": 0, "reused": 1, "unknown": 0}
    assert len(_attacks(db)) == 1
