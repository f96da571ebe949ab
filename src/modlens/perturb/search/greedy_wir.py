"""Greedy search over ranked words (Greedy-WIR; Morris et al. 2020; the search of TextFooler,
DeepWordBug, TextBugger, PWWS and A2T): visit the words most important first; at each word,
score every candidate change on top of the changes kept so far (one batched call); stop at
the best candidate that reaches the goal and passes the post constraints, else keep the best
candidate that moves toward the goal and go on to the next word."""
from __future__ import annotations

from typing import Any

from modlens.detectors.base import LabelScores
from modlens.perturb.search.base import Outcome, Problem, SearchMethod, failure_reason
from modlens.perturb.search.ranking import RANKINGS, rank


class GreedyWIR(SearchMethod):
    key = "greedy"
    description = "greedy word-importance ranking"
    ranking = "delete"

    def __init__(self, ranking: str | None = None):
        ranking = ranking or self.ranking
        if ranking not in RANKINGS:
            raise ValueError(f"ranking must be one of {RANKINGS}, not {ranking!r}")
        self.ranking = ranking

    def describe(self) -> dict[str, Any]:
        return {"key": self.key, "ranking": self.ranking}

    def search(self, problem: Problem, seed_result: LabelScores) -> Outcome:
        order = rank(problem, seed_result, self.ranking)
        current, current_result = problem.origin, seed_result
        current_progress = problem.goal.progress(seed_result)
        assert current_progress is not None
        default = "no candidate flipped the target"
        for i in order:
            if problem.at_edit_limit(current):
                default = "edit limit reached"
                break
            if problem.oracle.remaining <= 0:
                break
            cands = problem.extend(current, [i])
            if not cands:
                continue
            scored = [s for s in problem.score(cands) if s.progress is not None]
            ok = problem.accept([s for s in scored if s.reached])
            if ok is not None:
                return Outcome("success", ok.candidate, ok.result)
            improving = [s for s in scored if not s.reached and s.progress > current_progress]  # type: ignore[operator]
            if improving:
                best = max(improving, key=lambda s: s.progress)  # type: ignore[arg-type,return-value]
                current, current_result, current_progress = best.candidate, best.result, best.progress  # type: ignore[assignment]
        return Outcome("failed", current, current_result, failure_reason(problem, default))


class GreedyDelete(GreedyWIR):
    key = "greedy_delete"
    description = "greedy, words ranked by how much deleting them moves the target (1 + n queries)"
    ranking = "delete"


class GreedyUnk(GreedyWIR):
    key = "greedy_unk"
    description = "greedy, words ranked by how much masking them with [UNK] moves the target (1 + n queries)"
    ranking = "unk"


class GreedyPWWS(GreedyWIR):
    key = "greedy_pwws"
    description = "greedy, words ranked by PWWS weighted saliency: softmax([UNK] saliency) x best change"
    ranking = "pwws"
