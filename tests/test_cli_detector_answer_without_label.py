"""A detector whose answer lacks its toxicity label (a plug-in answering {"other": 0.5}) has no score for
that text: the engine makes it an error row (`DetectorRunner.result`: "bad answer"), and the attack's
view of a detector (`CallFailureAsNoScore`) no score. `modlens score`, `perturb` and `attack --text`
printed their lines through `detector_answers`, which read the toxicity without that rule: KeyError
'toxic' from the first such text, no line for it or any after. They now put the error in the text's
answer, print every line and exit 1 after them, as for a call that failed.

The detectors are a real plug-in package (an entry point, as CONTRIBUTING.md's example installs one)."""
from __future__ import annotations

import json

import pytest

from modlens.cli import main
from modlens.detectors import registry

from test_plugins import install

PLUGIN = '''
from modlens.detectors.base import Detector


class Labelless(Detector):
    """Answers a label that is not its toxicity label."""
    name, version, labels, toxicity_label = "labelless", "1", ("toxic",), "toxic"

    def score(self, texts):
        return [{"other": 0.5} for _ in texts]


class FailsOnce(Detector):
    """Its first call raises (a model that crashed once), every later one answers."""
    name, version, labels, toxicity_label = "fails-once", "1", ("toxic",), "toxic"

    def __init__(self):
        self.calls = 0

    def score(self, texts):
        self.calls += 1
        if self.calls == 1:
            raise RuntimeError("model crashed")
        return [{"toxic": 0.9 if "idiot" in t else 0.1} for t in texts]


def labelless(**_):
    return Labelless()


def fails_once(**_):
    return FailsOnce()
'''

TEXTS = ["you are a stupid idiot", "what an idiot"]


@pytest.fixture(autouse=True)
def plugins(tmp_path, monkeypatch):
    site = tmp_path / "site"
    install(site, "modlens-odd", "1.0", {"odd_labelless.py": PLUGIN + "create = labelless\n",
                                         "odd_fails_once.py": PLUGIN + "create = fails_once\n"},
            {"modlens.detectors": {"labelless": "odd_labelless", "fails-once": "odd_fails_once"}})
    monkeypatch.syspath_prepend(str(site))
    registry.DETECTORS.refresh()
    yield
    monkeypatch.undo()
    registry.DETECTORS.refresh()


def _lines(out: str) -> list[dict]:
    return [json.loads(line) for line in out.splitlines()]


def _bad_answer(answer: dict) -> bool:
    return answer["error"].startswith("bad answer: KeyError") and answer["toxicity"] is None


def test_score_puts_an_answer_without_the_label_on_its_line(capsys):
    code = main(["score", *TEXTS, "--detectors", "profanity-check", "labelless"])
    out = capsys.readouterr()
    lines = _lines(out.out)
    assert [line["text"] for line in lines] == TEXTS, out.err
    assert all(_bad_answer(line["scores"]["labelless"]) for line in lines), lines
    assert all("error" not in line["scores"]["profanity-check"] for line in lines), lines
    assert code == 1 and "detector labelless gave no score for 2 of 2 texts (bad answer: KeyError" in out.err, out.err


@pytest.mark.parametrize("command", [
    ["perturb", *TEXTS, "--detector", "profanity-check", "--detector", "labelless", "--target", "profanity-check"],
    ["perturb", *TEXTS, "--detector", "profanity-check", "--detector", "labelless", "--target", "profanity-check",
     "--attack", "tae", "--max-queries", "10"],
    ["attack", "--recipe", "deepwordbug", "--target", "profanity-check", "--detector", "labelless",
     "--max-queries", "10", "--text", *TEXTS],
], ids=["perturb", "perturb-attack", "attack-text"])
def test_every_line_is_printed_with_the_error(capsys, command):
    code = main(command)
    out = capsys.readouterr()
    lines = _lines(out.out)
    assert [line["text"] for line in lines if line["kind"] == "source"] == TEXTS, out.err
    assert len(lines) > len(TEXTS)  # the variants too
    assert all(_bad_answer(line["scores"]["labelless"]) for line in lines), lines
    assert code == 1 and "detector labelless gave no score" in out.err, out.err

