"""No change to a stop word (TextAttack's StopwordModification, used by TextFooler, PWWS, A2T,
DeepWordBug, TextBugger): swapping "the" or "you" moves a detector without saying anything new,
and reads as broken English. Inserting a filler after a stop word leaves the stop word itself
alone, so it passes.

The list is modlens's function words (`perturb.importance.STOPWORDS`) and NLTK's English
stop-word list. Words are compared as NLTK's list would have them: lower case, typographic
apostrophes as "'", and a contraction is a stop word when its parts are ("you're" = "you" +
"re", "can't" = "can" + "t", "I'm" = "i" + "m": NLTK lists the clitics "re", "t", "m", "s", "ll",
"ve", "d"). Words keep their apostrophes in the source text, so without this "you're" was
editable ("you're trash" -> "yovu're trash")."""
from __future__ import annotations

from typing import Any, Sequence

from modlens.perturb.importance import STOPWORDS
from modlens.perturb.parts import Candidate, Constraint, WordChange

# NLTK's English stop words (nltk.corpus.stopwords, 179 words), as a word list
NLTK_ENGLISH = frozenset("""
i me my myself we our ours ourselves you you're you've you'll you'd your yours yourself yourselves he him his
himself she she's her hers herself it it's its itself they them their theirs themselves what which who whom this
that that'll these those am is are was were be been being have has had having do does did doing a an the and but
if or because as until while of at by for with about against between into through during before after above below
to from up down in out on off over under again further then once here there when where why how all any both each
few more most other some such no nor not only own same so than too very s t can will just don don't should
should've now d ll m o re ve y ain aren aren't couldn couldn't didn didn't doesn doesn't hadn hadn't hasn hasn't
haven haven't isn isn't ma mightn mightn't mustn mustn't needn needn't shan shan't shouldn shouldn't wasn wasn't
weren weren't won won't wouldn wouldn't
""".split())
DEFAULT_STOPWORDS = STOPWORDS | NLTK_ENGLISH
APOSTROPHES = str.maketrans({"\u2019": "'", "\u2018": "'", "\u02bc": "'", "`": "'", "\u00b4": "'"})


def is_stopword(word: str, stopwords: frozenset[str]) -> bool:
    """`word` (a source word's core) is a stop word: itself, or every part of a contraction."""
    w = word.translate(APOSTROPHES).lower()
    if w in stopwords or w.replace("'", "") in stopwords:
        return True
    parts = [p for p in w.split("'") if p]
    return len(parts) > 1 and all(p in stopwords for p in parts)


class NoStopword(Constraint):
    key = "no_stopword"
    stage = "pre"

    def __init__(self, stopwords: Sequence[str] | None = None):
        self.custom = stopwords is not None
        self.stopwords = frozenset(w.lower() for w in stopwords) if stopwords is not None else DEFAULT_STOPWORDS

    def describe(self) -> dict[str, Any]:
        d: dict[str, Any] = {"key": self.key, "n_stopwords": len(self.stopwords),
                             "stopwords": "custom" if self.custom else
                             "modlens.perturb.importance.STOPWORDS + NLTK English; contractions by their parts"}
        if self.custom:
            d["list"] = sorted(self.stopwords)
        return d

    def allows(self, change: WordChange) -> bool:
        """The change alone keeps every stop word (searches rank only words some change may edit)."""
        return change.insert_after or not is_stopword(change.word, self.stopwords)

    def check_many(self, source: str, candidates: Sequence[Candidate]) -> list[str | None]:
        out: list[str | None] = []
        for cand in candidates:
            hit = next((c for c in cand.changes if not self.allows(c)), None)
            out.append(None if hit is None else f"changes stop word {hit.word!r} (word {hit.word_index})")
        return out
