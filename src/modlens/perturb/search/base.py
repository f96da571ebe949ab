"""What every search method works with: the target behind a query budget (`TargetOracle`) and
the attack problem (`Problem`: the source, the goal, the transformations and constraints).

A search only decides which words to try and which candidates to keep; proposing changes,
checking constraints and paying for queries happen here, the same way for every method:
- candidates are built from changes to the *source* words (`parts.apply_changes`);
- "pre" constraints run first, cheapest first, each only on the candidates still standing,
  so a costly check (sentence similarity) never sees what a cheap one rejected, and nothing
  rejected is ever sent to the target;
- the survivors of one step are scored in ONE batched target call;
- "post" constraints (the judges' AND rule, readability) run only on candidates that
  reached the goal, best first.
"""
from __future__ import annotations

from abc import ABC, abstractmethod
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Sequence

from modlens.detectors.base import Detector, LabelScores
from modlens.perturb.generate import WordSlot
from modlens.perturb.goals import Goal
from modlens.perturb.parts import Candidate, Constraint, NoScore, Transformation, WordChange, apply_changes


class TargetOracle:
    """The target detector behind a query budget and a cache: a text is never paid for twice.
    `queries` counts every distinct text sent to the target (the seed included), `calls` the
    detector calls that carried them; a text sent that it had no score for is cached as None
    (`Problem.score` counts the candidates among them). `batch=False` sends one text per call (the
    bench's baseline); results are the same."""

    def __init__(self, detector: Detector, max_queries: int, batch: bool = True):
        if max_queries < 1:
            raise ValueError("max_queries must be >= 1")
        self.detector, self.max_queries, self.batch = detector, max_queries, batch
        self.queries = 0
        self.calls = 0
        self.cache: dict[str, LabelScores | None] = {}

    @property
    def remaining(self) -> int:
        return self.max_queries - self.queries

    def results(self, texts: Sequence[str]) -> list[LabelScores | None]:
        """Results for what the budget allows; texts beyond it (and unscored ones) are None."""
        new = [t for t in dict.fromkeys(texts) if t not in self.cache][: max(self.remaining, 0)]
        if new:
            batches = [new] if self.batch else [[t] for t in new]
            for b in batches:
                out = self.detector.score(b)
                self.calls += 1
                self.queries += len(b)
                for t, r in zip(b, out):
                    self.cache[t] = r
        return [self.cache.get(t) for t in texts]


@dataclass
class Scored:
    candidate: Candidate
    result: LabelScores | None
    progress: float | None       # larger is closer to the goal; None: unscored (budget or no answer)
    reached: bool


@dataclass
class Problem:
    """One attack on one seed text, as the search sees it."""
    source: str
    slots: list[WordSlot]
    goal: Goal
    oracle: TargetOracle
    transformations: list[Transformation]
    pre: list[Constraint]
    post: list[Constraint]
    seed: int = 0
    k: int = 2                                   # changes per transformation per word
    max_words: int | None = None                 # from a max_words_changed constraint, if any
    rejected: Counter[str] = field(default_factory=Counter)   # constraint key -> candidates it rejected
    last_post_rejection: dict[str, str] = field(default_factory=dict)
    # candidates a post constraint could not check (a judge had no score): not accepted, never a rejection
    unscored: Counter[str] = field(default_factory=Counter)
    last_unscored: dict[str, str] = field(default_factory=dict)
    post_texts: dict[str, list[str]] = field(default_factory=dict)    # texts of each post constraint's last check
    info: dict[str, Any] = field(default_factory=dict)        # what the search wants recorded
    # every scored candidate that reached the goal, and the texts the post constraints have seen:
    # a success scored on the way (PWWS's ranking scores every word's swaps) is never thrown away
    reached: list[Scored] = field(default_factory=list)
    post_checked: set[str] = field(default_factory=set)
    # candidates sent to the target that it had no score for (its call failed): never judged. The
    # seed and a ranking's word-importance texts are not candidates and are not counted
    unscored_by_target: set[str] = field(default_factory=set)
    _proposals: dict[int, list[WordChange]] = field(default_factory=dict)

    @property
    def origin(self) -> Candidate:
        return Candidate(self.source, ())

    # --- proposing -------------------------------------------------------------------------
    def proposals(self, index: int) -> list[WordChange]:
        """Every transformation's changes for source word `index` (deterministic per seed, made once)."""
        if index in self._proposals:
            return self._proposals[index]
        out: list[WordChange] = []
        for t in self.transformations:
            out += t.propose(self.source, self.slots, index, self.seed, self.k)
        self._proposals[index] = out
        return out

    def extend(self, current: Candidate, indices: Sequence[int]) -> list[Candidate]:
        """`current` plus one more change at each of `indices`, without duplicate texts, the
        seed itself or `current`, filtered by the pre constraints (no query spent)."""
        seen = {self.source, current.text}
        cands: list[Candidate] = []
        for i in indices:
            for change in self.proposals(i):
                cand = apply_changes(self.source, [*current.changes, change])
                if cand.text not in seen:
                    seen.add(cand.text)
                    cands.append(cand)
        return self.check_pre(cands)

    def editable(self) -> list[int]:
        """The source words a change may be made to: some transformation proposes a change there
        that every pre constraint allows for that word alone (`Constraint.allows`: no stop word).
        Rankings score only these, so no query is spent on a word the attack may not edit."""
        checks = [c for c in self.pre if hasattr(c, "allows")]
        return [i for i in range(len(self.slots))
                if any(all(c.allows(ch) for c in checks) for ch in self.proposals(i))]

    def check_pre(self, cands: list[Candidate]) -> list[Candidate]:
        for c in self.pre:
            if not cands:
                break
            verdicts = c.check_many(self.source, cands)
            kept = [cand for cand, v in zip(cands, verdicts) if v is None]
            self.rejected[c.key] += len(cands) - len(kept)
            cands = kept
        return cands

    # --- querying --------------------------------------------------------------------------
    def score(self, cands: Sequence[Candidate]) -> list[Scored]:
        """One batched target call for all candidates (those beyond the budget stay unscored)."""
        results = self.oracle.results([c.text for c in cands])
        # None for a text sent (in the cache) is the target's missing answer; for one not sent, the budget's
        self.unscored_by_target.update(c.text for c, r in zip(cands, results) if r is None and c.text in self.oracle.cache)
        scored = [Scored(c, r, self.goal.progress(r), bool(self.goal.reached(r))) for c, r in zip(cands, results)]
        self.reached += [s for s in scored if s.reached and s.progress is not None]
        return scored

    def accept(self, reached: Sequence[Scored]) -> Scored | None:
        """The best reached candidate that passes every post constraint (checked in one batch
        per constraint, best first), else None; rejections are counted per constraint, and
        apart from them the candidates it could not check (`NoScore`)."""
        pending = sorted(reached, key=lambda s: -(s.progress or 0.0))
        self.post_checked.update(s.candidate.text for s in pending)
        if not self.post:
            return pending[0] if pending else None
        for c in self.post:
            if not pending:
                break
            self.post_texts[c.key] = [s.candidate.text for s in pending]
            verdicts = c.check_many(self.source, [s.candidate for s in pending])
            kept = []
            for s, v in zip(pending, verdicts):
                if v is None:
                    kept.append(s)
                elif isinstance(v, NoScore):
                    self.unscored[c.key] += 1
                    self.last_unscored[c.key] = v
                else:
                    self.rejected[c.key] += 1
                    self.last_post_rejection[c.key] = v
            pending = kept
        if pending:
            return pending[0]
        return None

    def best_unchecked(self) -> Scored | None:
        """The best success already scored that no post constraint has judged yet (one the
        search passed over, e.g. while ranking), accepted as `accept` would; else None."""
        return self.accept([s for s in self.reached if s.candidate.text not in self.post_checked])

    def words_changed(self, cand: Candidate) -> int:
        return len({(c.word_index, c.insert_after) for c in cand.changes})

    def at_edit_limit(self, cand: Candidate) -> bool:
        return self.max_words is not None and self.words_changed(cand) >= self.max_words


@dataclass
class Outcome:
    """What a search found: `best` is the accepted success, or the best partial candidate."""
    status: str                  # "success" | "failed"
    best: Candidate
    best_result: LabelScores | None
    reason: str | None = None


class SearchMethod(ABC):
    key: str = ""
    description: str = ""

    def describe(self) -> dict[str, Any]:
        return {"key": self.key}

    @abstractmethod
    def search(self, problem: Problem, seed_result: LabelScores) -> Outcome:
        """Look for a candidate that reaches the goal and passes the constraints."""


def failure_reason(problem: Problem, default: str) -> str:
    """Why a search ended without success, in the words docs/PERTURB.md lists. A candidate a
    judge had no score for was not rejected by the judges: said apart. Candidates the target had no
    score for (one may have flipped it: the result is unknown) are said first, before what the
    judges did with the flips it answered, the budget, the edit limit or "no candidate flipped"."""
    def by(keys: list[str]) -> str:
        return "the judges" if keys == ["judges_agree"] else ", ".join(keys)

    n = len(problem.unscored_by_target)
    no_target = f"the target had no score for {n} candidate{'s' * (n != 1)}" if n else ""
    rejected, unscored = sorted(problem.last_post_rejection), sorted(problem.last_unscored)
    lacked = "lacked a judge's score" if unscored == ["judges_agree"] else f"could not be checked by {by(unscored)}"
    judged = ""
    if rejected and unscored:
        judged = f"every flipping candidate was rejected by {by(rejected)} or {lacked}"
    elif rejected:
        judged = f"every flipping candidate was rejected by {by(rejected)}"
    elif unscored:
        judged = f"every flipping candidate {lacked}"
    if no_target or judged:
        return "; ".join(filter(None, (no_target, judged)))
    if problem.oracle.remaining <= 0:
        return "query budget exhausted"
    return default
