"""Fusion section (DUO): the Error Finding Rate per detector × content type × fusion on
seven planted cases and two detectors, every count derived by hand in the comments below (EFR =
fused cases the detector misses / fused cases whose seed sentence it finds toxic, scored here)."""
from __future__ import annotations

import json

import pytest
from statsmodels.stats.proportion import proportion_confint

from modlens.analysis.report import report_from_db, to_json
from modlens.fusion.case import FusedCase
from modlens.media import MediaInput
from modlens.studylog.records import media as media_records
from modlens.studylog.store import StudyLog

SEEDS = {"S1": ("women", "trash"), "S2": ("gays", "vermin"), "S3": ("people", "nice"), "S4": ("pills", "cheap")}
# case number -> (content type, seed, fusion)
CASES = {1: ("abuse_hate", "S1", "T+E"), 2: ("abuse_hate", "S1", "T+I"), 3: ("abuse_hate", "S2", "T+E"),
         4: ("abuse_hate", "S2", "T+I"), 5: ("abuse_hate", "S3", "T+E"), 6: ("spam", "S4", "T+I"),
         7: ("spam", "S4", "T+E")}
# detector -> (threshold, seed scores, fused-case scores); "failed": the detector errored,
# "unread": it could not read the media here, absent: not scored yet
PLANTED = {
    "det-a": (0.5, {"S1": 0.9, "S2": 0.8, "S3": 0.2, "S4": 0.6},
              {1: 0.3, 2: 0.6, 3: 0.1, 4: "failed", 5: 0.1, 6: 0.4, 7: "unread"}),
    "det-b": (0.7, {"S1": 0.9, "S2": 0.65, "S3": 0.2, "S4": 0.75},
              {1: 0.75, 2: 0.5, 3: 0.1, 4: 0.1, 5: 0.9, 7: 0.69}),
}


def _row(det_id, value):
    if value == "failed":
        return (det_id, None, None, 1.0, "boom", {})
    if value == "unread":
        return (det_id, None, None, 1.0, None, {"unscored_media": ["audio"]})
    return (det_id, {"toxic": value}, value, 1.0, None, {})


@pytest.fixture(scope="module")
def section(tmp_path_factory):
    db = tmp_path_factory.mktemp("fusion") / "f.sqlite"
    with StudyLog(db) as log:
        with log.transaction():
            ids = {}
            for n, (ct, seed, fusion) in CASES.items():
                a, b = SEEDS[seed]
                case = FusedCase(ct, "A are B", a, "are", b, f"{a} are {b}", fusion, f"{a} are", (),
                                 MediaInput(a), MediaInput(b), {"n": n})
                ids[n] = media_records.add_fused_case(log, case, {}, None)
            rows = []
            for name, (threshold, seed_scores, case_scores) in PLANTED.items():
                det_id = log.ensure_detector(name, "1", "toxic", threshold, {})
                for n, (_, seed, _) in CASES.items():
                    rows.append((ids[n], "seed", _row(det_id, seed_scores[seed])))
                    if n in case_scores:
                        rows.append((ids[n], "case", _row(det_id, case_scores[n])))
            media_records.add_case_scores_many(log, rows)
    s = json.loads(to_json(report_from_db(db)))["sections"]["fusion"]
    return {d["detector"]: d for d in s["detectors"]}


def _cells(det):
    return {(r["content_type"], r["fusion"]): r for r in det["efr"]}


def test_oracle_per_content_type(section):
    # det-a (≥ 0.5): abuse_hate seeds S1 .9 ✓, S2 .8 ✓, S3 .2 ✗ -> 2 of 3; spam S4 .6 ✓ -> 1 of 1
    # det-b (≥ 0.7): S1 .9 ✓, S2 .65 ✗, S3 .2 ✗ -> 1 of 3; S4 .75 ✓ -> 1 of 1
    for name, abuse in (("det-a", 2), ("det-b", 1)):
        got = {r["content_type"]: (r["seeds"], r["scored"], r["toxic"]) for r in section[name]["oracle"]}
        assert got == {"abuse_hate": (3, 3, abuse), "spam": (1, 1, 1)}, name


def test_error_finding_rate_of_det_a_by_hand(section):
    c = _cells(section["det-a"])
    # abuse_hate T+E: cases 1 (S1), 3 (S2), 5 (S3). S3 is not toxic to det-a: case 5 is not tested.
    #   case 1 .3 < .5 miss, case 3 .1 miss -> 2 errors of 2 = 1.0
    assert (c["abuse_hate", "T+E"]["n"], c["abuse_hate", "T+E"]["errors"], c["abuse_hate", "T+E"]["efr"]) == (2, 2, 1.0)
    assert c["abuse_hate", "T+E"]["seed_not_toxic"] == 1
    # abuse_hate T+I: case 2 .6 ≥ .5 found; case 4 failed (not an error found) -> 0 of 1 = 0.0
    assert (c["abuse_hate", "T+I"]["n"], c["abuse_hate", "T+I"]["errors"], c["abuse_hate", "T+I"]["efr"]) == (1, 0, 0.0)
    assert c["abuse_hate", "T+I"]["failed"] == 1
    # abuse_hate, all fusions: 2 + 0 errors of 2 + 1 tested = 2/3
    every = c["abuse_hate", "all"]
    assert (every["seed_toxic"], every["n"], every["errors"]) == (4, 3, 2) and every["efr"] == pytest.approx(2 / 3)
    assert every["ci"] == pytest.approx(list(proportion_confint(2, 3, method="wilson")))
    # spam T+I: case 6 .4 < .5 -> 1 of 1; T+E: case 7 unread here -> nothing tested, EFR undefined
    assert (c["spam", "T+I"]["n"], c["spam", "T+I"]["errors"], c["spam", "T+I"]["efr"]) == (1, 1, 1.0)
    assert (c["spam", "T+E"]["n"], c["spam", "T+E"]["not_scored_locally"], c["spam", "T+E"]["efr"]) == (0, 1, None)
    assert (c["spam", "all"]["n"], c["spam", "all"]["errors"], c["spam", "all"]["efr"]) == (1, 1, 1.0)
    # baseline, fused case flagged over every abuse_hate case: 1 .3, 2 .6 ✓, 3 .1, 5 .1 scored (4 failed) -> 1 of 4
    (base,) = [b for b in section["det-a"]["baseline"] if (b["content_type"], b["fusion"]) == ("abuse_hate", "all")]
    assert (base["parts"]["case"]["n"], base["parts"]["case"]["toxic"]) == (4, 1)
    assert base["parts"]["case"]["failed_or_missing"] == 1


def test_error_finding_rate_of_det_b_by_hand(section):
    c = _cells(section["det-b"])
    # threshold 0.7: only S1 (abuse_hate) and S4 (spam) are toxic seeds
    # abuse_hate T+E: case 1 .75 found -> 0 of 1 (cases 3, 5 have non-toxic seeds)
    assert (c["abuse_hate", "T+E"]["n"], c["abuse_hate", "T+E"]["errors"], c["abuse_hate", "T+E"]["efr"]) == (1, 0, 0.0)
    assert c["abuse_hate", "T+E"]["seed_not_toxic"] == 2
    # abuse_hate T+I: case 2 .5 < .7 missed -> 1 of 1 (case 4's seed S2 .65 is not toxic to det-b)
    assert (c["abuse_hate", "T+I"]["n"], c["abuse_hate", "T+I"]["errors"], c["abuse_hate", "T+I"]["efr"]) == (1, 1, 1.0)
    # abuse_hate all: 1 error of 2 = 0.5
    assert (c["abuse_hate", "all"]["n"], c["abuse_hate", "all"]["errors"], c["abuse_hate", "all"]["efr"]) == (2, 1, 0.5)
    # spam T+I: case 6 never scored by det-b (not yet); T+E: case 7 .69 < .7 missed -> 1 of 1
    assert (c["spam", "T+I"]["n"], c["spam", "T+I"]["not_scored_yet"], c["spam", "T+I"]["efr"]) == (0, 1, None)
    assert (c["spam", "T+E"]["n"], c["spam", "T+E"]["errors"], c["spam", "T+E"]["efr"]) == (1, 1, 1.0)
    assert (c["spam", "all"]["n"], c["spam", "all"]["errors"], c["spam", "all"]["efr"]) == (1, 1, 1.0)
