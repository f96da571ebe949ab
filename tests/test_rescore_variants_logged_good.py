"""`rescore --variants` counts, per detector, the variant texts it scored and those whose score is an
error, as the log keeps them: a good score is never replaced by an error (`record_scores_many`). A
variant text the log already holds a good score for (another comment with the same text had its
variants made, live or by an earlier run), which a detector now fails on, stays good in the log; it
was counted as an error, and the command exited 1 for errors the log does not hold."""
from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any, Sequence

import modlens.study
from modlens.audit.deferred_variants import run_deferred_variants
from modlens.detectors.base import Detector
from modlens.studylog.records.deferred import defer_variants
from modlens.studylog.store import StudyLog

TEXT = "you are a stupid idiot and a fool"
STUDY = """study_id = "deferred"
detectors = [{ name = "profanity-check" }]
[normalizer]
enabled = false
[perturbation]
enabled = true
importance_threshold = 0
"""


class DownOrUp(Detector):
    """One model (one version): answers while up, raises on every call while down."""
    name, version, labels, toxicity_label = "moody", "1", ("toxicity",), "toxicity"

    def __init__(self, down: bool):
        self.down = down

    def score(self, texts: Sequence[str]) -> list[Any]:
        if self.down:
            raise RuntimeError("model crashed")
        return [{"toxicity": 0.9 if "idiot" in t else 0.1} for t in texts]


def _defer(log: StudyLog, video: str) -> int:
    page = log.ensure_page("youtube", video, None, None)
    cid = log.add_comment("youtube", f"c-{video}", page, TEXT)
    defer_variants(log, [(cid, "live variant budget reached")])
    return cid


def test_a_variant_whose_logged_score_stays_good_is_not_counted_as_an_error(tmp_path: Path):
    db, toml = tmp_path / "log.sqlite", tmp_path / "study.toml"
    toml.write_text(STUDY, encoding="utf-8")
    study = modlens.study.load(toml)
    with StudyLog(db) as log:
        _defer(log, "v1")
    first = run_deferred_variants(db, study=study, detector_objects={"moody": DownOrUp(down=False)})
    assert first.variants > 0 and first.score_errors == {}

    with StudyLog(db) as log:  # the same text on another page, its variants deferred too
        again = _defer(log, "v2")
    second = run_deferred_variants(db, study=study, detector_objects={"moody": DownOrUp(down=True)})
    con = sqlite3.connect(db)
    try:
        (made,) = con.execute("SELECT count(*) FROM variants WHERE comment_id = ?", (again,)).fetchone()
        (errors,) = con.execute("SELECT count(*) FROM scores WHERE error IS NOT NULL").fetchone()
    finally:
        con.close()
    assert second.variants == made and 0 < errors < made  # some of its variant texts the first comment had too
    # counted as the log holds them: the texts whose score is now an error, not those still good
    assert second.score_errors["moody"]["errors"] == errors, (second.score_errors, errors, made)
