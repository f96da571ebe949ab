"""`modlens perturb` without --target uses the study's `perturbation.target` to guide its edits. A study
target that could not load (or that --detector left out) was dropped without a word about it: the
variants were ranked by the heuristic instead (`"ranking": "heuristic"`, `"target": null`) and the
command exited 0, as if it had made what the study asked for. README's exit-code rule names the
study's target among the detectors `perturb` must load: it now stops before its first line, exit 1,
saying why the target is not there."""
from __future__ import annotations

import json

import pytest

from modlens.cli import main

TEXT = "you are a stupid idiot"


def _study(tmp_path, target: str) -> str:
    """profanity-check, and a cached table `gone` whose options name no columns: it cannot load."""
    path = tmp_path / "study.toml"
    path.write_text('[[detectors]]\nname = "profanity-check"\n'
                    f'[[detectors]]\nname = "cached"\nid = "gone"\n[detectors.options]\npath = "{tmp_path / "x.csv"}"\n'
                    f'[perturbation]\ntarget = "{target}"\nbudget = 2\n', encoding="utf-8")
    return str(path)


@pytest.mark.parametrize("extra", [[], ["--attack", "tae"]], ids=["variants", "attack"])
def test_a_study_target_that_cannot_load_stops_the_command(tmp_path, capsys, extra):
    code = main(["perturb", TEXT, *extra, "--config", _study(tmp_path, "gone")])
    out = capsys.readouterr()
    assert out.out == ""  # no line made without the target the study names
    assert code == 1, out.err
    assert "detector gone cannot load" in out.err, out.err


def test_a_study_target_left_out_by_detector_stops_the_command(tmp_path, capsys):
    code = main(["perturb", TEXT, "--detector", "profanity-check", "--config", _study(tmp_path, "gone")])
    out = capsys.readouterr()
    assert out.out == ""
    assert code == 2, out.err  # a combination the command refuses (README, "Exit codes")
    assert "perturbation.target gone" in out.err and "--detector" in out.err, out.err


def test_a_study_target_that_loads_guides_the_edits(tmp_path, capsys):
    # the control: the same study with a target that loads makes variants it guided, exit 0
    assert main(["perturb", TEXT, "--config", _study(tmp_path, "profanity-check")]) == 0
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert lines[0]["target"] == "profanity-check"
    assert len(lines) > 1 and all(v["target_detector"] == "profanity-check" and v["params"]["ranking"] != "heuristic"
                                  for v in lines[1:]), lines


def test_variants_the_target_did_not_rank_name_no_target(tmp_path, capsys):
    """A target with no score for the text's word removals (a cached table without them) leaves the
    words ranked by the heuristic (`"ranking": "heuristic"`): the variants named it as the detector
    that guided their edits (`target_detector`), which it did not. They now name none."""
    (tmp_path / "t.csv").write_text("text,score\nsomething else,0.9\n", encoding="utf-8")
    path = tmp_path / "study.toml"
    path.write_text(f'[[detectors]]\nname = "cached"\nid = "tbl"\n[detectors.options]\npath = "{tmp_path / "t.csv"}"\n'
                    'mappings = [["text", "score"]]\nname = "tbl"\n', encoding="utf-8")
    main(["perturb", TEXT, "--target", "tbl", "--config", str(path)])  # exit 1: tbl has no score for the lines
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    variants = lines[1:]
    assert variants and all(v["params"]["ranking"] == "heuristic" for v in variants), lines
    assert [v["target_detector"] for v in variants] == [None] * len(variants)
