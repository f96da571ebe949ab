"""Plain `perturb` took a target whose word-importance call failed as no score (the heuristic ranks the
words) and dropped the error: when the lines' own scoring then succeeded it exited 0, though the target
gave no score for the texts that ranking sent. It now says so after every line, exit 1, as for a
detector that gave no score on a line. The target is a real plug-in detector whose first call raises."""
from __future__ import annotations

import json

from modlens.cli import main

from test_cli_detector_answer_without_label import plugins  # noqa: F401 (autouse: the plug-in package)


TEXTS = ["you are a stupid idiot", "what an idiot you are"]  # the first word-importance call raises, the second answers


def test_perturb_says_the_target_gave_no_score_for_the_word_importance(capsys):
    code = main(["perturb", *TEXTS, "--detector", "fails-once", "--target", "fails-once"])
    out = capsys.readouterr()
    lines = [json.loads(line) for line in out.out.splitlines()]
    sources = [line for line in lines if line["kind"] == "source"]
    assert [s["text"] for s in sources] == TEXTS and all("error" not in s["scores"]["fails-once"] for s in sources)
    first = [v for v in lines[1:lines.index(sources[1])]]  # the first text's variants: the heuristic ranked its words
    assert first and all(v["params"]["ranking"] == "heuristic" and v["target_detector"] is None for v in first)
    assert all("error" not in v["scores"]["fails-once"] for v in lines)  # the lines' scoring succeeded
    assert code == 1, out.err
    assert "target fails-once gave no score for the word removals of 1 of 2 texts (RuntimeError: model crashed)" \
        in out.err, out.err


def test_perturb_says_the_target_failed_when_another_detector_also_gave_no_score(capsys):
    """`labelless` answers no score for any line: its error and the target's are both said."""
    code = main(["perturb", *TEXTS, "--detector", "fails-once", "--detector", "labelless", "--target", "fails-once"])
    out = capsys.readouterr()
    assert code == 1, out.err
    assert "detector labelless gave no score for" in out.err, out.err
    assert "target fails-once gave no score for the word removals of 1 of 2 texts (RuntimeError: model crashed)" \
        in out.err, out.err
