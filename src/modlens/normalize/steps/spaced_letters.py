"""Spaced-out letters ("s t u p i d", "k i l l."): a run of three or more single-letter
tokens that spells a known word is merged into one token. This is the one step that changes
the whitespace token count; the merged token's edit spans the whole run in the original."""
from __future__ import annotations

from modlens.normalize.lexicon import Lexicon
from modlens.normalize.steps._base import Span, Step

MIN_RUN = 3
TRAILING = ".,!?;:)\"'"
STANDALONE = {"a", "i"}  # real one-letter words that may sit next to a spelled-out word


def _letter(token: str) -> str | None:
    core = token.rstrip(TRAILING)
    return core.lower() if len(core) == 1 and core.isalpha() else None


class SpacedLetters(Step):
    name = "spaced_letters"
    kind = "text"

    def may_join(self, span: Span) -> bool:
        return _letter(span.text) is not None  # a run is single letters only: any other token ends it

    def merge(self, spans: list[Span], lexicon: Lexicon) -> list[Span]:
        out: list[Span] = []
        i = 0
        while i < len(spans):
            j = i
            while j < len(spans) and _letter(spans[j].text) and (j == i or spans[j - 1].text == spans[j - 1].text.rstrip(TRAILING)):
                j += 1
            merged = self._best_run(spans, i, j, lexicon) if j - i >= MIN_RUN else None
            if merged is None:
                out.append(spans[i])
                i += 1
                continue
            a, b = merged
            out.extend(spans[i:a])
            word = "".join(s.text.rstrip(TRAILING) for s in spans[a:b])
            trail = spans[b - 1].text[len(spans[b - 1].text.rstrip(TRAILING)):]
            out.append(Span(spans[a].start, spans[b - 1].end, word + trail, merged=True))
            out.extend(spans[b:j])
            i = j
        return out

    def _best_run(self, spans: list[Span], i: int, j: int, lexicon: Lexicon) -> tuple[int, int] | None:
        """The run [a, b) to merge: the whole run, or without a standalone a/i at either end."""
        for a in (i, i + 1):
            for b in (j, j - 1):
                if b - a < MIN_RUN:
                    continue
                if (a > i and _letter(spans[i].text) not in STANDALONE) or (b < j and _letter(spans[j - 1].text) not in STANDALONE):
                    continue
                # every span of [i, j) spells one letter (the run was built so)
                word = "".join(s.text.rstrip(TRAILING).lower() for s in spans[a:b])
                if word in lexicon:
                    return a, b
        return None
