"""HateCheck by functionality on the shipped suite, audited with the offline profanity-check
detector and checked against a direct computation from the suite's CSV; and the report's
`skipped` reasons on an empty and on a partial log."""
import csv
import re
from collections import defaultdict

import pytest

from modlens.analysis import hatecheck
from modlens.analysis.report import render_html, report_from_db
from modlens.audit import run_audit
from modlens.cli import main
from modlens.studylog.store import StudyLog


@pytest.fixture(scope="module")
def audited(tmp_path_factory, data_dir):
    db = tmp_path_factory.mktemp("hc") / "hc.sqlite"
    run_audit("hatecheck", db=db, detectors=["profanity-check"], progress=False)
    return db, report_from_db(db)


@pytest.fixture(scope="module")
def direct(data_dir):
    """Per-functionality, per-target and total accuracy, computed from the CSV and the detector itself."""
    from profanity_check import predict_prob

    with open(data_dir / "hatecheck" / "test_suite_cases.csv", encoding="utf-8", newline="") as fh:
        cases = list(csv.DictReader(fh))
    probs = predict_prob([c["test_case"].strip() for c in cases])
    right: dict[tuple[str, str], list[bool]] = defaultdict(list)
    for c, p in zip(cases, probs):
        ok = (p >= 0.5) == (c["label_gold"] == "hateful")
        right["functionality", c["functionality"]].append(ok)
        right["total", c["label_gold"]].append(ok)
        right["total", "all"].append(ok)
        if c["target_ident"]:
            right["target", c["target_ident"]].append(ok)
    return cases, right


def test_table_per_functionality_matches_a_direct_computation(audited, direct):
    _, report = audited
    cases, right = direct
    (s,) = report["sections"]["hatecheck"]["sources"]
    assert s["source"] == "dataset:hatecheck" and s["release"]
    (det,) = s["detectors"]
    assert det["detector"] == "profanity-check" and s["n_cases"] == len(cases) == det["n_scored"]
    rows = s["functionalities"]
    assert [r["key"] for r in rows] == list(hatecheck.FUNCTIONALITIES)  # all 29, in the paper's order
    for r in rows:
        hits = right["functionality", r["key"]]
        cell = r["detectors"][det["label"]]
        assert (r["n"], cell["n"]) == (len(hits), len(hits))
        assert cell["accuracy"] == pytest.approx(sum(hits) / len(hits)), r["key"]
        assert cell["ci"][0] <= cell["accuracy"] <= cell["ci"][1]
        assert r["gold"] == ("hateful" if r["key"].endswith("_h") else "non-hateful")
    for kind, table in (("target", s["targets"]), ("total", s["totals"])):
        assert {r["key"] for r in table} == {k for t, k in right if t == kind}
        for r in table:
            hits = right[kind, r["key"]]
            assert r["detectors"][det["label"]]["accuracy"] == pytest.approx(sum(hits) / len(hits)), (kind, r["key"])


def test_hatecheck_audit_fills_the_labelled_section_per_target(audited):
    _, report = audited
    (src,) = report["sections"]["labelled"]["sources"]
    assert src["source"] == "dataset:hatecheck" and src["n"] == 3728 and src["positives"] == 2563
    (d,) = src["detectors"]
    targets = {g["value"]: g["n"] for g in d["groups"]["target_ident"]}
    assert targets["women"] == 509 and len(targets) == 7  # the 292 cases without a target are left out
    assert "spell_leet_h" in {r["type"] for r in report["sections"]["robustness"]["detectors"][0]["rows"]}


def test_html_has_the_paper_layout_and_the_skipped_sections(audited, tmp_path):
    db, _ = audited
    out = tmp_path / "hc.html"
    assert main(["report", "--db", str(db), "--out", str(out)]) == 0
    page = out.read_text()
    titles = re.findall(r"<h2 id=s-[a-z_]+>(\d+)\. ([^<]+)</h2>", page)
    assert [int(n) for n, _ in titles] == list(range(1, len(titles) + 1))
    assert [t for _, t in titles][-2:] == ["Detectors on labelled data", "HateCheck by functionality"]
    assert "HateCheck: accuracy per functionality" in page and "Röttger et al. 2021" in page
    assert "<td>F29</td><td>spell_leet_h</td><td>Leet speak spellings</td><td>hateful</td><td>173</td>" in page
    assert "Not in this report" in page and "no ratings in the log" in page


def test_partial_log_says_what_each_missing_section_needs(audited):
    _, report = audited
    assert set(report["sections"]) == {"robustness", "labelled", "hatecheck"}
    skipped = report["skipped"]
    assert set(skipped) == {"human", "itemset", "overlap", "people", "normalization", "attacks", "sass", "fusion", "api"}
    assert skipped["human"].startswith("no ratings in the log")
    assert "--normalize" in skipped["normalization"] and "--attack" in skipped["attacks"]
    assert "--format sass" in skipped["sass"]


def test_empty_log_lists_every_section_with_its_reason(tmp_path):
    db = tmp_path / "empty.sqlite"
    StudyLog(db).close()
    report = report_from_db(db)
    assert report["sections"] == {}
    skipped = report["skipped"]
    assert set(skipped) == {"human", "itemset", "overlap", "people", "robustness", "normalization", "attacks", "sass",
                            "labelled", "hatecheck", "fusion", "api"}
    assert "no gold labels: pass --label COLUMN" in skipped["labelled"]
    assert "no variants: run modlens audit with --perturb" in skipped["robustness"]
    assert "modlens audit hatecheck" in skipped["hatecheck"]
    page = render_html(report)
    assert "no data any section can use" in page and page.count("<li><b>") == len(skipped)


def test_attack_only_log_explains_the_missing_robustness_pairs(tmp_path):
    from modlens.perturb.base import Variant

    db = tmp_path / "a.sqlite"
    with StudyLog(db) as log:
        page = log.ensure_page("dataset:x", "x.csv", None, None)
        cid = log.add_comment("dataset:x", "k", page, "seed text")
        log.add_variant(cid, Variant("s33d text", "char_attack", {}, 0, source_text="seed text", target_detector="t",
                                     attack={"goal": "TAE", "status": "failed"}))
    skipped = report_from_db(db)["skipped"]
    assert skipped["robustness"].startswith("only attack variants")


class _SaysHate:
    """Flags a text when it holds the word "hate" (so every case's decision is known by reading it)."""
    name, version, labels, toxicity_label, threshold = "says-hate", "test-1", ("toxicity",), "toxicity", 0.5

    def score(self, texts):
        return [{"toxicity": 0.9 if "hate" in t.split() else 0.1} for t in texts]


HAND_CASES = [  # case_id, functionality, test_case, label_gold, target_ident, ref_case_id; decision by the word "hate"
    (1, "derog_neg_emote_h", "I hate women.", "hateful", "women", ""),               # flagged: right
    (2, "derog_neg_emote_h", "I despise gay people.", "hateful", "gay people", ""),  # not flagged: wrong
    (3, "derog_neg_emote_h", "I really hate gay people.", "hateful", "gay people", ""),  # right
    (4, "slur_homonym_nh", "I hate this cold weather.", "non-hateful", "", ""),     # flagged: wrong
    (5, "slur_homonym_nh", "What a lovely day.", "non-hateful", "", ""),             # right
    (6, "spell_leet_h", "I h4te women.", "hateful", "women", "1"),                   # wrong
    (7, "spell_leet_h", "I hate w0men.", "hateful", "women", "1"),                   # right
]


def _says_hate():
    from modlens.detectors.base import Detector

    class SaysHate(_SaysHate, Detector):
        pass
    return SaysHate()


def _hand_suite(path):
    """HAND_CASES in the suite's columns: HateCheck's layout, not its bytes (so `dataset:file-DIGEST`)."""
    with open(path, "w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(["", "functionality", "case_id", "test_case", "label_gold", "target_ident", "direction",
                    "focus_words", "focus_lemma", "ref_case_id", "ref_templ_id", "templ_id", "case_templ"])
        for i, (cid, func, text, gold, target, ref) in enumerate(HAND_CASES):
            w.writerow([i, func, cid, text, gold, target, "general", "", "", ref, "", cid, text])
    return path


def test_a_hatecheck_layout_file_that_is_not_the_suite_is_not_counted_as_hatecheck(tmp_path, data_dir):
    """The defect: the section took every comment with functionality and label_gold, whatever its data
    set, so another file in HateCheck's layout (dataset:file-DIGEST) was pooled into the rows cited as
    HateCheck's. Each source is its own block now; the suite's rows are the suite's cases alone."""
    db = tmp_path / "hc.sqlite"
    run_audit("hatecheck", db=db, detector_objects={"says-hate": _says_hate()}, progress=False, limit=60)
    run_audit(str(_hand_suite(tmp_path / "test_suite_cases.csv")), db=db, fmt="hatecheck",
              detector_objects={"says-hate": _says_hate()}, progress=False)
    report = report_from_db(db)
    suite, other = report["sections"]["hatecheck"]["sources"]
    assert suite["source"] == "dataset:hatecheck" and suite["release"] and suite["n_cases"] == 60
    with open(data_dir / "hatecheck" / "test_suite_cases.csv", encoding="utf-8", newline="") as fh:
        first = list(csv.DictReader(fh))[:60]
    assert {r["key"]: r["n"] for r in suite["totals"]}["all"] == 60
    assert sum(r["n"] for r in suite["functionalities"]) == 60 and {r["key"] for r in suite["functionalities"]} \
        == {c["functionality"] for c in first}
    assert other["source"].startswith("dataset:file-") and not other["release"] and other["n_cases"] == len(HAND_CASES)
    assert {r["key"]: r["n"] for r in other["totals"]}["all"] == len(HAND_CASES)
    page = render_html(report)
    assert "not the HateCheck suite" in page and other["source"].removeprefix("dataset:") in page
    charts = re.findall(r'aria-label="([^"]*): accuracy per functionality"', page)
    assert charts == ["HateCheck", f"{other['source'].removeprefix('dataset:')} (HateCheck&#x27;s layout)"]


def test_accuracy_per_functionality_equals_a_hand_count(tmp_path):
    """The paper's layout on seven cases counted by hand (the counts below are not computed)."""
    f = _hand_suite(tmp_path / "test_suite_cases.csv")
    db = tmp_path / "hc.sqlite"
    run_audit(str(f), db=db, fmt="hatecheck", detector_objects={"says-hate": _says_hate()}, progress=False)
    section = report_from_db(db)["sections"]["hatecheck"]
    (s,) = section["sources"]
    assert not s["release"]  # the cases written here are not the suite's bytes: a block of their own
    label = "says-hate@test-1"

    def acc(rows):
        return {r["key"]: (r["n"], r["detectors"][label]["accuracy"]) for r in rows}
    # F1, F8, F29 in the paper's order
    assert list(acc(s["functionalities"]).items()) == [
        ("derog_neg_emote_h", (3, 2 / 3)), ("slur_homonym_nh", (2, 1 / 2)), ("spell_leet_h", (2, 1 / 2))]
    assert acc(s["totals"]) == {"hateful": (5, 3 / 5), "non-hateful": (2, 1 / 2), "all": (7, 4 / 7)}
    assert acc(s["targets"]) == {"gay people": (2, 1 / 2), "women": (3, 2 / 3)}
    assert [r["gold"] for r in s["functionalities"]] == ["hateful", "non-hateful", "hateful"]
    from modlens.analysis.sections.hatecheck import SECTION

    html = SECTION.render(section)  # the section alone: the robustness section also names spell_* cases
    assert html.index(">F1<") < html.index("derog_neg_emote_h") < html.index(">F8<") < html.index("slur_homonym_nh") \
        < html.index(">F29<") < html.index("spell_leet_h")
