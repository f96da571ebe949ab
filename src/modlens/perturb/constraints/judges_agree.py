"""TaeBench's label check (section 3, the AND rule): every judge detector, i.e. every detector
other than the target, must keep the seed's label: still call a TAE toxic, still call a BAE
benign. A judge with no score for the text neither agrees nor disagrees (`agrees` None): the
candidate is not accepted (missing is never guessed) but its verdict is a `NoScore`, counted apart
from the judges' rejections, unless another judge disagreed.

Post stage: only candidates that already fooled the target get here. Each judge scores all
candidates in one call; every text sent to a judge counts in `queries` (the attack's
`judge_queries`)."""
from __future__ import annotations

from typing import Any, Sequence

from modlens.detectors.base import Detector
from modlens.perturb.goals import GOALS, fooled
from modlens.perturb.parts import Candidate, Constraint, NoScore


def judge_texts(judges: Sequence[Detector], goal: str, texts: Sequence[str]) -> list[dict[str, Any]]:
    """Per text: {"judges": {name: {version, toxicity, threshold, agrees}}, "ok": all agree}
    (`ok` is True when there are no judges; `agrees` None: that judge gave no score). One `score`
    call per judge."""
    texts = list(texts)
    per_text: list[dict[str, Any]] = [{} for _ in texts]
    for j in judges:
        results = j.score(texts) if texts else []
        for verdicts, res in zip(per_text, results):
            tox = j.toxicity(res)
            fools = fooled(goal, tox, j.threshold)
            verdicts[j.name] = {"version": j.version, "toxicity": tox, "threshold": j.threshold,
                                "agrees": None if fools is None else not fools}
    return [{"judges": v, "ok": all(x["agrees"] is True for x in v.values())} for v in per_text]


class JudgesAgree(Constraint):
    key = "judges_agree"
    stage = "post"

    def __init__(self, judges: Sequence[Detector] = (), goal: str = "tae"):
        if goal.lower() not in GOALS:
            raise ValueError(f"goal must be one of {GOALS}, not {goal!r}")
        self.judges, self.goal = list(judges), goal.lower()
        self.queries = 0                                # texts sent to the judges, all calls
        self.last: list[dict[str, Any]] = []            # the verdicts of the last check_many

    def describe(self) -> dict[str, Any]:
        return {"key": self.key, "goal": self.goal, "rule": "and",
                "judges": [{"name": j.name, "version": j.version, "threshold": j.threshold} for j in self.judges]}

    def for_run(self) -> "JudgesAgree":
        return JudgesAgree(self.judges, self.goal)

    def verdicts(self, texts: Sequence[str]) -> list[dict[str, Any]]:
        out = judge_texts(self.judges, self.goal, texts)
        self.queries += len(list(texts)) * len(self.judges)
        self.last = out
        return out

    def check_many(self, source: str, candidates: Sequence[Candidate]) -> list[str | None]:
        reasons: list[str | None] = []
        label = "toxic" if self.goal == "tae" else "benign"
        for v in self.verdicts([c.text for c in candidates]):
            against = [name for name, x in v["judges"].items() if x["agrees"] is False]
            unscored = [name for name, x in v["judges"].items() if x["agrees"] is None]
            if v["ok"]:
                reasons.append(None)
            elif against:  # one judge's "no" fails the AND rule whatever the others lack
                reasons.append(f"no longer {label} for {', '.join(against)}")
            else:
                reasons.append(NoScore(f"no score from {', '.join(unscored)}"))
        return reasons
