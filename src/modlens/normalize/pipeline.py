"""The normalizer: a pipeline of steps (see `steps/`) applied token by token.

For each whitespace token: fold Unicode, split off punctuation, and if the word is known
leave it alone. Otherwise let the rewrite steps propose spellings (leet, placeholders,
repeated letters), and if none is a known word let the search steps look for one (dropped
letters, one-edit typos, pyspellchecker). Every known candidate scores lexicon prior minus
rewriting cost; the best one replaces the word if it clears `ACCEPT_FLOOR`. An unknown word
may instead be cut into known words (deleted spaces) when that scores better than every
one-word repair. Results are cached per token, so a live stream pays the search once per
distinct misspelling.
"""
from __future__ import annotations

import hashlib
import io
import math
import re
import unicodedata
from functools import lru_cache
from typing import Iterator

from modlens.normalize.base import Edit, Normalized
from modlens.normalize.lexicon import Lexicon, load_lexicon
from modlens.normalize.steps import DEFAULT_STEPS, REGISTRY, make_step
from modlens.normalize.steps._base import WILDCARD, Hypothesis, Span, Step, keep_best
from modlens.normalize.steps.mixed_case import is_mixed
from modlens.normalize.tables import tables_digest

# bump when the code of the pipeline or a built-in step changes what it writes; its tables (maps, word
# lists, costs, patterns) are named by their bytes in the version (`tables.py`): no bump for them
PIPELINE_REVISION = "5"
ACCEPT_FLOOR = -2.0      # a correction must score at least this (prior minus cost)
# English contractions written without their apostrophe ("werent", "theyre"): informal spellings of
# known words, not disguises. The lexicon lacks many of them but holds the fragments a tokenizer
# leaves of the contraction ("weren", "hasn"), which the one-edit search would otherwise pick,
# dropping the negation or the verb. A closed class, listed, not learned.
_NT = "are|could|did|does|do|had|has|have|is|might|must|need|should|was|were|would|ca|wo|sha|ai"
_CLITICS = {"re": "you|we|they|who|what", "ll": "i|you|he|she|it|we|they|that|there|who|what",
            "ve": "i|you|we|they|who|would|could|should|might|must", "d": "i|you|he|she|it|we|they|who|that|there",
            "s": "he|she|it|that|there|here|what|who|where|how|let", "m": "i"}
CONTRACTION = re.compile("|".join([f"(?:{_NT})nt", *(f"(?:{hosts}){c}" for c, hosts in _CLITICS.items())]))
SEARCH_BEAM = 3          # spellings handed to the search steps
MAX_WORD_CHARS = 40      # longer tokens are not disguised words (and would be slow to search)
# tokens handed to the text steps at a time (`Normalizer.windows`): a long text's tokens are never all
# held at once (a 5 MB field is about a million, ~200 bytes each as spans)
WINDOW_SPANS = 4096

EDGE_PUNCT = "\"'“”‘’«»()[]{}<>,;:?…"    # always punctuation at a word's edge
AMBIGUOUS_EDGE = ".!*-_@|"   # punctuation, or a letter in disguise ("$" never is punctuation)
SKIP = re.compile(r"(?:https?://|www\.)\S+|\S+@\S+\.\w+|#\w+", re.I)
MENTION = re.compile(r"@\w+")
NUMERIC = re.compile(r"[\d.,:/%$€£+\-x]+|\d+(?:st|nd|rd|th|s|am|pm|k|m|bn|x|h|yo)?", re.I)
TOKEN = re.compile(r"\S+")
SPLIT_ANY, SPLIT_AFTER_FUNCTION_WORD, SPLIT_NEVER = "any", "after_function_word", "never"
FUNCTION_WORD_CHARS = 2  # word_split only lets one- and two-letter parts be common function words
SENTENCE_END = re.compile(r"[.!?…][\"'”’)\]]*$")


def split_edges(token: str, chars: str) -> tuple[str, str, str]:
    core = token.strip(chars)
    if not core:
        return "", token, ""
    lead = token[: len(token) - len(token.lstrip(chars))]
    return lead, core, token[len(lead) + len(core):]


def apply_case(word: str, like: str) -> str:
    letters = [c for c in like if c.isalpha()]
    if len(letters) > 1 and all(c.isupper() for c in letters):
        return word.upper()
    if letters and letters[0].isupper() and not any(c.isupper() for c in letters[1:]):
        return word[:1].upper() + word[1:]
    return word


def sigmoid(x: float) -> float:
    return 1.0 / (1.0 + math.exp(-x))


# one token's result: normalized token, the step that made it ("" when unchanged), confidence, hidden word
TokenResult = tuple[str, str, float, str | None]
# a token cut at its edges: (leading punctuation, core, trailing punctuation)
EdgeSplit = tuple[str, str, str]
# a known word one token may stand for: (score, word, how it was reached, the split it came from)
Scored = tuple[float, str, Hypothesis, EdgeSplit]


class Normalizer:
    def __init__(self, steps: list[str] | None = None, lexicon: Lexicon | None = None):
        self.step_names = list(DEFAULT_STEPS if steps is None else steps)
        self.steps = [make_step(n) for n in self.step_names]
        self.lexicon = lexicon or load_lexicon()
        self.text_steps, self.char_steps = self._of_kind("text"), self._of_kind("char")
        self.case_steps, self.rewrite_steps = self._of_kind("case"), self._of_kind("rewrite")
        self.split_steps = self._of_kind("split")
        self.search_steps = [s for s in self._of_kind("search") if s.name != "pyspell"]
        self.fallback_steps = [s for s in self._of_kind("search") if s.name == "pyspell"]
        self.name = "modlens-normalizer"
        # a plug-in step's package and version are part of the normalizer's (built-ins: modlens's revision
        # and the bytes of every built-in table, the weights and the contraction list among them)
        plugins = [f"{n}={REGISTRY.origin(n)}" for n in self.step_names if REGISTRY.origin(n)]
        # what a step reads from outside modlens (a dependency's word list, the Unicode database) too
        models = [f"{s.name}={m}" for s in self.steps if (m := s.model())]
        # every step list reads the running Python's Unicode database, not only the unicode step's NFKC:
        # str.isalpha, .lower and the patterns' \w, \s and \d decide what is a word and how it is cased
        key = "|".join([PIPELINE_REVISION, ",".join(self.step_names), self.lexicon.digest, tables_digest(),
                        f"unicodedata {unicodedata.unidata_version}", *plugins, *models])
        self.version = hashlib.sha256(key.encode()).hexdigest()[:12]
        self.token = lru_cache(maxsize=200_000)(self._token)
        self._rewritable = self._rewritable_symbols()

    def _of_kind(self, kind: str) -> list[Step]:
        return [s for s in self.steps if s.kind == kind]

    def _rewritable_symbols(self) -> frozenset[str] | None:
        """Non-letters some step can turn into a letter (or the wildcard); None when that is
        not known for sure, which turns the shortcut in `candidates` off."""
        rewrites = [s.symbols for s in self.rewrite_steps]
        searches_need_letters = all(s.letters_only for s in self.search_steps + self.fallback_steps)
        known = [symbols for symbols in rewrites if symbols is not None]
        if not self.lexicon.plain_letters or len(known) < len(rewrites) or not searches_need_letters:
            return None
        return frozenset(WILDCARD).union(*known)

    # ---- whole text -------------------------------------------------------------------------
    def normalize(self, text: str) -> Normalized:
        if not isinstance(text, str):
            raise TypeError(f"normalize() takes a str, not {type(text).__name__}")
        # the output is written as it is made, not kept as one string per token (a long text has millions)
        out, last = io.StringIO(newline=""), 0
        edits: list[Edit] = []
        hidden: str | None
        prev: Span | None = None
        for spans in self.windows(text):
            for text_step in self.text_steps:
                spans = text_step.merge(spans, self.lexicon)
            for span in spans:
                original = text[span.start:span.end]
                if span.merged:
                    new, step, conf, hidden = span.text, "spaced_letters", 0.9, None
                else:
                    new, step, conf, hidden = self.token(original, self._split_policy(text, prev, span))
                out.write(text[last:span.start])
                out.write(new)
                last, prev = span.end, span
                if new != original or hidden:
                    edits.append(Edit(span.start, span.end, original, new, step, conf, hidden))
        out.write(text[last:])
        return Normalized(out.getvalue(), edits, self.name, self.version)

    def windows(self, text: str) -> Iterator[list[Span]]:
        """The text's whitespace tokens in order, in lists of about `WINDOW_SPANS`, each cut only after a
        token no text step may join with the next (`Step.may_join`): the text steps merge within a
        window what they would have merged in the whole list, and a long text's tokens are never all
        held at once. (A text of nothing but joinable tokens is one window, as before.)"""
        window: list[Span] = []
        for m in TOKEN.finditer(text):
            span = Span(m.start(), m.end(), m.group())
            window.append(span)
            if len(window) >= WINDOW_SPANS and not any(step.may_join(span) for step in self.text_steps):
                yield window
                window = []
        if window:
            yield window

    @staticmethod
    def _split_policy(text: str, prev: Span | None, span: Span) -> str:
        """How a token may be cut into words: a Title-case token may be a name ("Goodwin"),
        so inside a sentence it is never cut, and at a sentence's start (`prev`: the token before,
        None for the first) only after a short function word ("Ihate", "Sosickening"; not "Mayweather")."""
        core = span.text.strip(EDGE_PUNCT)
        if not (len(core) > 1 and core[0].isupper() and core[1:].islower()):
            return SPLIT_ANY
        if prev is None or SENTENCE_END.search(prev.text) or "\n" in text[prev.end:span.start]:
            return SPLIT_AFTER_FUNCTION_WORD
        return SPLIT_NEVER

    # ---- one token --------------------------------------------------------------------------
    def _token(self, token: str, split_policy: str = SPLIT_ANY) -> TokenResult:
        """(normalized token, step, confidence, hidden word) for one whitespace token;
        `split_policy` says whether it may be cut into words (see `_split_policy`)."""
        folded = token
        for char_step in self.char_steps:
            folded = char_step.fold(folded, self.lexicon)
        lead, core, trail = split_edges(folded, EDGE_PUNCT)
        if (len(core) > MAX_WORD_CHARS or SKIP.fullmatch(core) or NUMERIC.fullmatch(core)
                or not any(c.isalnum() for c in core)):
            return (folded, "unicode", 1.0, None) if folded != token else (token, "", 1.0, None)
        hidden: str | None = None
        fold_case = False
        if self.case_steps and is_mixed(core):
            hidden = self.case_steps[0].hidden(core, self.lexicon)
            fold_case = True

        # "!diot!" is "diot" between punctuation or a disguised "idiot!": try both. A mixed run
        # such as "?!" is stripped whole, so no "?" is left inside the word ("that?!").
        both = AMBIGUOUS_EDGE + EDGE_PUNCT
        right = core.rstrip(EDGE_PUNCT + ".!")  # "*" and "_" may still mask letters ("f***?!")
        splits = [(lead, core, trail)]
        for il, inner, it in (("", right, core[len(right):]), split_edges(core, both)):
            if inner and inner != core and (lead + il, inner, it + trail) not in splits:
                splits.insert(0, (lead + il, inner, it + trail))
        for a, c, b in splits:
            if (len(c) > 1 or c == core) and self.is_known(c.lower()):
                if fold_case:
                    return a + c.lower() + b, "mixed_case", 1.0, hidden
                if folded != token:
                    return folded, "unicode", 1.0, None
                return token, "", 1.0, None

        best: Scored | None = None
        second: Scored | None = None
        # "@name" is a mention unless its "@" reads as a letter of a known word ("@nimal")
        search = not MENTION.fullmatch(core)
        for a, c, b in splits:
            for score, word, hyp in self.candidates(c.lower(), search):
                entry = (score, word, hyp, (a, c, b))
                if best is None or score > best[0]:
                    if best is not None and best[1] != word:
                        second = best
                    best = entry
                elif word != best[1] and (second is None or score > second[0]):
                    second = entry
        cut = self._split(splits, best, split_policy) if split_policy != SPLIT_NEVER and search else None
        if cut is not None:
            return cut
        if best is None or best[0] < ACCEPT_FLOOR:
            if fold_case:
                return folded.lower(), "mixed_case", 1.0, hidden
            return (folded, "unicode", 1.0, None) if folded != token else (token, "", 1.0, None)
        score, word, hyp, (a, c, b) = best
        confidence = sigmoid(score - (second[0] if second else ACCEPT_FLOOR))
        out = word if fold_case else apply_case(word, c)
        step = hyp.steps[-1] if hyp.steps else ("mixed_case" if fold_case else "unicode")
        return a + out + b, step, round(confidence, 3), hidden

    def _split(self, splits: list[EdgeSplit], best: Scored | None, policy: str) -> TokenResult | None:
        """The token cut into known words, when that beats the best one-word repair `best`
        (score, word, ...) or keeps letters that repair dropped ("Ihate": "I hate", not "Hate")."""
        for step in self.split_steps:
            for a, c, b in splits:
                found = step.split(c, self.lexicon)
                if found is None:
                    continue
                parts, score = found
                if policy == SPLIT_AFTER_FUNCTION_WORD and len(parts[0]) > FUNCTION_WORD_CHARS:
                    continue
                if best is None or best[0] < ACCEPT_FLOOR:
                    rival = ACCEPT_FLOOR
                elif best[1] in (p.lower() for p in parts):  # the repair only dropped letters
                    rival = ACCEPT_FLOOR
                elif score > best[0]:
                    rival = best[0]
                else:
                    continue
                return a + " ".join(parts) + b, step.name, round(sigmoid(score - rival), 3), None
        return None

    def candidates(self, word: str, search: bool = True) -> list[tuple[float, str, Hypothesis]]:
        """(score, known word, hypothesis) for every known word the steps reach from `word`."""
        if self._rewritable is not None and any(
                not c.isalpha() for c in set(word).difference(self._rewritable)):
            # a character no step rewrites (";" of "&#8221;") stays in every spelling, and no
            # known word or search result has it: the answer is none, without the hundreds
            # of leet spellings such tokens expand to
            return []
        hyps = [Hypothesis(word)]
        for step in self.rewrite_steps:
            hyps = step.expand(hyps, self.lexicon)
        # a symbol read as some letter beats one read as a wildcard; searching comes last
        found = [h for h in hyps if WILDCARD not in h.text and h.text in self.lexicon]
        if not found:
            # a literal "?" typed inside a word ("don?t") is no step's wildcard: leave it
            found = [h.but(w, 0.0, h.steps[-1]) for h in hyps if WILDCARD in h.text and h.steps
                     for w in self.lexicon.match(h.text)]
        if not found and search:
            beam = keep_best([h for h in hyps if WILDCARD not in h.text], SEARCH_BEAM)
            for steps in (self.search_steps, self.fallback_steps):
                found = [c for h in beam for s in steps for c in s.candidates(h, self.lexicon)]
                if found:
                    break
        return [(self.lexicon.prior(h.text) - h.cost, h.text, h) for h in found]

    def is_known(self, word: str) -> bool:
        if word in self.lexicon or CONTRACTION.fullmatch(word):
            return True
        word = word.replace("’", "'")
        for sep in "'-/":
            if sep in word:
                parts = [p for p in word.split(sep) if p]
                return bool(parts) and all(self.is_known(p) for p in parts)
        if "." in word:  # abbreviations such as "e.g", "u.s"; longer dotted runs get rejoined
            parts = word.split(".")
            return len(parts) <= 3 and all(p.isalpha() and len(p) <= 2 for p in parts)
        return False


def build_normalizer(steps: list[str] | None = None) -> Normalizer:
    """The normalizer with the given steps (names from `modlens.normalize.steps.STEPS`), or the
    default pipeline when `steps` is None."""
    return Normalizer(steps)
