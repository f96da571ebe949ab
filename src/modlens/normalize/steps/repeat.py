"""Repeated letters: every run of a letter is read as one or two of it, and the dictionary
picks ("idiooot" -> idiot, "gooood" -> good, "kiiill" -> kill)."""
from __future__ import annotations

import itertools
import re

from modlens.normalize.lexicon import Lexicon
from modlens.normalize.steps._base import Hypothesis, Step, keep_best

RUN = re.compile(r"([a-z])\1+")
MAX_RUNS = 6
SQUEEZE_COST = 0.25  # per run shortened: an elongation is cheap to undo


class Repeat(Step):
    name = "repeat"

    def expand(self, hyps: list[Hypothesis], lexicon: Lexicon) -> list[Hypothesis]:
        out = []
        for hyp in hyps:
            out.append(hyp)
            runs = list(RUN.finditer(hyp.text))[:MAX_RUNS]
            if not runs:
                continue
            for lengths in itertools.product((1, 2), repeat=len(runs)):
                pieces, last, cost = [], 0, 0.0
                for run, n in zip(runs, lengths):
                    pieces.append(hyp.text[last:run.start()] + run.group(1) * n)
                    last = run.end()
                    cost += SQUEEZE_COST if n < len(run.group(0)) else 0.0
                pieces.append(hyp.text[last:])
                out.append(hyp.but("".join(pieces), cost, self.name))
        return keep_best(out)
