"""A gold answer is judged by one rule wherever modlens judges it: `modlens rate`'s review
(study/acceptance.py) and the report's rater rubric (analysis/human.py, Table 11 over tasks of 15
for raters no review covers). An anchor pair that falls in one of Table 1's two-candidate cells
("hard to say / toxic") is right on a gold comment expected at either candidate, though the
rating it stores is "hard to say"."""
from __future__ import annotations

from pathlib import Path

from modlens.analysis import data as analysis_data
from modlens.analysis.human import usable_ratings
from modlens.config import GoldConfig, StudyConfig
from modlens.ratings import derive_toxicity
from modlens.study.calibration import calibration_items, record_items
from modlens.studylog.store import StudyLog

GOLD = [GoldConfig(key="gold-insult", text="You absolute clown.", expected={"toxicity": "toxic"}),
        GoldConfig(key="gold-rant", text="Shut up, moron.", expected={"toxicity": "toxic"}),
        GoldConfig(key="gold-thanks", text="Thanks, that helped.", expected={"toxicity": "not toxic"})]


def test_an_ambiguous_anchor_pair_on_gold_is_right_in_the_report_as_in_the_review(tmp_path: Path) -> None:
    study = StudyConfig(study_id="browse", gold=GOLD)   # anchors mode, the extreme anchor rated "toxic"
    db = tmp_path / "study.sqlite"
    # gold: both "toxic" ones answered more than the hard-to-say anchor, less than the extreme one
    # (Table 1: hard to say or toxic), the other as expected; 12 comments, one pair inconsistent
    answers = {"gold-insult": ("more", "less"), "gold-rant": ("more", "less"), "gold-thanks": ("less", "less")}
    with StudyLog(db) as log:
        log.ensure_study(study.study_id, study.title, study.model_dump(mode="json"))
        ids = record_items(log, study, calibration_items(study))
        page = log.ensure_page("youtube", "v1", None, None)
        items = {f"y{n}": log.add_comment("youtube", f"y{n}", page, f"comment {n}") for n in range(12)}
        pairs = [(ids[k], a) for k, a in answers.items()]
        pairs += [(cid, ("less", "more") if key == "y0" else ("less", "less")) for key, cid in items.items()]
        log.ensure_rater("browse", "r1", None)
        for n, (cid, (vs_hard, vs_extreme)) in enumerate(pairs):
            d = derive_toxicity(vs_hard, vs_extreme, "toxic")
            log.add_rating("browse", "r1", f"c{n}", None, cid, {}, {"vs_hard": vs_hard, "vs_extreme": vs_extreme},
                           d.rating, d.inconsistent, None)
    assert derive_toxicity("more", "less", "toxic").candidates == ("hard to say", "toxic")
    usable = usable_ratings(analysis_data.load(db))
    (summary,) = usable.summaries
    assert (summary.n_gold, summary.n_gold_wrong, summary.n_gold_inconsistent) == (3, 0, 0)
    assert summary.tasks == ["approve, use"]            # Table 11: 0 inconsistent gold, 0 wrong, 1 inconsistent
    assert "rater task not used (Table 11)" not in usable.excluded, usable.excluded
    assert len(usable.valid) == 11                      # the 12 comments but the inconsistent one
