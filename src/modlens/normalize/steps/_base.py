"""What a normalizer step is. Steps come in these kinds, run in this order for each token:

- `text`: sees the whole token sequence and may merge tokens (spaced-out letters);
- `char`: rewrites characters deterministically (Unicode folding);
- `rewrite`: proposes alternative spellings of a word (`Hypothesis`), each with a cost;
- `search`: finds known words close to a spelling that no rewrite turned into a known word;
- `split`: cuts an unknown token into known words (deleted spaces), used only when that
  scores better than every one-word repair (`case` steps only annotate, see mixed_case).

The pipeline scores every known candidate as lexicon prior minus cost and keeps the best.
"""
from __future__ import annotations

from dataclasses import dataclass
from operator import attrgetter
from typing import NamedTuple

from modlens.normalize.lexicon import Lexicon

WILDCARD = "?"  # a letter we know is hidden but not which one ("st*pid" -> "st?pid")
MAX_HYPOTHESES = 64


@dataclass(frozen=True, slots=True)  # one per token of a text: no __dict__ each (a long text has millions)
class Span:
    """A whitespace token of the text (`text` steps see and may merge them): its character span in the
    original text and its text; `merged` when a step joined several tokens into it."""
    start: int
    end: int
    text: str
    merged: bool = False


class Hypothesis(NamedTuple):
    """Immutable; a NamedTuple rather than a frozen dataclass because rewrite steps make
    hundreds of thousands of them on a tweet stream and a tuple is several times cheaper to
    create."""
    text: str                   # lowercase candidate spelling, may contain WILDCARD
    cost: float = 0.0           # how much rewriting it took (log-prior units)
    steps: tuple[str, ...] = ()  # steps that changed it, in order

    def but(self, text: str, extra_cost: float, step: str) -> "Hypothesis":
        if text == self.text:
            return self
        steps = self.steps if self.steps and self.steps[-1] == step else self.steps + (step,)
        return Hypothesis(text, self.cost + extra_cost, steps)


def keep_best(hyps: list[Hypothesis], limit: int = MAX_HYPOTHESES) -> list[Hypothesis]:
    """Deduplicate by text (cheapest wins) and keep the `limit` cheapest."""
    best: dict[str, Hypothesis] = {}
    for h in hyps:
        if h.text not in best or h.cost < best[h.text].cost:
            best[h.text] = h
    return sorted(best.values(), key=_by_cost)[:limit]


_by_cost = attrgetter("cost")


class Step:
    name: str = ""
    kind: str = "rewrite"  # "text" | "char" | "rewrite" | "search" | "case" | "split"
    # rewrite steps: the non-letter characters the step may replace or delete (None: any).
    # A word holding a non-letter that no step touches can never become a known word, so the
    # pipeline skips it ("&#8221;" in tweets): keep this exact when changing a step.
    symbols: frozenset[str] | None = None
    # search steps: True when the step finds nothing for a spelling with a non-letter in it
    letters_only: bool = False

    def model(self) -> str:
        """What the step reads that modlens does not ship and that decides its output (a dependency's
        word list, the Python's Unicode database), named by content or version: part of the
        normalizer's version, which no revision bumped by hand can follow. "" for none."""
        return ""

    def expand(self, hyps: list[Hypothesis], lexicon: Lexicon) -> list[Hypothesis]:
        """rewrite steps: the hypotheses plus their alternatives."""
        raise NotImplementedError

    def candidates(self, hyp: Hypothesis, lexicon: Lexicon) -> list[Hypothesis]:
        """search steps: known words reachable from `hyp`, with the cost of getting there."""
        raise NotImplementedError

    def merge(self, spans: list[Span], lexicon: Lexicon) -> list[Span]:
        """text steps: the token sequence, some tokens possibly merged into one."""
        raise NotImplementedError

    def may_join(self, span: Span) -> bool:
        """text steps: whether `merge` may join `span` with the token after it. The normalizer hands a
        long text's tokens to `merge` in windows, each cut only after a token no text step may join,
        so a window's merges are the whole text's (default: any token may: never cut)."""
        return True

    def fold(self, token: str, lexicon: Lexicon) -> str:
        """char steps: the token with its characters rewritten."""
        raise NotImplementedError

    def hidden(self, word: str, lexicon: Lexicon) -> str | None:
        """case steps: the word the word's case spells, if any (not a rewrite of the word)."""
        raise NotImplementedError

    def split(self, core: str, lexicon: Lexicon) -> tuple[list[str], float] | None:
        """split steps: the token cut into known words and the cut's score, or None."""
        raise NotImplementedError
