"""Beam search of width k (TextAttack's BeamSearch; ToxicTrap's beam recipes): keep the k best
candidates; each step extends every one of them by one more change at every word, scores all
new candidates in ONE batched call, stops at the best one that reaches the goal and passes the
post constraints, else keeps the k best (greedy is width 1 without the fixed word order).

Words are tried in the order of the `delete` ranking (or `unk`), so when the query budget
cannot pay for a whole step, the candidates it does pay for are those at the most important
words. A text already expanded is never expanded again, so the search ends: at the edit limit
(a max_words_changed constraint), when no new candidate is left, or when the budget is spent.
"""
from __future__ import annotations

from typing import Any

from modlens.detectors.base import LabelScores
from modlens.perturb.parts import Candidate
from modlens.perturb.search.base import Outcome, Problem, SearchMethod, Scored, failure_reason
from modlens.perturb.search.ranking import rank


class BeamSearch(SearchMethod):
    key = "beam"
    description = "beam search of width k over every word, words in importance order"

    def __init__(self, width: int = 4, ranking: str = "delete", max_steps: int | None = None):
        if width < 1:
            raise ValueError("beam width must be >= 1")
        if ranking not in ("delete", "unk"):
            raise ValueError("beam ranking must be 'delete' or 'unk'")
        if max_steps is not None and max_steps < 1:
            raise ValueError("max_steps must be >= 1")
        self.width, self.ranking, self.max_steps = width, ranking, max_steps

    def describe(self) -> dict[str, Any]:
        return {"key": self.key, "width": self.width, "ranking": self.ranking, "max_steps": self.max_steps}

    def search(self, problem: Problem, seed_result: LabelScores) -> Outcome:
        order = rank(problem, seed_result, self.ranking)
        seed_progress = problem.goal.progress(seed_result)
        assert seed_progress is not None
        beams: list[Scored] = [Scored(problem.origin, seed_result, seed_progress, False)]
        best = beams[0]
        expanded: set[str] = set()
        default, steps = "no candidate flipped the target", 0
        while True:
            if problem.oracle.remaining <= 0:
                break
            if self.max_steps is not None and steps >= self.max_steps:
                default = "beam search step limit reached"
                break
            steps += 1
            pool: dict[str, Candidate] = {}
            expanded.update(b.candidate.text for b in beams)  # no beam is proposed again as another's extension
            for b in beams:
                if problem.at_edit_limit(b.candidate):
                    continue
                for cand in problem.extend(b.candidate, order):
                    if cand.text not in expanded:
                        pool.setdefault(cand.text, cand)
            if not pool:
                default = "edit limit reached" if all(problem.at_edit_limit(b.candidate) for b in beams) \
                    else "no new candidate to try"
                break
            scored = [s for s in problem.score(list(pool.values())) if s.progress is not None]
            ok = problem.accept([s for s in scored if s.reached])
            if ok is not None:
                problem.info["beam_steps"] = steps
                return Outcome("success", ok.candidate, ok.result)
            # Reached-but-rejected candidates are dead ends: extending them keeps them rejected
            # as often as not, and they would crowd out candidates the constraints accept.
            alive = sorted((s for s in scored if not s.reached), key=lambda s: -s.progress)  # type: ignore[operator]
            if not alive:
                break
            beams = alive[: self.width]
            if beams[0].progress > best.progress:  # type: ignore[operator]
                best = beams[0]
        problem.info["beam_steps"] = steps
        return Outcome("failed", best.candidate, best.result, failure_reason(problem, default))
