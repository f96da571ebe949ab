"""`modlens study add-attacks` counts what it did: the same attack text found twice in one log (two
dataset rows with one seed text, each attacked the same way) is one review item, said as such, never
"already queued" in a folder that queued nothing; and what --limit leaves for a later run is said."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from modlens.cli import main
from modlens.detectors import registry
from modlens.perturb.base import Variant
from modlens.study import folder
from modlens.studylog.store import StudyLog

SEED = "you are an idiot"


def _success(text: str, target: Any) -> Variant:
    tox = target.toxicity(target.score([text])[0])
    assert tox < target.threshold, text   # profanity-check is fooled by it
    return Variant(text=text, strategy="recipe:synonym-like", params={"recipe": "synonym-like", "edits": []}, seed=0,
                   source_text=SEED, target_detector="profanity-check",
                   attack={"goal": "tae", "status": "success", "search": "hand", "queries": 1, "max_queries": 1,
                           "target": "profanity-check", "target_name": target.name, "target_version": target.version,
                           "threshold": target.threshold, "source_score": 1.0, "final_score": tox, "n_words": 4,
                           "words_edited": 1, "words_changed_share": 0.25, "recipe": "synonym-like",
                           "constraints": {"ensemble": {"judges": {}, "ok": True}}})


@pytest.fixture(scope="module")
def log_with_a_repeat(tmp_path_factory: pytest.TempPathFactory) -> Path:
    target = registry.create("profanity-check")
    db = tmp_path_factory.mktemp("repeat") / "log.sqlite"
    with StudyLog(db) as lg:
        did = lg.ensure_detector(target.name, target.version, target.toxicity_label, target.threshold, {})
        # rows c1 and c2 hold the same seed text and got the same attack text; c3 another one
        for key, text in (("c1", "you are a dolt"), ("c2", "you are a dolt"), ("c3", "you are a dunce")):
            cid = lg.add_comment("dataset", key, None, SEED)
            for t, r in zip((SEED, text), target.score([SEED, text])):
                lg.add_score(t, did, r, target.toxicity(r), None, None)
            lg.add_variant(cid, _success(text, target))
    return db


def test_the_same_attack_text_twice_is_one_item_not_already_queued(log_with_a_repeat: Path, tmp_path: Path,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    root = tmp_path / "study"
    folder.init_folder(root)
    capsys.readouterr()
    assert main(["study", "add-attacks", str(root), "--from", str(log_with_a_repeat), "--unfiltered",
                 "--limit", "1"]) == 0
    out = capsys.readouterr().out
    assert ("3 successful TAEs selected, 0 removed by the quality filters, 0 left out because a filter was not "
            "checked (--unfiltered takes them), 0 already queued, 1 the same text as another; added 1 review "
            "item(s)") in out, out
    assert "1 more left for a later run (--limit)" in out, out
    assert len(folder.load_folder(root).study.review) == 1
    assert main(["study", "add-attacks", str(root), "--from", str(log_with_a_repeat), "--unfiltered"]) == 0
    out = capsys.readouterr().out
    assert "1 already queued, 1 the same text as another; added 1 review item(s)" in out, out
    assert "--limit" not in out.split("added", 1)[1].splitlines()[0], out
    assert sorted(r.text for r in folder.load_folder(root).study.review) == ["you are a dolt", "you are a dunce"]
