"""Plain `perturb` took a target whose word-importance call failed as no score (the heuristic ranks the
words) and dropped the error: when the lines' own scoring then succeeded it exited 0, though the target
gave no score for the texts that ranking sent. It now says so after every line, exit 1, as for a
detector that gave no score on a line. The target is a real plug-in detector whose first call raises."""
from __future__ import annotations

import json

from modlens.cli import main

from test_cli_detector_answer_without_label import plugins  # noqa: F401 (autouse: the plug-in package)


def test_perturb_says_the_target_gave_no_score_for_the_word_importance(capsys):
    code = main(["perturb", "you are a stupid idiot", "--detector", "fails-once", "--target", "fails-once"])
    out = capsys.readouterr()
    lines = [json.loads(line) for line in out.out.splitlines()]
    assert lines[0]["kind"] == "source" and "error" not in lines[0]["scores"]["fails-once"], lines
    variants = lines[1:]
    assert variants and all(v["params"]["ranking"] == "heuristic" and v["target_detector"] is None for v in variants)
    assert all("error" not in v["scores"]["fails-once"] for v in variants)  # the lines' scoring succeeded
    assert code == 1, out.err
    assert "target fails-once gave no score for the word removals of 1 of 1 texts (RuntimeError: model crashed)" \
        in out.err, out.err
