"""`bench/bench_perspective.py` ends by checking that every logged call is in the study log with its
scores. It once counted a call as scored when the log held any score for its text, so a call answered by
two detectors (TOXICITY, PROFANITY) with one score missing passed. Here a real log with one such call."""
from __future__ import annotations

import bench_perspective as bench  # bench/ is on the tests' path (pyproject.toml)
from modlens.studylog.store import StudyLog

TOX, PROF = ("minilm-toxicity", "1"), ("profanity-check", "2")


def test_a_call_missing_one_of_its_answers_scores_is_counted(tmp_path):
    db = tmp_path / "log.db"
    with StudyLog(db) as log, log.transaction():
        tox = log.ensure_detector(*TOX, "toxic", 0.5, {})
        prof = log.ensure_detector(*PROF, "profanity", 0.5, {})
        for n in range(2):
            log.add_comment("api", f"call-{n}", None, f"text {n}")
            log.add_score(f"text {n}", tox, {"toxic": 0.2}, 0.2, 1.0, None)
        log.add_score("text 0", prof, {"profanity": 0.1}, 0.1, 1.0, None)  # text 1 lacks its PROFANITY score
    answered = {f"text {n}": {TOX, PROF} for n in range(2)}
    assert bench.logged_calls(db, answered) == (2, 1)
    # a call the answer gave but the log never recorded counts too; one answered by TOXICITY alone is whole
    assert bench.logged_calls(db, {**answered, "text 2": {TOX}}) == (2, 2)
    assert bench.logged_calls(db, {"text 1": {TOX}}) == (2, 0)
