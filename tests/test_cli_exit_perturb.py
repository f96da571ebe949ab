"""`modlens perturb` follows the one rule for a detector that cannot load (README, "Exit codes";
`LoadedDetectors.require`), as `score`, `audit`, `attack`, `rescore` and `fuse` do: one the command
line names (--detectors/--detector, or --target) stops it before it prints a line, exit 1 (failed),
saying which and why; exit 0 with lines scored by the rest would say it did what was asked. Loading
none is exit 1 too. A study's detector nobody named is said on stderr and left out (exit 0)."""
from __future__ import annotations

import json

import pytest

from modlens.cli import main

WHY = "detector perspective cannot load"
TEXT = "you are a stupid idiot"


@pytest.fixture(autouse=True)
def no_perspective_key(monkeypatch, tmp_path):
    monkeypatch.delenv("PERSPECTIVE_API_KEY", raising=False)  # Perspective then cannot load
    monkeypatch.setenv("MODLENS_HOME", str(tmp_path / "home"))


@pytest.fixture
def study(tmp_path):
    f = tmp_path / "study.toml"
    f.write_text('detectors = [{ name = "perspective" }, { name = "profanity-check" }]\n', encoding="utf-8")
    return f


def test_perturb_refuses_a_named_detector_that_cannot_load(capsys):
    assert main(["perturb", TEXT, "--budget", "2", "--detectors", "profanity-check", "perspective"]) == 1
    out, err = capsys.readouterr()
    assert WHY in err and "PERSPECTIVE_API_KEY" in err
    assert out == ""  # no line scored by profanity-check alone, as if that were what was asked


def test_perturb_attack_refuses_a_named_detector_that_cannot_load(capsys):
    assert main(["perturb", TEXT, "--attack", "tae", "--max-queries", "5", "--target", "profanity-check",
                 "--detectors", "profanity-check", "perspective"]) == 1
    out, err = capsys.readouterr()
    assert WHY in err and out == ""


def test_perturb_with_no_detector_that_loads_fails(capsys):
    assert main(["perturb", TEXT, "--budget", "2", "--detectors", "perspective"]) == 1
    out, err = capsys.readouterr()
    assert WHY in err and out == ""  # it printed variants with no score of anything before


def test_perturb_refuses_a_target_named_that_cannot_load(study, capsys):
    # --target names the study's Perspective: the command line named it, so it is failed (1), not usage (2)
    assert main(["perturb", TEXT, "--budget", "2", "--config", str(study), "--target", "perspective"]) == 1
    out, err = capsys.readouterr()
    assert WHY in err and out == ""


def test_perturb_leaves_out_a_study_detector_nobody_named(study, capsys):
    assert main(["perturb", TEXT, "--budget", "2", "--config", str(study)]) == 0
    out, err = capsys.readouterr()
    assert "modlens perturb: detector perspective not loaded" in err
    lines = [json.loads(line) for line in out.splitlines()]
    assert lines and all(list(line["scores"]) == ["profanity-check"] for line in lines)
