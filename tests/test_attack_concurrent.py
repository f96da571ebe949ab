"""Attacks an audit runs at once (its workers share one attack per target) each record their own
judge queries and their own judges' verdicts: a rerun of the same attack alone gives the same."""
import json

import pytest

from modlens.audit import AttackSpec, run_audit
from modlens.detectors import registry
from modlens.detectors.base import Detector
from modlens.perturb import recipes
from log_helpers import sql


class LengthJudge(Detector):
    """A deterministic judge: 40 characters or more is toxic (so it turns down short disguises)."""
    name, version, labels, toxicity_label = "length", "test-1", ("toxicity",), "toxicity"

    def score(self, texts):
        return [{"toxicity": min(1.0, len(t) / 80)} for t in texts]


@pytest.mark.slow  # a whole audit, then each attack again alone
def test_concurrent_attacks_record_their_own_judge_queries_and_verdicts(data_dir, tmp_path):
    prof = registry.create("profanity-check")
    db = tmp_path / "log.sqlite"
    spec = AttackSpec("tae", targets=["profanity-check"], max_queries=60, workers=4)
    run_audit(str(data_dir / "noisyhate" / "dev.csv"), db=db, limit=40, progress=False, attack=spec,
              detector_objects={"profanity-check": prof, "length": LengthJudge()})
    rows = sql(db, "SELECT t.text, s.text AS source, v.seed, v.attack_json FROM variants v "
                   "JOIN texts t ON t.text_id = v.text_id JOIN texts s ON s.text_id = v.source_text_id "
                   "WHERE v.attack_json IS NOT NULL")
    attacked = [r for r in rows if json.loads(r["attack_json"])["status"] != "skipped"]
    assert len(attacked) >= 10
    alone = recipes.create("char_greedy").build(prof, judges=[LengthJudge()], max_queries=60,
                                                seed=attacked[0]["seed"], target_key="profanity-check")
    for r in attacked:
        logged = json.loads(r["attack_json"])
        again = alone.run(r["source"])
        assert (again.text, again.attack["status"]) == (r["text"], logged["status"])
        assert logged["judge_queries"] == again.attack["judge_queries"], r["source"]
        ensemble = logged["constraints"]["ensemble"]
        if logged["status"] == "success":  # the judges' verdict on this very text
            assert ensemble["judges"]["length"]["toxicity"] == min(1.0, len(r["text"]) / 80)
        assert ensemble == again.attack["constraints"]["ensemble"]
