"""What the human and item-set sections say about alpha is what alpha used: the comments with two
or more raters, the bootstrap replicates with a defined alpha, and the items the log knows of.

The log is what `modlens rate` leaves for an item-set study: ratings of the item set's comments and
every rater's task reviewed (`rater_reviews`). Rater a worked on tasks t01 and t02, rater b on t01;
nobody worked on t03."""
from __future__ import annotations

import re

import pytest

from modlens.analysis.report import render_html, report_from_db
from modlens.config import StudyConfig
from modlens.studylog.store import StudyLog

TASKS = {"t01": ["y0", "y1", "y2", "y3"], "t02": ["y4", "y5"], "t03": ["y6", "y7"]}
ANSWERS = {  # (rater, task) -> toxicity per item of the task
    ("a", "t01"): ["toxic", "not toxic", "toxic", "hard to say"],
    ("b", "t01"): ["toxic", "not toxic", "not toxic", "hard to say"],
    ("a", "t02"): ["toxic", "not toxic"],
}


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    path = tmp_path_factory.mktemp("alpha") / "study.sqlite"
    study = StudyConfig(study_id="pilot", toxicity_mode="direct", anchors=[])
    with StudyLog(path) as log:
        log.ensure_study(study.study_id, study.title, study.model_dump(mode="json"))
        yt = log.ensure_page("youtube", "v1", None, None)
        with log.transaction():
            ids = {key: log.add_comment("youtube", key, yt, f"comment {key}") for keys in TASKS.values() for key in keys}
            for (rater, task), answers in ANSWERS.items():
                log.ensure_rater("pilot", rater, None)
                for key, value in zip(TASKS[task], answers):
                    log.add_rating("pilot", rater, f"{task}:{key}", None, ids[key], {"toxicity": value}, None, value,
                                   False, 1)
        log.put_rater_reviews([{"study_id": "pilot", "rater_id": r, "task": t, "source": "protocol",
                                "decision": "accept", "reason": "test", "n_items": len(TASKS[t]), "missed": 0,
                                "inconsistent_gold": 0, "wrong_gold": 0, "inconsistent": 0,
                                "comment_ids": [ids[k] for k in TASKS[t]]} for r, t in ANSWERS])
    return report_from_db(path)


def _tox(section: dict) -> dict:
    return next(a for a in section["attributes"] if a["name"] == "toxicity")


def test_itemset_alpha_table_counts_the_comments_alpha_used(report):
    tox = _tox(report["sections"]["itemset"])
    assert tox["n_comments"] == 6            # rated: y0..y5
    assert tox["n_comments_paired"] == 4     # with two or more raters: t01's, the only ones alpha pairs
    html = render_html(report)
    part = html[html.index("items in the reviewed rater tasks"):]   # the item-set section's alpha table
    assert "with ≥ 2 raters (α)" in part[:part.index("Acceptance (Table 11)")]


def test_itemset_says_its_items_are_those_of_the_reviewed_tasks(report):
    """t03's items are in the item set (itemset.json), not in the log: nobody's task holds them."""
    s = report["sections"]["itemset"]
    assert s["n_items"] == 6
    assert "6 items in the reviewed rater tasks" in render_html(report)


@pytest.mark.parametrize("key", ["human", "itemset"])
def test_alpha_interval_says_how_many_replicates_it_used(report, key):
    """A replicate that draws only comments where both raters agree on one level has no alpha: the
    interval is over fewer than the 1000 replicates drawn, and the page says over how many."""
    tox = _tox(report["sections"][key])
    used = tox["alpha_ci_replicates"]
    assert tox["alpha_ci"] is not None and 900 < used < 1000
    html = render_html(report)
    assert f"({used} of 1000 replicates)" in html
    assert not re.search(r"\(1000 replicates, seed", html)
