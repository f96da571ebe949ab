"""Repeated letters: every run of a letter is read as one or two of it, and the dictionary
picks ("idiooot" -> idiot, "gooood" -> good, "kiiill" -> kill)."""
from __future__ import annotations

import re

from modlens.normalize.lexicon import Lexicon
from modlens.normalize.steps._base import Hypothesis, Step, keep_best

RUN = re.compile(r"([a-z])\1+")
MAX_RUNS = 6
SQUEEZE_COST = 0.25  # per run shortened: an elongation is cheap to undo


def readings(text: str) -> list[tuple[str, float]]:
    """(spelling, cost) for every choice of one or two letters per run (the first MAX_RUNS
    runs), the first run varying slowest; [] when `text` has no run."""
    texts, costs, last = [""], [0.0], 0
    for i, run in enumerate(RUN.finditer(text)):
        if i == MAX_RUNS:
            break
        before, one = text[last:run.start()], run.group(1)
        two_cost = SQUEEZE_COST if run.end() - run.start() > 2 else 0.0
        # built a run at a time: 2 + 4 + ... strings instead of 2**runs joins of every piece
        texts = [t + before + piece for t in texts for piece in (one, one + one)]
        costs = [c + extra for c in costs for extra in (SQUEEZE_COST, two_cost)]
        last = run.end()
    if last == 0:
        return []
    tail = text[last:]
    return [(t + tail, c) for t, c in zip(texts, costs)]


class Repeat(Step):
    name = "repeat"
    symbols = frozenset()  # only squeezes runs of a-z letters

    def expand(self, hyps: list[Hypothesis], lexicon: Lexicon) -> list[Hypothesis]:
        out = []
        for hyp in hyps:
            out.append(hyp)
            out.extend(hyp.but(text, cost, self.name) for text, cost in readings(hyp.text))
        return keep_best(out)
