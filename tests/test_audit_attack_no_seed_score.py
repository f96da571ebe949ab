"""An attack whose target had no score for the seed (its call failed: a model that crashed on the batch)
is logged as `skipped`, reason "target has no score for the seed": the attack never ran, its result is
unknown. The audit says its error rows are scored again by the same command, and they are; the attack
must be too, not counted as `reused` with the skip kept for good."""
from __future__ import annotations

import json
import sqlite3
from typing import Any, Sequence

from modlens.analysis import attacks as attack_analysis
from modlens.analysis.data import load
from modlens.audit import AttackSpec, run_audit
from modlens.detectors.base import Detector


class CrashesWhileDown(Detector):
    """A model that raises on every call while `down` (out of memory, say), and answers once it is
    back: 'idiot' is toxic to it, anything else is not."""
    name, version, labels, toxicity_label = "flaky", "1", ("toxicity",), "toxicity"

    def __init__(self, down: bool):
        self.down = down

    def score(self, texts: Sequence[str]) -> list[Any]:
        if self.down:
            raise RuntimeError("model crashed")
        return [{"toxicity": 0.9 if "idiot" in t.lower() else 0.1} for t in texts]


def _attacks(db) -> list[dict[str, Any]]:
    con = sqlite3.connect(db)
    try:
        return [json.loads(a) for (a,) in con.execute(
            "SELECT attack_json FROM variants WHERE attack_json IS NOT NULL ORDER BY variant_id")]
    finally:
        con.close()


def test_an_attack_the_target_could_not_score_the_seed_of_is_attacked_again(tmp_path):
    data, db = tmp_path / "seeds.csv", tmp_path / "log.sqlite"
    data.write_text("text,toxic\nyou are an idiot,1\n", encoding="utf-8")

    def audit(down: bool) -> Any:
        return run_audit(str(data), db=db, detector_objects={"t": CrashesWhileDown(down)}, progress=False,
                         attack=AttackSpec("tae", ensemble=[], strategies=["char_swap", "char_delete", "homoglyph"]))

    first = audit(down=True)
    assert first.attacks["t"] == {"success": 0, "failed": 0, "skipped": 1, "reused": 0, "unknown": 1}
    assert [(a["status"], a["reason"]) for a in _attacks(db)] == [("skipped", "target has no score for the seed")]
    assert first.score_errors["t"]["errors"] == 1  # the seed's own score: an error, said

    again = audit(down=False)
    assert again.score_errors == {}  # the seed scored this time
    assert again.attacks["t"]["reused"] == 0, again.attacks  # the attack too: it never ran
    assert again.attacks["t"]["success"] == 1 and again.attacks["t"]["unknown"] == 0
    assert [a["status"] for a in _attacks(db)] == ["skipped", "success"]
    (row,) = attack_analysis.analyze(load(db))["rows"]  # the report counts the attack's result
    assert (row["attempts"], row["skipped"], row["set_aside"]) == (1, 0, 1)

    third = audit(down=False)
    assert third.attacks["t"] == {"success": 0, "failed": 0, "skipped": 0, "reused": 1, "unknown": 0}  # now done: kept


class AnswersOnlyTheSeed(Detector):
    """A model that crashes on every text but the seed while `down` (a tokenizer that raises on the
    attack's edited words, say): the attack's candidates get no score from the target."""
    name, version, labels, toxicity_label = "picky", "1", ("toxicity",), "toxicity"
    seed = "you are an idiot"

    def __init__(self, down: bool):
        self.down = down

    def score(self, texts: Sequence[str]) -> list[Any]:
        if self.down and any(t != self.seed for t in texts):
            raise RuntimeError("model crashed")
        return [{"toxicity": 0.9 if "idiot" in t.lower() else 0.1} for t in texts]


def test_an_attack_whose_candidates_the_target_could_not_score_says_so_and_is_attacked_again(tmp_path):
    """Not "no candidate flipped the target": none was scored. The record counts them
    (`unscored_by_target`), and the result being unknown, a rerun attacks again."""
    data, db = tmp_path / "seeds.csv", tmp_path / "log.sqlite"
    data.write_text(f"text,toxic\n{AnswersOnlyTheSeed.seed},1\n", encoding="utf-8")

    def audit(down: bool) -> Any:
        return run_audit(str(data), db=db, detector_objects={"t": AnswersOnlyTheSeed(down)}, progress=False,
                         attack=AttackSpec("tae", ensemble=[], strategies=["char_swap", "char_delete", "homoglyph"]))

    first = audit(down=True)
    assert first.attacks["t"]["failed"] == first.attacks["t"]["unknown"] == 1
    (a,) = _attacks(db)
    # every candidate: all texts sent but the seed and the deletion ranking's (one per word; unanswered
    # too, so the ranking fell back to the heuristic), which are not candidates
    assert a["ranking"] == "heuristic"
    assert a["status"] == "failed" and a["unscored_by_target"] == a["queries"] - 1 - a["n_words"] > 0
    assert a["reason"] == f"the target had no score for {a['unscored_by_target']} candidates", a["reason"]

    again = audit(down=False)
    assert again.attacks["t"]["reused"] == 0 and again.attacks["t"]["success"] == 1
    new = _attacks(db)[-1]
    assert new["status"] == "success" and new["unscored_by_target"] == 0
    assert audit(down=False).attacks["t"]["reused"] == 1
