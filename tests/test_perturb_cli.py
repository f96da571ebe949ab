"""`modlens perturb`: variants and attacks as JSON lines with every loaded detector's scores."""
from __future__ import annotations

import json

import pytest

from modlens.cli import main


def lines(capsys):
    out = capsys.readouterr()
    return [json.loads(line) for line in out.out.splitlines()], out.err


def test_variants_with_scores(capsys, data_dir, monkeypatch):
    monkeypatch.setenv("MODLENS_PERTURBATIONS", str(data_dir / "noisyhate" / "perturbations.json"))
    rc = main(["perturb", "you are an idiot", "--detector", "profanity-check", "--budget", "4", "--seed", "2"])
    rows, err = lines(capsys)
    assert rc == 0, err
    source, variants = rows[0], rows[1:]
    assert source["kind"] == "source" and source["target"] == "profanity-check"
    assert source["scores"]["profanity-check"]["above_threshold"] is True
    assert len(variants) == 4
    for v in variants:
        assert v["source_text"] == "you are an idiot" and v["seed"] == 2 and v["params"]["word"] == "idiot"
        assert v["params"]["ranking"] == "importance" and v["target_detector"] == "profanity-check"
        s = v["scores"]["profanity-check"]
        assert s["name"] == "profanity-check" and s["version"] and 0 <= s["toxicity"] <= 1


def test_attack_line(capsys):
    rc = main(["perturb", "you are an idiot", "have a nice day", "--detector", "profanity-check", "--attack", "tae",
               "--strategy", "char_swap", "--strategy", "char_delete"])
    rows, err = lines(capsys)
    assert rc == 0, err
    attacks = [r for r in rows if r["kind"] == "variant"]
    assert [a["attack"]["status"] for a in attacks] == ["success", "skipped"]
    assert attacks[0]["scores"]["profanity-check"]["above_threshold"] is False
    assert attacks[0]["params"]["transformations"] == ["char:char_swap", "char:char_delete"]
    assert attacks[0]["strategy"] == "recipe:char_greedy"


def test_clear_errors(capsys, tmp_path):
    assert main(["perturb", "x", "--strategy", "nope", "--detector", "profanity-check"]) == 2
    assert "unknown perturbation strategy 'nope'" in capsys.readouterr().err
    assert main(["perturb", "x", "--detector", "profanity-check", "--target", "minilm-toxicity"]) == 2
    assert "not loaded" in capsys.readouterr().err
    # a missing lookup table is reported, the other strategies still run
    rc = main(["perturb", "what a pathetic loser", "--detector", "profanity-check", "--strategy", "human_lookup",
               "--strategy", "abbr", "--perturbations", str(tmp_path / "none.json"), "--threshold", "0"])
    rows, err = lines(capsys)
    assert rc == 0 and "human_lookup unavailable" in err
    assert {r["strategy"] for r in rows[1:]} == {"abbr"}


def test_a_blank_text_gets_no_score_and_no_variant(capsys):
    """A blank text has nothing to score or perturb (`datasets.base.blank_reason`, as `modlens score`,
    the audit and the daemon leave it): perturb, perturb --attack and attack --text give it a source
    line that says why, with no detector's number (profanity-check scored "" 0.036, minilm 0.456)
    and no variant or attack result."""
    from modlens.datasets.base import EMPTY, WHITESPACE

    for argv in (["perturb", "", "  \u00a0", "you are an idiot", "--detector", "profanity-check", "--threshold", "0"],
                 ["perturb", "", "  \u00a0", "you are an idiot", "--detector", "profanity-check", "--attack", "tae"],
                 ["attack", "--recipe", "deepwordbug", "--target", "profanity-check", "--no-ensemble",
                  "--text", "", "  \u00a0", "you are an idiot"]):
        rc = main(argv)
        rows, err = lines(capsys)
        assert rc == 0, err
        sources = [r for r in rows if r["kind"] == "source"]
        assert [s["text"] for s in sources] == ["", "  \u00a0", "you are an idiot"], argv
        assert [s.get("not_scored") for s in sources] == [EMPTY, WHITESPACE, None], argv
        assert "scores" not in sources[0] and "scores" not in sources[1] and sources[2]["scores"]["profanity-check"]
        variants = [r for r in rows if r["kind"] == "variant"]
        assert variants and {v["source_text"] for v in variants} == {"you are an idiot"}, argv



@pytest.mark.parametrize("argv", [["perturb", "you stupid idiot", "--target", "profanity-check", "--threshold", "0",
                                   "--detector", "profanity-check"],
                                  ["perturb", "you stupid idiot", "--target", "profanity-check", "--attack", "tae",
                                   "--detector", "profanity-check"],
                                  ["attack", "--recipe", "deepwordbug", "--target", "profanity-check",
                                   "--text", "you stupid idiot"]],
                         ids=["perturb", "perturb-attack", "attack-text"])
def test_a_detector_that_gave_no_score_fails_the_command_as_score_does(argv, tmp_path, capsys):
    """A detector that gives no score for a text (here cached scores that hold the source text and
    no variant of it) is said as `modlens score` says it: `error` in the text's answer beside its
    null toxicity, then on stderr the detector, how many texts got no score and the first error,
    and exit 1 (failed), after every line."""
    table = tmp_path / "scores.csv"
    table.write_text("text,score\nyou stupid idiot,0.9\n")
    rc = main([*argv, "--detector", f"cached:{table}"])
    rows, err = lines(capsys)
    source, variants = rows[0], rows[1:]
    assert source["scores"]["cached"]["toxicity"] == 0.9 and "error" not in source["scores"]["cached"]
    assert variants and all(v["scores"]["cached"]["toxicity"] is None
                            and v["scores"]["cached"]["error"] == "missing: detector has no score for this text"
                            and v["scores"]["profanity-check"]["toxicity"] is not None for v in variants)
    assert f"detector cached gave no score for {len(variants)} of {len(rows)} texts (missing: " in err, err
    assert rc == 1
