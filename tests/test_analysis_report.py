"""The report on logs with known content: synthetic ratings recover the planted thresholds;
sections appear only with their data; HTML is self-contained; attacks and SASS sections."""
import json
import re

import pytest

from modlens.analysis import synthetic
from modlens.analysis.report import render_html, report_from_db, to_json
from modlens.cli import main
from modlens.detectors.base import Detector
from modlens.perturb.base import Variant
from modlens.studylog.store import StudyLog


class LengthDetector(Detector):
    """Test detector: a text of 50 characters or more looks toxic."""
    name, version, labels, toxicity_label = "length", "test-1", ("toxicity",), "toxicity"

    def score(self, texts):
        return [{"toxicity": min(1.0, len(t) / 100)} for t in texts]


@pytest.fixture(scope="module")
def synthetic_report(tmp_path_factory):
    db = tmp_path_factory.mktemp("syn") / "syn.sqlite"
    truth = synthetic.generate(db, synthetic.SyntheticSpec(seed=1))
    return truth, report_from_db(db), db


def test_synthetic_log_recovers_planted_thresholds(synthetic_report):
    """Tolerance: 3 delta-method standard errors of the estimated crossing (about ±0.06 with
    150 comments per platform) plus 0.02 for the bias that rater noise and majority voting add
    (noise moves 'toxic' majorities to 'hard to say' slightly more often than back)."""
    truth, report, _ = synthetic_report
    fit = report["sections"]["people"]["detectors"][0]["attributes"]["toxicity"]
    assert fit["levels"] == ["not toxic", "hard to say", "toxic"]
    for platform, planted in truth["thresholds"].items():
        e = fit["platforms"][platform]
        assert abs(e["crossing_top"] - planted) < 3 * e["crossing_top_se"] + 0.02, (platform, e["crossing_top"], planted)
        assert 0 < e["crossing_top_se"] < 0.05
    got = {p: e["crossing_top"] for p, e in fit["platforms"].items()}
    assert sorted(got, key=got.get) == sorted(truth["thresholds"], key=truth["thresholds"].get)


def test_synthetic_human_section_excludes_what_the_paper_excludes(synthetic_report):
    truth, report, _ = synthetic_report
    h = report["sections"]["human"]
    assert h["excluded"]["gold comment (attention check)"] == 3 * 20
    assert h["excluded"]["inconsistent anchor answers (Table 1)"] > 0
    careless = next(r for r in h["raters"] if r["rater_id"] == truth["careless"][0])
    assert careless["n_gold_wrong"] == 3 and "reject" in careless["tasks"] and careless["excluded_rating_ids"] > 0
    careful = [r for r in h["raters"] if r["rater_id"] not in truth["careless"]]
    assert all(r["n_gold_wrong"] == 0 for r in careful)
    tox = next(a for a in h["attributes"] if a["name"] == "toxicity")
    assert 0.6 < tox["alpha"] < 0.95  # noisy but informative raters
    assert sum(tox["majority"].values()) + tox["decided_by"].get("tie dropped", 0) == tox["n_comments"]


def test_html_is_self_contained_with_methods_and_versions(synthetic_report, tmp_path):
    _, _, db = synthetic_report
    out = tmp_path / "r.html"
    assert main(["report", "--db", str(db), "--out", str(out)]) == 0
    page = out.read_text()
    assert page.count("data:image/png;base64,") >= 2 and "http://" not in page and "https://" not in page
    # numbered in the order of the sections present: 1, 2, … without gaps
    numbers = [int(n) for n in re.findall(r"<h2 id=s-[a-z_]+>(\d+)\. ", page)]
    assert numbers == list(range(1, len(numbers) + 1)) and len(numbers) >= 2
    assert ">1. Human ratings</h2>" in page and ". Detectors vs people, per platform</h2>" in page and "Method." in page
    assert "Muralikumar, Yang and McDonald 2023" in page and "<h2>References</h2>" in page
    assert "seed 00" not in page
    assert "planted-seed1" in page  # detector version shown
    assert "Robustness to perturbation</h2>" not in page  # no variants in this log


def test_empty_log_has_no_sections_and_missing_log_is_an_error(tmp_path, capsys):
    db = tmp_path / "empty.sqlite"
    StudyLog(db).close()
    report = report_from_db(db)
    assert report["sections"] == {}
    assert "no data any section can use" in render_html(report)
    assert main(["report", "--db", str(tmp_path / "nope.sqlite"), "--format", "json"]) == 3
    assert "not found" in capsys.readouterr().err


def test_attack_and_transfer_section(tmp_path):
    db = tmp_path / "a.sqlite"
    with StudyLog(db) as log:
        target = log.ensure_detector("target", "1", "toxicity", 0.5, {})
        other = log.ensure_detector("other", "1", "toxicity", 0.5, {})
        page = log.ensure_page("dataset:x", "x.csv", None, None)
        for i in range(4):
            seed, adv = f"toxic seed {i}", f"t0xic s33d {i}"
            cid = log.add_comment("dataset:x", f"k{i}", page, seed)
            ok = i < 3  # three successes, one failure
            log.add_variant(cid, Variant(adv, "char_attack", {"budget": 3}, 0, source_text=seed, target_detector="target",
                                         attack={"goal": "TAE", "status": "success" if ok else "failed", "queries": 10 * (i + 1)}))
            log.add_score(seed, target, {"toxicity": 0.9}, 0.9, 1, None)
            log.add_score(seed, other, {"toxicity": 0.9}, 0.9, 1, None)  # other judges the seed right: its cell counts it
            log.add_score(adv, target, {"toxicity": 0.2 if ok else 0.7}, 0.2 if ok else 0.7, 1, None)
            log.add_score(adv, other, {"toxicity": 0.3 if i == 0 else 0.8}, 0.3 if i == 0 else 0.8, 1, None)
        cid = log.add_comment("dataset:x", "skip", page, "skipped seed")
        log.add_variant(cid, Variant("skipped seed", "char_attack", {}, 0, target_detector="target",
                                     attack={"goal": "TAE", "status": "skipped"}))
    s = json.loads(to_json(report_from_db(db)))["sections"]
    assert "robustness" not in s  # attack variants are not robustness pairs
    (row,) = s["attacks"]["rows"]
    assert row["attempts"] == 4 and row["success_recorded"] == 0.75 and row["success_verified"] == 0.75
    assert row["queries_per_success"] == 20
    transfer = s["attacks"]["transfer"]["target (TAE)"]
    assert transfer["target"]["rate"] == 1.0 and transfer["other"]["rate"] == pytest.approx(1 / 3)


def test_sass_section_from_an_audit(tmp_path):
    from modlens.audit import run_audit

    f = tmp_path / "sass.csv"
    rows = [("You look too beautiful to work here, sweetheart, honestly it is wasted on this office.", "Sex. Harass.", 0.8),
            ("Boys are better at math.", "Stereotyping", 0.9), ("Hair is long.", "Neutral", 0.0),
            ("It's so freaking crazy that he surfed a 40-foot wave out there today, wow, unbelievable.", "False Positive", 0.1)]
    f.write_text("text,category,human\n" + "".join(f'"{t}",{c},{h}\n' for t, c, h in rows))
    run_audit(str(f), db=tmp_path / "s.sqlite", detector_objects={"length": LengthDetector()}, progress=False)
    # SASS's layout, not the release's bytes: its own block, its figures, nothing set beside the paper
    (s,) = report_from_db(tmp_path / "s.sqlite")["sections"]["sass"]["sources"]
    assert s["source"].startswith("dataset:file-") and not s["release"] and s["paper"] is None
    (d,) = s["detectors"]
    # length >= 50 chars is "toxic": one true positive, one false positive, one false negative
    assert (d["tp"], d["fp"], d["fn"]) == (1, 1, 1) and d["f1"] == pytest.approx(0.5)
    assert s["human_mean_by_category"]["Stereotyping"] == 0.9 and s["share_toxic"] == 0.5
