"""Normalization section (NoisyHate, the paper's Table 3 rule) against routes other than
`analysis/normalization.py`: five pairs whose restored words are counted by hand below, and the
shipped NoisyHate dev half's recorded Google / Bing results per perturbation type against the
CSV's own `google_correct` / `bing_correct` columns."""
from __future__ import annotations

import json
from collections import defaultdict

import pytest

from modlens.analysis.report import render_html, report_from_db, to_json
from oracle_helpers import audit_noisyhate_recorded
from modlens.rows import Variant
from modlens.studylog.store import StudyLog

# (perturbed text, position, clean word, types, normalizer output or None, google_correct, bing_correct)
PAIRS = [
    ("you are an idi0t", 3, "idiot", "SpecialChar", "you are an Idiot", "1", "0"),       # restored (case ignored)
    ("what a looooser", 2, "loser", "RepeatChar", "what a looser", "0", "0"),            # not restored
    ("sh ut up now", 0, "shut", "SpecialChar|MixedCase", "shut up now", "1", "1"),      # restored
    ("go away DuMbAsS", 2, "dumbass", "MixedCase", "go away", "1", ""),                 # position past the end
    ("u r dumb", 0, "you", "Abbr", None, "0", "1"),                                     # never normalized
]


def test_normalization_accuracy_equals_a_hand_count(tmp_path):
    db = tmp_path / "hand.sqlite"
    with StudyLog(db) as log:
        page = log.ensure_page("dataset:hand", "hand.csv", None, None)
        for i, (pert, pos, word, types, normalized, google, bing) in enumerate(PAIRS):
            clean = f"clean sentence {i}"
            cid = log.add_comment("dataset:hand", f"k{i}", page, clean)
            log.add_variant(cid, Variant(pert, "human:test", {"position": pos, "clean_word": word, "types": types}, 0,
                                         source_text=clean))
            if normalized is not None:
                log.add_normalization(pert, "norm", "1", normalized, [])
            log.add_label(cid, "google_correct", google, "dataset:hand")
            if bing:
                log.add_label(cid, "bing_correct", bing, "dataset:hand")
    (block,) = json.loads(to_json(report_from_db(db)))["sections"]["normalization"]["sources"]
    assert block["source"] == "dataset:hand" and not block["release"]
    systems = block["systems"]

    def acc(system):
        return {t: (c["accuracy"], c["n"]) for t, c in systems[system].items()}
    # norm@1, the four normalized pairs: ✓ ✗ ✓ ✗ -> 2/4; SpecialChar rows 1, 3 ✓✓; RepeatChar row 2 ✗;
    # MixedCase rows 3 ✓, 4 ✗
    assert acc("norm@1") == {"all": (0.5, 4), "SpecialChar": (1.0, 2), "RepeatChar": (0.0, 1), "MixedCase": (0.5, 2)}
    # Google as recorded, all five: 1 0 1 1 0 -> 3/5; SpecialChar 1, 1; RepeatChar 0; MixedCase 1, 1; Abbr 0
    assert acc("Google (recorded)") == {"all": (0.6, 5), "SpecialChar": (1.0, 2), "RepeatChar": (0.0, 1),
                                        "MixedCase": (1.0, 2), "Abbr": (0.0, 1)}
    # Bing as recorded, row 4 has none: 0 0 1 . 1 -> 2/4; SpecialChar 0, 1; RepeatChar 0; MixedCase 1; Abbr 1
    assert acc("Bing (recorded)") == {"all": (0.5, 4), "SpecialChar": (0.5, 2), "RepeatChar": (0.0, 1),
                                      "MixedCase": (1.0, 1), "Abbr": (1.0, 1)}


def test_noisyhate_recorded_spell_checkers_per_type_from_the_csv(data_dir, tmp_path):
    db, rows = audit_noisyhate_recorded(data_dir, tmp_path)
    # one normalized text, so the section (shown only once a modlens normalizer ran) is there; the identity
    # normalizer leaves the perturbed word, so this pair is not restored
    with StudyLog(db) as log:
        log.add_normalization(rows[0]["perturbed"], "identity", "1", rows[0]["perturbed"], [])
    (block,) = json.loads(to_json(report_from_db(db)))["sections"]["normalization"]["sources"]
    assert block["source"] == "dataset:noisyhate" and block["release"]
    systems = block["systems"]
    assert systems["identity@1"]["all"] == {"accuracy": 0.0, "n": 1}
    hits: dict[tuple[str, str], list[bool]] = defaultdict(list)
    for r in rows:
        for col, system in (("google_correct", "Google (recorded)"), ("bing_correct", "Bing (recorded)")):
            for t in ["all", *r["types"].split("|")]:
                hits[(system, t)].append(r[col] == "1")
    assert len(hits[("Google (recorded)", "all")]) == 588
    for (system, t), h in hits.items():
        cell = systems[system][t]
        assert (cell["n"], cell["accuracy"]) == (len(h), pytest.approx(sum(h) / len(h), abs=1e-12)), (system, t)


def _log_pairs(log, platform: str, pairs, start: int = 0) -> None:
    page = log.ensure_page(platform, f"{platform}.csv", None, None)
    for i, (pert, pos, word, types, normalized, google, _bing) in enumerate(pairs, start):
        clean = f"clean sentence {i}"
        cid = log.add_comment(platform, f"k{i}", page, clean)
        log.add_variant(cid, Variant(pert, "human:test", {"position": pos, "clean_word": word, "types": types}, 0,
                                     source_text=clean))
        if normalized is not None:
            log.add_normalization(pert, "norm", "1", normalized, [])
        log.add_label(cid, "google_correct", google, platform)


def test_a_noisyhate_layout_file_that_is_not_noisyhate_is_its_own_table(tmp_path):
    """The defect: the section pooled every variant that records a position and a clean word, whatever
    its data set, so an edited NoisyHate (dataset:file-DIGEST) was counted in the table cited as
    NoisyHate's Table 3, its recorded columns as "the dataset authors'" Google and Bing. Each source is
    its own table now, NoisyHate's (dataset:noisyhate) first."""
    db = tmp_path / "two.sqlite"
    with StudyLog(db) as log:
        _log_pairs(log, "dataset:noisyhate", PAIRS[:2])
        _log_pairs(log, "dataset:file-0123456789abcdef", PAIRS[2:], start=2)
    report = json.loads(to_json(report_from_db(db)))
    nh, other = report["sections"]["normalization"]["sources"]
    assert nh["source"] == "dataset:noisyhate" and nh["release"]
    # PAIRS[0] restored, PAIRS[1] not; Google recorded 1, 0
    assert nh["systems"]["norm@1"]["all"] == {"accuracy": 0.5, "n": 2}
    assert nh["systems"]["Google (recorded)"]["all"] == {"accuracy": 0.5, "n": 2}
    assert other["source"] == "dataset:file-0123456789abcdef" and not other["release"]
    # PAIRS[2] restored, PAIRS[3] not (position past the end), PAIRS[4] never normalized; Google 1, 1, 0
    assert other["systems"]["norm@1"]["all"] == {"accuracy": 0.5, "n": 2}
    assert other["systems"]["Google (recorded)"]["all"] == {"accuracy": pytest.approx(2 / 3), "n": 3}
    page = render_html(report_from_db(db))
    assert "file-0123456789abcdef: NoisyHate's layout, not NoisyHate</h3>" in page
