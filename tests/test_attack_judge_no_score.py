"""A judge that has no score for a candidate (a remote judge whose calls fail; in an audit, a real
cached-scores table named by --ensemble that holds the seed and none of its variants) did not disagree:
the attack does not accept the candidate (the AND rule cannot be confirmed) but counts it apart from
the judges' rejections, its reason says a judge had no score, never that the judges rejected every
flip, and the report reads the distinction from the log. (`attack --text` no longer makes a cached
table a judge unasked, as `attack DATASET` never did: tests/test_cli_attack_text_judges.py.)"""
from __future__ import annotations

import json
import socket
from pathlib import Path

import pytest

from modlens.analysis import attacks as attack_analysis
from modlens.analysis.data import load
from modlens.analysis.sections import attacks as attacks_section
from modlens.cli import main
from modlens.detectors import registry

TOXIC = "you stupid idiot"
NO_SCORE = "every flipping candidate lacked a judge's score"


@pytest.fixture(autouse=True)
def _profanity_check():
    assert registry.status("profanity-check").status == "loaded"  # installed with modlens


def _table(tmp_path):
    table = tmp_path / "scores.csv"
    table.write_text(f"text,score\n{TOXIC},0.9\n", encoding="utf-8")  # the seed only
    return table


@pytest.fixture
def only_the_target_and_a_judge_that_is_down(tmp_path):
    """The target, and one judge: an http detector `down` whose every call fails: its port is held by a
    socket bound without listen() for the whole test, so nothing else can take it and a connection is refused."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
        study = tmp_path / "one.toml"
        study.write_text('[[detectors]]\nname = "profanity-check"\n[[detectors]]\nname = "http"\nid = "down"\n'
                         f'[detectors.options]\nurl = "http://127.0.0.1:{port}/score"\nscore_path = "$.toxicity"\n'
                         'retries = 0\nname = "down"\n', encoding="utf-8")
        yield str(study)


def _variant(capsys) -> dict:
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    return next(r for r in rows if r["kind"] == "variant")


def test_a_judge_without_a_score_is_not_a_judge_that_disagreed(only_the_target_and_a_judge_that_is_down, capsys):
    main(["attack", "--recipe", "deepwordbug", "--target", "profanity-check", "--text", TOXIC,
          "--config", only_the_target_and_a_judge_that_is_down])
    a = _variant(capsys)["attack"]
    assert a["status"] == "failed" and a["reason"] == NO_SCORE
    assert a["rejected_by_ensemble"] == 0 and a["unscored_by_ensemble"] > 0
    judged = a["constraints"]["judges_agree"]
    assert judged["rejected"] == 0 and judged["unscored"] == a["unscored_by_ensemble"]
    assert judged["last_unscored"] == "no score from down" and judged["last_rejection"] is None
    verdict = a["constraints"]["ensemble"]["judges"]["down"]
    assert verdict["toxicity"] is None and verdict["agrees"] is None  # not a "no"


def test_a_judge_that_disagrees_rejects_even_beside_one_without_a_score(only_the_target_and_a_judge_that_is_down, capsys):
    """A copy of the target is fooled by the very same edits: it says no, so the AND rule fails
    whatever the judge that is down lacks."""
    study = Path(only_the_target_and_a_judge_that_is_down)
    study.write_text(study.read_text(encoding="utf-8") + '[[detectors]]\nname = "profanity-check"\nid = "copy"\n',
                     encoding="utf-8")
    main(["attack", "--recipe", "deepwordbug", "--target", "profanity-check", "--text", TOXIC,
          "--config", str(study)])
    a = _variant(capsys)["attack"]
    assert a["status"] == "failed" and a["reason"] == "every flipping candidate was rejected by the judges"
    assert a["rejected_by_ensemble"] > 0 and a["unscored_by_ensemble"] == 0


def test_the_report_counts_attempts_a_judge_could_not_score_apart(tmp_path):
    """`audit --attack --ensemble cached`: the cached table asked to judge, as a remote detector
    that errors would; the report reads the log's records."""
    seeds = tmp_path / "seeds.csv"
    seeds.write_text(f"text,toxic\n{TOXIC},1\n", encoding="utf-8")
    db = tmp_path / "log.sqlite"
    assert main(["audit", str(seeds), "--detectors", "profanity-check", f"cached:{_table(tmp_path)}",
                 "--attack", "tae", "--recipe", "deepwordbug", "--target", "profanity-check",
                 "--ensemble", "cached", "--db", str(db)]) == 1  # the table has no score for the attack's text
    (row,) = attack_analysis.analyze(load(db))["rows"]
    assert row["judges"] == ["cached"] and row["failed"] == 1 and row["failure_reasons"] == {NO_SCORE: 1}
    assert row["judge_no_score"] == 1 and row["judge_rejected"] == 0 and row["judge_not_told_apart"] == 0
    note = attacks_section.render(attacks_section.analyze(load(db)))
    assert "1 failed attempt had a flip a judge had no score for" in note and "said no" not in note


def test_the_unknown_line_does_not_promise_a_rerun_settles_a_cached_judge(tmp_path, capsys):
    """No call failed here: the cached table has no score for the flip, and never will. The line must
    not say the calls failed and that the same command attacks them again as if that would tell;
    a rerun is unknown again (exit 1 again), and the line says so."""
    seeds = tmp_path / "seeds.csv"
    seeds.write_text(f"text,toxic\n{TOXIC},1\n", encoding="utf-8")
    db = tmp_path / "log.sqlite"
    args = ["audit", str(seeds), "--detectors", "profanity-check", f"cached:{_table(tmp_path)}", "--quiet",
            "--attack", "tae", "--recipe", "deepwordbug", "--target", "profanity-check", "--ensemble", "cached",
            "--db", str(db)]
    for _ in range(2):
        assert main(args) == 1
        err = capsys.readouterr().err
        line = next(x for x in err.splitlines() if x.startswith("modlens audit: attacks on profanity-check:"))
        assert "calls failed" not in line, line
        assert "cached table" in line and "unknown again" in line, line
