"""The parts an attack is composed of (TextAttack's decomposition): transformations propose
changes to one word, constraints accept or reject whole candidate texts, a search method
(`perturb/search/`) decides which words to try and which candidates to keep.

Every change is expressed against the *source* text's words (`generate.word_slots`), never
against an intermediate text, so a candidate is simply the set of changes it makes and can be
rebuilt, explained and compared (`apply_changes`).
"""
from __future__ import annotations

import random
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any, Callable, Sequence

from modlens.perturb import registry as strategy_registry
from modlens.perturb.generate import WordSlot, recorded_options, rng_for, word_slots
from modlens.perturb.strategies._word import Strategy


@dataclass(frozen=True)
class WordChange:
    """One edit of one word of the source text."""
    word_index: int               # WordSlot.index in the source text
    word: str                     # the source word (its core, without punctuation)
    new: str                      # what replaces the core ("" = the word is deleted; insertion: see below)
    transformation: str           # registry key of the transformation that proposed it
    params: dict[str, Any]        # what the transformation did
    spans: tuple[tuple[int, int], ...] = ()   # replaced spans inside the word (character edits); () = whole word
    insert_after: bool = False    # True: `new` is inserted as a new word after `word_index`; `word` unchanged

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"word_index": self.word_index, "word": self.word, "new": self.new,
                             "transformation": self.transformation, "params": self.params}
        if self.spans:
            d["spans"] = [list(s) for s in self.spans]
        if self.insert_after:
            d["insert_after"] = True
        return d


@dataclass(frozen=True)
class Candidate:
    """A proposed adversarial text."""
    text: str
    changes: tuple[WordChange, ...]   # all changes from the source, by word_index


class Transformation(ABC):
    """Proposes changes for ONE word in context."""
    key: str = ""
    kind: str = "word"            # "char" | "word"
    description: str = ""

    def availability(self) -> str | None:
        """None when usable, else a one-line reason with the fix."""
        return None

    def data(self) -> dict[str, Any]:
        """The data it proposes from beyond its code, by content (`Strategy.data`); {} for none."""
        return {}

    @abstractmethod
    def changes(self, text: str, slots: Sequence[WordSlot], index: int, rng: random.Random,
                k: int) -> list[WordChange]:
        """Up to k alternatives for word `index` of `text` (deterministic given rng)."""

    def propose(self, text: str, slots: Sequence[WordSlot], index: int, seed: int, k: int) -> list[WordChange]:
        """The attack's call: `changes` with one RNG per transformation and word, drawn from the
        attack's seed (a transformation that draws otherwise overrides this)."""
        return self.changes(text, slots, index, random.Random(f"{seed}/{self.key}/{index}"), k)


class NoScore(str):
    """A verdict that says a constraint could not check the candidate (a judge had no score for
    it), not that the candidate failed it: the candidate is not accepted, since the rule cannot be
    confirmed, and is counted apart from the rejections (`Problem.unscored`)."""


class Constraint(ABC):
    """Accepts or rejects candidates. `stage` "pre": checked on every candidate before the
    target is queried (cheap); "post": only on candidates that reached the goal."""
    key: str = ""
    stage: str = "pre"

    def availability(self) -> str | None:
        return None

    def describe(self) -> dict[str, Any]:
        """Key + parameters, recorded with every attack."""
        return {"key": self.key}

    def for_run(self) -> "Constraint":
        """The constraint one attack run checks with: itself, or a fresh copy when it keeps what
        one run did (`judges_agree`: its queries and verdicts), since an audit runs several
        attacks at once on one `Attack` and each records only its own."""
        return self

    @abstractmethod
    def check_many(self, source: str, candidates: Sequence[Candidate]) -> list[str | None]:
        """One verdict per candidate: None = satisfied, else a short reason (a `NoScore` one
        when the constraint could not check it)."""


def _sorted(changes: Sequence[WordChange]) -> tuple[WordChange, ...]:
    return tuple(sorted(changes, key=lambda c: (c.word_index, c.insert_after)))


def apply_changes(source: str, changes: Sequence[WordChange]) -> Candidate:
    """The candidate text that makes `changes` to `source`.

    A replacement rewrites the word's core and keeps its punctuation ("(idiot!)" -> "(id1ot!)");
    when a word is deleted and nothing of its token is left, the token goes with one separating
    whitespace run, so no double space remains; insertions follow their word after one space,
    in the order given. Two replacements of one word: the later one wins (both were proposed
    from the source word; the `no_repeat` constraint can forbid it)."""
    slots = word_slots(source)
    replace: dict[int, WordChange] = {}
    inserts: dict[int, list[WordChange]] = {}
    for c in changes:
        if not 0 <= c.word_index < len(slots):
            raise ValueError(f"change of word {c.word_index}, but the text has {len(slots)} words")
        if c.insert_after:
            inserts.setdefault(c.word_index, []).append(c)
        else:
            replace[c.word_index] = c
    out: list[str] = []
    cursor, emitted, drop_gap = 0, False, False
    for slot in slots:
        gap = source[cursor:slot.start]
        token = source[slot.start:slot.end]
        if slot.index in replace:
            token = source[slot.start:slot.core_start] + replace[slot.index].new + source[slot.core_end:slot.end]
        extra = " ".join(c.new for c in inserts.get(slot.index, []) if c.new)
        token = f"{token} {extra}" if token and extra else (token or extra)
        cursor = slot.end
        if not token:  # the whole token was deleted: drop it and one gap beside it
            if not emitted:
                out.append(gap)  # leading whitespace of the text stays
                drop_gap = True
            continue
        out += ["" if drop_gap else gap, token]
        emitted, drop_gap = True, False
    out.append(source[cursor:])
    return Candidate("".join(out), _sorted(changes))


def source_positions(source: str, changes: Sequence[WordChange]) -> list[tuple[int, int]]:
    """The edited character spans in the source text (Variant.positions): the replaced spans
    of a character edit, the whole core of a word swap or deletion, and an empty span at the
    end of the word's token for an insertion."""
    slots = word_slots(source)
    out: list[tuple[int, int]] = []
    for c in _sorted(changes):
        slot = slots[c.word_index]
        if c.insert_after:
            out.append((slot.end, slot.end))
        elif c.spans:
            out += [(slot.core_start + s, slot.core_start + e) for s, e in c.spans]
        else:
            out.append((slot.core_start, slot.core_end))
    return out


DRAWS = ("stream", "attempt")


class CharacterTransformation(Transformation):
    """Adapts a character strategy (`perturb/strategies/*`) as a "char" transformation with key
    `char:<strategy key>`: k attempts, each with its own RNG, so the attempts differ and a seeded
    search reproduces them. `draws` says where each attempt's RNG comes from:
      stream  - drawn from the RNG the caller hands in (the recipes' transformations);
      attempt - `generate.rng_for(seed, strategy, word, attempt)`, the draws of the variant
                generator and of the character attack (`char_greedy`): an edit is reproduced from
                (seed, strategy, word index, attempt) alone. Needs the attack's seed (`propose`)."""
    kind = "char"

    def __init__(self, strategy_key: str, *, draws: str = "stream", **options: Any):
        if draws not in DRAWS:
            raise ValueError(f"draws must be one of {DRAWS}, not {draws!r}")
        self.strategy_key, self.draws = strategy_key, draws
        self.strategy: Strategy = strategy_registry.create(strategy_key, **options)
        self.options = options
        self.key = f"char:{strategy_key}"
        self.description = self.strategy.description

    def availability(self) -> str | None:
        return self.strategy.availability()

    def data(self) -> dict[str, Any]:
        return self.strategy.data()

    def changes(self, text: str, slots: Sequence[WordSlot], index: int, rng: random.Random,
                k: int) -> list[WordChange]:
        if self.draws != "stream":
            raise ValueError(f"{self.key} draws per attempt from the attack's seed: call propose(), "
                             "not changes() (it cannot sit inside a composite)")
        base = rng.getrandbits(64)
        return self._attempts(text, slots, index, k, lambda attempt: random.Random(f"{base}/{attempt}"))

    def propose(self, text: str, slots: Sequence[WordSlot], index: int, seed: int, k: int) -> list[WordChange]:
        if self.draws == "stream":
            return super().propose(text, slots, index, seed, k)
        return self._attempts(text, slots, index, k, lambda attempt: rng_for(seed, self.strategy_key, index, attempt))

    def _attempts(self, text: str, slots: Sequence[WordSlot], index: int, k: int,
                  rng: Callable[[int], random.Random]) -> list[WordChange]:
        word = slots[index].core(text)
        if sum(ch.isalpha() for ch in word) < 2:  # as generate.perturb_word: nothing to disguise
            return []
        out: list[WordChange] = []
        seen = {word}
        for attempt in range(max(k, 0)):
            edit = self.strategy.perturb(word, rng(attempt))
            if edit is None or edit.text in seen:
                continue
            seen.add(edit.text)
            params: dict[str, Any] = {"strategy": self.strategy_key, "attempt": attempt, "edit": edit.params}
            if self.draws != "stream":
                params["draws"] = self.draws
            if self.options:
                params["options"] = recorded_options(self.options)
            out.append(WordChange(index, word, edit.text, self.key, params, tuple((s, e) for s, e in edit.spans)))
        return out
