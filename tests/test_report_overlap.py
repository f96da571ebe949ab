"""The report's overlap section on a log of known overlap (exact counts), and the human-ratings
section's one-vote-per-rater rule: alpha never pairs a rater with themselves, a majority never
counts a rater twice, single-rater comments are named as such."""
from __future__ import annotations

import json

import pytest

from modlens.analysis.report import render_html, report_from_db
from modlens.cli import main
from modlens.config import GoldConfig, StudyConfig
from modlens.studylog.store import StudyLog

TOX = ["not toxic", "hard to say", "toxic"]
# (platform, comment key) -> [(rater, toxicity, inconsistent)], in the order they were given
RATINGS = {
    ("youtube", "y1"): [(f"r{i}", "toxic", False) for i in range(1, 6)],                  # 5 raters
    ("youtube", "y2"): [("r1", "toxic", False), ("r2", "toxic", False), ("r3", "hard to say", False)],
    ("youtube", "y3"): [("r7", "not toxic", False)],                                       # 1 rater, shares nothing
    ("youtube", "y4"): [("r1", "toxic", False), ("r1", "not toxic", False)],               # 1 rater, twice
    ("youtube", "y5"): [("r2", "toxic", False), ("r2", "toxic", False), ("r3", "not toxic", False)],  # 2 raters
    ("news", "n1"): [("r1", "not toxic", False), ("r4", "not toxic", False), ("r5", "not toxic", False),
                     ("r6", "not toxic", False)],                                          # 4 raters
    ("news", "n2"): [("r6", "toxic", True)],                                               # only rating excluded
}
RATERS = [f"r{i}" for i in range(1, 8)]


@pytest.fixture(scope="module")
def db(tmp_path_factory):
    path = tmp_path_factory.mktemp("overlap") / "merged.sqlite"
    study = StudyConfig(study_id="pilot", gold=[GoldConfig(key="g1", text="Have a lovely day.",
                                                           expected={"toxicity": "not toxic"})])
    n = 0
    with StudyLog(path) as log, log.transaction():
        log.ensure_study(study.study_id, study.title, study.model_dump(mode="json"))
        for r in RATERS:
            log.ensure_rater("pilot", r, "2026-01-01T00:00:00Z")
        gold = log.add_comment("gold", "g1", None, "Have a lovely day.")
        for r in RATERS:  # every rater answers the gold comment: never counted as overlap
            n += 1
            log.add_rating("pilot", r, f"x{n}", None, gold, {"toxicity": "not toxic"}, None, "not toxic", False, 1)
        for (platform, key), given in RATINGS.items():
            page = log.ensure_page(platform, "p", None, None)
            cid = log.add_comment(platform, key, page, f"comment {key}")
            for rater, value, inconsistent in given:
                n += 1
                log.add_rating("pilot", rater, f"x{n}", None, cid, {"toxicity": value}, None,
                               None if inconsistent else value, inconsistent, 1)
    return path


@pytest.fixture(scope="module")
def report(db):
    return report_from_db(db)


def test_comments_by_number_of_raters_per_platform(report):
    s = report["sections"]["overlap"]
    assert s["min_raters"] == {"alpha": 2, "majority": 3}
    assert s["comments_by_raters"] == {
        "all platforms": {"1": 2, "2": 1, "3": 1, "4": 1, "5+": 1},
        "news": {"1": 0, "2": 0, "3": 0, "4": 1, "5+": 0},
        "youtube": {"1": 2, "2": 1, "3": 1, "4": 0, "5+": 1},
    }
    assert s["comments_by_raters_all_ratings"]["news"] == {"1": 1, "2": 0, "3": 0, "4": 1, "5+": 0}
    assert s["n_comments"] == 7 and s["n_comments_every_rating_excluded"] == 1
    assert s["n_raters"] == 7 and s["n_raters_all_ratings"] == 7


def test_rater_pairs_sharing_comments(report):
    pairs = report["sections"]["overlap"]["rater_pairs"]
    # shared comments: r2-r3 3 (y1, y2, y5); r1 with r2..r5 and r4-r5 2; 7 more pairs 1 (see RATINGS)
    assert pairs == {"n_pairs": 21, "sharing_at_least": {"1": 13, "3": 1, "5": 0, "15": 0},
                     "raters_sharing_nothing": ["r7"]}


def test_comments_below_the_minimum_are_listed_with_what_they_lack(report):
    s = report["sections"]["overlap"]
    assert s["below_minimum"] == {"alpha": 3, "majority": 4} and s["comments_below_minimum_total"] == 4
    assert [(e["key"], e["n_raters"], e["n_raters_all_ratings"], e["lacks"]) for e in s["comments_below_minimum"]] == [
        ("n2", 0, 1, ["alpha", "majority"]), ("y3", 1, 1, ["alpha", "majority"]),
        ("y4", 1, 1, ["alpha", "majority"]), ("y5", 2, 2, ["majority"])]


def test_one_vote_per_rater_for_alpha_and_majority(report):
    h = report["sections"]["human"]
    assert h["excluded"]["earlier rating of the same comment by the same rater"] == 2
    tox = next(a for a in h["attributes"] if a["name"] == "toxicity")
    assert tox["n_comments"] == 6 and tox["n_comments_paired"] == 4
    # y5: r2 said toxic twice, r3 not toxic -> a two-way tie (Table 13: hard to say), not a toxic mode
    assert tox["decided_by"] == {"mode": 3, "single rater": 2, "tie rule": 1}
    assert tox["majority"] == {"not toxic": 3, "hard to say": 1, "toxic": 2}  # y4: r1's latest answer
    one_vote = {"y1": ["toxic"] * 5, "y2": ["toxic", "toxic", "hard to say"], "y5": ["toxic", "not toxic"],
                "n1": ["not toxic"] * 4}
    assert tox["alpha"] == pytest.approx(_krippendorff(one_vote), abs=1e-9)
    every_rating = {**one_vote, "y4": ["toxic", "not toxic"], "y5": ["toxic", "toxic", "not toxic"]}
    assert _krippendorff(every_rating) != pytest.approx(tox["alpha"])  # the test would see the old rule


def _krippendorff(units: dict[str, list[str]]) -> float:
    """Ordinal alpha by the `krippendorff` package (an independent route): one column per comment."""
    import krippendorff
    import numpy as np

    data = np.full((max(len(v) for v in units.values()), len(units)), np.nan)
    for j, values in enumerate(units.values()):
        data[:len(values), j] = [TOX.index(v) for v in values]
    return float(krippendorff.alpha(reliability_data=data, level_of_measurement="ordinal", value_domain=[0, 1, 2]))


def test_html_and_json(db, tmp_path, capsys):
    page = render_html(report_from_db(db))
    assert ">2. Rating overlap</h2>" in page and "Comments below the minimum (alpha: 2 raters, majority: 3)" in page
    assert page.index("1. Human ratings") < page.index("2. Rating overlap") < page.index("5+ raters")
    assert main(["report", "--db", str(db), "--format", "json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["sections"]["overlap"]["below_minimum"] == {"alpha": 3, "majority": 4}
    assert "overlap" in out["methods"]


def test_a_log_without_ratings_has_no_overlap_section(tmp_path):
    path = tmp_path / "empty.sqlite"
    with StudyLog(path) as log, log.transaction():
        log.add_comment("youtube", "c", None, "text")
    assert "overlap" not in report_from_db(path)["sections"]
