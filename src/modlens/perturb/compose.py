"""A composed attack (TextAttack's decomposition, TaeBench section 2): goal + transformations +
constraints + search method, with a query budget. Recipes (`perturb/recipes/`) are named
configurations of it, the character attack (`char_greedy`) among them: no other engine.

The result is a `Variant` whose `attack` dict has the keys docs/PERTURB.md documents:
  success - the goal is reached (TAE: below the target's threshold; BAE: at or above it; with
            goal labels, every toxic label below / any at or above) and every constraint holds;
  failed  - the search ended without such a text (`reason` says why); the text is the best
            partial candidate it kept (or the seed);
  skipped - the seed is already on the goal side, or the target has no score for it.
`queries` counts every text sent to the target, the seed included (never one text twice);
`calls` the detector calls that carried them; texts sent to judges are `judge_queries`.
"""
from __future__ import annotations

from typing import Any, Sequence

from modlens.detectors.base import Detector
from modlens.perturb import constraints as constraint_registry
from modlens.perturb import search as search_registry
from modlens.perturb import transformations as transformation_registry
from modlens.perturb.attack_record import NO_SEED_SCORE
from modlens.perturb.base import attack_each
from modlens.rows import Variant
from modlens.perturb.generate import word_slots
from modlens.perturb.goals import GOALS, Goal
from modlens.perturb.parts import Candidate, Constraint, Transformation, source_positions
from modlens.perturb.search.base import Outcome, Problem, SearchMethod, TargetOracle

def _spec(part: Any) -> tuple[str, dict[str, Any]]:
    if isinstance(part, str):
        return part, {}
    key, options = part
    return key, dict(options or {})


class Attack:
    def __init__(self, target: Detector, *, transformations: Sequence[Any], constraints: Sequence[Any] = (),
                 search: Any = "greedy_delete", goal: str = "tae", max_queries: int = 200, k: int = 2,
                 judges: Sequence[Detector] = (), seed: int = 0, target_key: str | None = None,
                 recipe: str | None = None, goal_labels: Sequence[str] | str | None = None, batch: bool = True):
        """`transformations`, `constraints`: instances, registry keys, or (key, options) pairs;
        `search`: an instance, a key or (key, options). `judges`: detectors that must all keep
        the seed's label (TaeBench's AND rule; added as a `judges_agree` post constraint).
        `k`: changes each transformation proposes per word. `goal_labels`: a multi-label goal
        ("all" = every harm label of the target). Transformations that cannot run here are
        left out (listed in `unavailable`) as long as one can; a constraint that cannot run is
        an error, because dropping it would silently make a different attack."""
        if goal.lower() not in GOALS:
            raise ValueError(f"goal must be one of {GOALS}, not {goal!r}")
        if max_queries < 1:
            raise ValueError("max_queries must be >= 1")
        if k < 1:
            raise ValueError("k (changes per transformation per word) must be >= 1")
        self.target, self.goal, self.judges = target, goal.lower(), list(judges)
        self.goal_spec = Goal(self.goal, target, goal_labels)
        self.max_queries, self.k, self.seed, self.batch = max_queries, k, seed, batch
        self.target_key = target_key or target.name
        self.recipe = recipe
        self.strategy = f"recipe:{recipe}" if recipe else f"attack-{self.goal}"
        self.unavailable: dict[str, str] = {}
        self.transformations: list[Transformation] = []
        for part in transformations:
            t = part if isinstance(part, Transformation) else _make(transformation_registry.create, part)
            reason = t.availability()
            if reason:
                self.unavailable[t.key] = reason
            else:
                self.transformations.append(t)
        if not self.transformations:
            raise ValueError(f"no usable transformation: {self.unavailable}")
        self.constraints: list[Constraint] = []
        for part in constraints:
            c = part if isinstance(part, Constraint) else _make(constraint_registry.create, part)
            reason = c.availability()
            if reason:
                raise ValueError(f"constraint {c.key} cannot run here: {reason}")
            self.constraints.append(c)
        if self.judges and not any(c.key == "judges_agree" for c in self.constraints):
            self.constraints.append(constraint_registry.create("judges_agree", judges=self.judges, goal=self.goal))
        self.search: SearchMethod = search if isinstance(search, SearchMethod) else _make(search_registry.create, search)
        from modlens.perturb.constraints import _shared
        _shared.share_from([target, *self.judges])  # one MiniLM in memory, not two

    @property
    def pre(self) -> list[Constraint]:
        return [c for c in self.constraints if c.stage == "pre"]

    @property
    def post(self) -> list[Constraint]:
        return [c for c in self.constraints if c.stage != "pre"]

    @staticmethod
    def _judge_queries(problem: Problem) -> int:
        """Texts this run sent to the judges (its own `judges_agree`, `Constraint.for_run`)."""
        return sum(int(getattr(c, "queries", 0)) for c in problem.post if c.key == "judges_agree")

    def _max_words(self, text: str) -> int | None:
        limits = [int(c.limit(text)) for c in self.constraints if hasattr(c, "limit")]  # max_words_changed
        return min(limits) if limits else None

    def config(self) -> dict[str, Any]:
        """Everything that defines the attack (recorded as the Variant's params)."""
        cfg: dict[str, Any] = {
            "recipe": self.recipe, **self.goal_spec.describe(),
            "transformations": [t.key for t in self.transformations],
            "constraints": [c.describe() for c in self.constraints],
            "search": self.search.describe(), "max_queries": self.max_queries, "k": self.k,
            "judges": [j.name for j in self.judges],
        }
        fractions = [float(c.describe()["fraction"]) for c in self.constraints if c.key == "max_words_changed"]
        if fractions:
            cfg["max_edit_fraction"] = min(fractions)  # the report groups attempts by it
        if self.unavailable:
            cfg["unavailable"] = dict(self.unavailable)
        # another table (human_lookup's) proposes other changes: another attack, never reused for this one
        data = {t.key: d for t in self.transformations if (d := t.data())}
        if data:
            cfg["transformation_data"] = data
        return cfg

    def run(self, text: str) -> Variant:
        oracle = TargetOracle(self.target, self.max_queries, self.batch)
        slots = word_slots(text)
        post = [c.for_run() for c in self.post]  # attacks run at once on this Attack: each counts its own
        problem = Problem(text, slots, self.goal_spec, oracle, self.transformations, self.pre, post,
                          seed=self.seed, k=self.k, max_words=self._max_words(text))
        seed_result = oracle.results([text])[0]
        if seed_result is None or self.goal_spec.score(seed_result) is None:
            return self._result(problem, "skipped", NO_SEED_SCORE, problem.origin, None, None)
        if self.goal_spec.reached(seed_result):
            side = "below" if self.goal == "tae" else "at or above"
            return self._result(problem, "skipped", f"seed already {side} the target threshold",
                                problem.origin, seed_result, seed_result)
        out = self.search.search(problem, seed_result)
        if out.status == "failed":  # a budget spent with a success already scored still succeeds
            found = problem.best_unchecked()
            if found is not None:
                out = Outcome("success", found.candidate, found.result)
        return self._result(problem, out.status, out.reason, out.best, seed_result, out.best_result)

    def _ensemble(self, problem: Problem, final: Candidate, status: str) -> dict[str, Any] | None:
        """The judges' verdicts on the accepted candidate (or on the last one they rejected or
        could not score)."""
        judge = next((c for c in problem.post if c.key == "judges_agree"), None)
        if judge is None:
            return {"judges": {}, "ok": True}
        last = getattr(judge, "last", [])
        if status == "success":
            texts = problem.post_texts.get("judges_agree", [])
            if final.text in texts and len(last) == len(texts):
                return dict(last[texts.index(final.text)])
            return None
        judged = problem.rejected.get("judges_agree") or problem.unscored.get("judges_agree")
        return next((dict(v) for v in last if not v["ok"]), None) if judged else None

    def _result(self, problem: Problem, status: str, reason: str | None, final: Candidate,
                seed_result: Any, final_result: Any) -> Variant:
        g, t = self.goal_spec, self.target
        n_words = len(problem.slots)
        changed = problem.words_changed(final)
        constraints: dict[str, Any] = {}
        for c in self.constraints:
            if c.stage == "pre":   # every kept candidate passed them: so does the returned text
                ok: bool | None = True
            else:                  # checked only on candidates that reached the goal
                ok = True if status == "success" else None
            constraints[c.key] = {**c.describe(), "stage": c.stage, "ok": ok,
                                  "rejected": int(problem.rejected.get(c.key, 0)),
                                  "last_rejection": problem.last_post_rejection.get(c.key),
                                  "unscored": int(problem.unscored.get(c.key, 0)),
                                  "last_unscored": problem.last_unscored.get(c.key)}
        max_words = problem.max_words
        constraints["max_edit_fraction"] = {
            "limit": self.config().get("max_edit_fraction"), "max_words": max_words, "words_edited": changed,
            "ok": max_words is None or changed <= max_words}
        constraints["ensemble"] = self._ensemble(problem, final, status) if status != "skipped" else None
        constraints["unique"] = {"ok": True}
        attack: dict[str, Any] = {
            "goal": self.goal, "recipe": self.recipe, "status": status, "reason": reason,
            "search": self.search.key, "queries": problem.oracle.queries, "calls": problem.oracle.calls,
            "max_queries": self.max_queries, "judge_queries": self._judge_queries(problem),
            "target": self.target_key, "target_name": t.name, "target_version": t.version, "threshold": t.threshold,
            "source_score": g.score(seed_result), "final_score": g.score(final_result),
            "ranking": problem.info.get("ranking"), "n_words": n_words, "words_edited": changed,
            "words_changed_share": round(changed / n_words, 6) if n_words else 0.0,
            "rejected_by_ensemble": int(problem.rejected.get("judges_agree", 0)),
            # flipping candidates a judge had no score for: not accepted, and not a rejection
            "unscored_by_ensemble": int(problem.unscored.get("judges_agree", 0)),
            # candidates the target had no score for (its call failed): never judged, so a failure is unknown
            "unscored_by_target": len(problem.unscored_by_target),
            "constraints": constraints,
        }
        if g.multi_label:
            attack["goal_labels"] = list(g.labels or ())
        if "beam_steps" in problem.info:
            attack["beam_steps"] = problem.info["beam_steps"]
        params = {**self.config(), "edits": [c.to_dict() for c in final.changes]}
        if "importance" in problem.info:
            params["importance"] = problem.info["importance"]
        return Variant(text=final.text, strategy=self.strategy, params=params, seed=self.seed,
                       positions=source_positions(problem.source, final.changes), source_text=problem.source,
                       target_detector=self.target_key, attack=attack)

    def run_many(self, texts: Sequence[str]) -> list[Variant]:
        return attack_each(self.run, texts)


def _make(create: Any, part: Any) -> Any:
    key, options = _spec(part)
    return create(key, **options)
