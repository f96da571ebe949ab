"""`modlens attack --text` (and `perturb --attack`) stopped at the first text whose target or judge call
raised (a remote detector that is down, a model that crashed): no line for that text or any after it,
only the exception on stderr. `attack DATASET` records the same event as the attack's unknown result
(the target had no score for the seed, or a judge none for a flip) and goes on to the next text. The
texts path now does the same: a call that raises is no score for its texts, as the engine's batcher
makes it, every line is printed, and the command exits 1 afterwards (the score error, said per detector)."""
from __future__ import annotations

import json
import socket

import pytest

from modlens.cli import main
from modlens.perturb.attack_record import NO_SEED_SCORE, result_known

TEXTS = ["you are such an idiot honestly", "what a stupid idiot you are"]


@pytest.fixture
def study(tmp_path):
    """An http detector `down` whose every call fails: its port is held by a socket bound without
    listen() for the whole test, so nothing else can take it and a connection is refused."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
        path = tmp_path / "study.toml"
        path.write_text(f'[[detectors]]\nname = "http"\nid = "down"\n[detectors.options]\n'
                        f'url = "http://127.0.0.1:{port}/score"\nscore_path = "$.toxicity"\nretries = 0\ntimeout_s = 5\n',
                        encoding="utf-8")
        yield path


def _lines(out: str) -> list[dict]:
    return [json.loads(line) for line in out.splitlines()]


@pytest.mark.parametrize("command", [
    ["attack", "--target", "down", "--no-ensemble", "--recipe", "deepwordbug", "--text", *TEXTS],
    ["perturb", *TEXTS, "--target", "down", "--attack", "tae"],
], ids=["attack-text", "perturb-attack"])
def test_a_target_whose_call_raises_is_an_unknown_result_for_every_text(study, capsys, command):
    code = main([*command, "--config", str(study)])
    out = capsys.readouterr()
    lines = _lines(out.out)
    assert [(line["kind"], line["text"] if line["kind"] == "source" else line["source_text"]) for line in lines] \
        == [("source", TEXTS[0]), ("variant", TEXTS[0]), ("source", TEXTS[1]), ("variant", TEXTS[1])], out.err
    for variant in lines[1::2]:
        record = variant["attack"]
        assert (record["status"], record["reason"]) == ("skipped", NO_SEED_SCORE) and not result_known(record)
        assert variant["text"] == variant["source_text"]  # nothing made of a seed the target never answered
    assert all("Cannot connect" in line["scores"]["down"]["error"]
               for line in lines), lines
    assert code == 1, out.err
    assert "detector down gave no score for 4 of 4 texts" in out.err, out.err


def test_a_judge_whose_call_raises_leaves_the_flip_unknown(study, capsys):
    # the target answers (profanity-check flips "idiot" once it is misspelled); the judge is down: the
    # flip is neither accepted nor rejected, as the dataset path records a judge with no score
    code = main(["attack", "--target", "profanity-check", "--detector", "down", "--recipe", "deepwordbug",
                 "--max-queries", "20", "--text", TEXTS[0], "--config", str(study)])
    out = capsys.readouterr()
    lines = _lines(out.out)
    assert [line["kind"] for line in lines] == ["source", "variant"], out.err
    record = lines[1]["attack"]
    assert record["unscored_by_ensemble"] >= 1 and record["status"] != "success", record
    assert not result_known(record)
    assert code == 1, out.err
    assert "detector down gave no score" in out.err, out.err


def test_perturb_whose_target_call_raises_ranks_by_the_heuristic_and_goes_on(study, capsys):
    """Plain `perturb` (no attack) stopped the same way at a target whose word-importance call raised;
    the engine (daemon, audit) takes that call's failure as no score and ranks the words by the
    heuristic. It now does too: every text's lines, the variants naming no target, exit 1 (the score error)."""
    code = main(["perturb", *TEXTS, "--target", "down", "--config", str(study)])
    out = capsys.readouterr()
    lines = _lines(out.out)
    assert [line["text"] for line in lines if line["kind"] == "source"] == TEXTS, out.err
    variants = [line for line in lines if line["kind"] == "variant"]
    assert variants and all(v["params"]["ranking"] == "heuristic" and v["target_detector"] is None for v in variants)
    assert code == 1 and "detector down gave no score" in out.err, out.err
