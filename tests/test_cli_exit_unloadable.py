"""One rule for a detector that cannot load here (README, "Exit codes"), the same in `score`,
`audit`, `attack` (DATASET and --text), `rescore` and `fuse`: one the command line names
(--detectors/--detector; attack's target and judges) stops the command before it scores or writes
anything, exit 1 (failed), saying which and why; exit 0 would say it did what was asked, with no
score of that detector anywhere. Loading none is exit 1 too. A study's detector the command was
not told to use by name is said on stderr and left out, and the rest runs (exit 0)."""
from __future__ import annotations

import json

import pytest

from modlens.cli import main

WHY = "detector perspective cannot load"


@pytest.fixture(autouse=True)
def no_perspective_key(monkeypatch, tmp_path):
    monkeypatch.delenv("PERSPECTIVE_API_KEY", raising=False)  # Perspective then cannot load
    monkeypatch.setenv("MODLENS_HOME", str(tmp_path / "home"))


@pytest.fixture
def comments(tmp_path):
    f = tmp_path / "c.csv"
    f.write_text("text,toxic\nyou are a stupid idiot,1\nhave a nice day,0\n", encoding="utf-8")
    return f


def test_audit_refuses_a_named_detector_that_cannot_load(tmp_path, comments, capsys):
    db = tmp_path / "log.sqlite"
    assert main(["audit", str(comments), "--db", str(db), "--quiet", "--detectors", "profanity-check",
                 "perspective"]) == 1
    out, err = capsys.readouterr()
    assert WHY in err and "PERSPECTIVE_API_KEY" in err and out == ""
    assert not db.exists()  # refused before anything was written


def test_audit_with_no_detector_that_loads_is_failed_not_usage(tmp_path, comments, capsys):
    db = tmp_path / "log.sqlite"
    assert main(["audit", str(comments), "--db", str(db), "--quiet", "--detectors", "perspective"]) == 1
    assert WHY in capsys.readouterr().err and not db.exists()


def test_audit_leaves_out_a_study_detector_it_was_not_told_to_use(tmp_path, comments, capsys):
    study, db = tmp_path / "study.toml", tmp_path / "log.sqlite"
    study.write_text('detectors = [{ name = "perspective" }, { name = "profanity-check" }]\n')
    assert main(["audit", str(comments), "--db", str(db), "--quiet", "--config", str(study)]) == 0
    out, err = capsys.readouterr()
    assert "modlens audit: detector perspective not used: " in err
    assert list(json.loads(out)["detectors"]) == ["profanity-check"]


def test_score_refuses_a_named_detector_that_cannot_load(capsys):
    assert main(["score", "you are a stupid idiot", "--detectors", "profanity-check", "perspective"]) == 1
    out, err = capsys.readouterr()
    assert WHY in err and out == ""  # no line scored by the others, as if that were what was asked


def test_attack_text_refuses_a_named_judge_that_cannot_load(capsys):
    assert main(["attack", "--recipe", "deepwordbug", "--target", "profanity-check", "--detector", "perspective",
                 "--max-queries", "5", "--text", "you are a stupid idiot"]) == 1
    out, err = capsys.readouterr()
    assert WHY in err and out == ""


def test_attack_dataset_refuses_a_named_judge_that_cannot_load(tmp_path, comments, capsys):
    db = tmp_path / "log.sqlite"
    assert main(["attack", str(comments), "--db", str(db), "--quiet", "--recipe", "deepwordbug",
                 "--target", "profanity-check", "--detector", "perspective", "--max-queries", "5"]) == 1
    assert WHY in capsys.readouterr().err and not db.exists()


def test_fuse_refuses_a_named_detector_that_cannot_load(tmp_path, capsys):
    pairs, db = tmp_path / "pairs.csv", tmp_path / "log.sqlite"
    pairs.write_text("content_type,a,b\nabuse_hate,women,pigs\n", encoding="utf-8")
    assert main(["fuse", "--pairs-file", str(pairs), "--detectors", "profanity-check", "perspective", "--db", str(db),
                 "--media-dir", str(tmp_path / "media"), "--fusion", "T+E", "--quiet"]) == 1
    assert WHY in capsys.readouterr().err and not db.exists()


@pytest.mark.parametrize("flag", ["--targets", "--ensemble"])
def test_audit_attack_naming_a_study_detector_that_cannot_load_says_why(tmp_path, comments, capsys, flag):
    """--targets/--ensemble name a detector as --detectors does: the study's perspective named there
    stops the audit with exit 1 and why it cannot load, not 'not loaded' as a usage error (exit 2)."""
    study, db = tmp_path / "study.toml", tmp_path / "log.sqlite"
    study.write_text('detectors = [{ name = "perspective" }, { name = "profanity-check" }]\n')
    named = ["--targets", "perspective"] if flag == "--targets" else \
        ["--targets", "profanity-check", "--ensemble", "perspective"]
    assert main(["audit", str(comments), "--db", str(db), "--quiet", "--config", str(study), "--attack", "tae",
                 "--recipe", "deepwordbug", "--max-queries", "5", *named]) == 1
    err = capsys.readouterr().err
    assert WHY in err and "PERSPECTIVE_API_KEY" in err and not db.exists()


def test_perturb_target_that_cannot_load_stops_alone(tmp_path, capsys):
    """--target names one detector: only it must load; another study detector that cannot load is said."""
    study = tmp_path / "study.toml"
    study.write_text('detectors = [{ name = "perspective" }, { name = "profanity-check" }]\n')
    assert main(["perturb", "you are a stupid idiot", "--budget", "2", "--config", str(study),
                 "--target", "profanity-check"]) == 0
    assert "detector perspective not loaded" in capsys.readouterr().err
