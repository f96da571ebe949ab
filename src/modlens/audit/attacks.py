"""Attack planning for audits: which detectors an `AttackSpec` targets and which judge them,
the attack itself, and what makes a logged attack reusable."""
from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any, Callable, Sequence

from modlens.detectors.base import Detector, LabelScores
from modlens.engine import Engine, answers_or_errors
from modlens.perturb import recipes
from modlens.perturb.compose import Attack
from modlens.perturb.recipes.char_greedy import char_transformations
from modlens.services.errors import SetupError


@dataclass
class AttackSpec:
    """The attack, the detectors it targets and the AND-ensemble judges."""
    goal: str                            # "tae" (toxic seeds made benign) | "bae" (benign seeds made toxic)
    targets: list[str] | None = None     # detector keys; None: every local detector that scores new text
    ensemble: list[str] | None = None    # judge keys; None: every other detector that scores new text; []: none
    # None: the attack's own limit, the same whichever command asked: the character attack's 200
    # queries and 0.25 of the words, a recipe's own budget and edit constraint (`attack_limits`)
    max_queries: int | None = None
    max_edit_ratio: float | None = None
    strategies: list[str] | None = None  # the character attack's strategies; None: char_greedy.DEFAULT_STRATEGIES
    strategy_options: dict[str, dict[str, Any]] | None = None  # per strategy (human_lookup's table path)
    workers: int = 4                     # attacks in flight at once (their queries share the batchers)
    recipe: str | None = None            # a perturb.recipes key; None: the character attack (CHARACTER_ATTACK)


CHARACTER_ATTACK = "char_greedy"  # the recipe `--attack` runs without `--recipe`


def answers_any_text(det: Detector) -> bool:
    """A cached score table knows only its own texts: it can neither be attacked nor judge."""
    from modlens.detectors.cached import CachedDetector
    return not isinstance(det, CachedDetector)


def plan_attacks(spec: AttackSpec, detectors: dict[str, Detector]) -> dict[str, list[str]]:
    """target key -> judge keys, checked against the loaded detectors (SetupError otherwise)."""
    for what, keys in (("attack targets", spec.targets), ("ensemble judges", spec.ensemble)):
        unknown = [k for k in keys or () if k not in detectors]
        if unknown:
            raise SetupError(f"{what}: {', '.join(unknown)} not loaded (loaded: {', '.join(detectors)})")
    targets = spec.targets or [k for k, d in detectors.items() if not d.remote and answers_any_text(d)]
    if not targets:
        raise SetupError("attack: no loaded local detector can be attacked (cached tables only score their own texts)")
    # by default (every command that attacks) the detectors that answer any text judge: a cached
    # table only scores the results
    judges = spec.ensemble if spec.ensemble is not None else [k for k, d in detectors.items() if answers_any_text(d)]
    return {t: [j for j in judges if j != t] for t in dict.fromkeys(targets)}


def build_attack(spec: AttackSpec, key: str, target: Detector, judges: Sequence[Detector],
                 seed: int) -> Attack:
    """The spec's recipe (the character attack without one, over `spec.strategies` if given) as
    an attack on `target`; bad options are a SetupError."""
    try:
        if spec.recipe and spec.strategies:
            raise ValueError("--strategies and --recipe exclude each other (a recipe names its transformations)")
        recipe = recipes.create(spec.recipe) if spec.recipe else recipes.create(
            CHARACTER_ATTACK, transformations=char_transformations(spec.strategies, spec.strategy_options))
        return recipe.build(target, goal=spec.goal, judges=judges, max_queries=spec.max_queries,
                            max_edit_ratio=spec.max_edit_ratio, seed=seed, target_key=key)
    except (KeyError, ValueError) as err:
        raise SetupError(f"attack: {err.args[0] if err.args else err}") from None


def attack_limits(attack: Attack) -> tuple[int, float | None]:
    """(max queries, max share of words edited) the built attack runs with; None: no edit limit
    (a recipe without a max_words_changed constraint)."""
    return attack.max_queries, attack.config().get("max_edit_fraction")


def attack_config(attack: Attack) -> dict[str, Any]:
    """What makes an attack result reproducible, beyond the attack's own params: the target's
    study key and the versions of the target and judges (a new model version is a new attack)."""
    return {**attack.config(), "target": attack.target_key, "target_version": attack.target.version,
            "judge_versions": {j.name: j.version for j in attack.judges}}


# Fields an attack's config gained after modlens first logged attacks, each with a test of whether
# a logged row that lacks the field (written before it existed) ran with the current value: the row
# is this attack only when that test holds (else it is attacked again). A field added with no such
# test is not listed, so its older rows are redone: sentence_similarity's encoder_version
# (2026-12-06) names the weights by content, and an older row named only their folder.
SHIPPED_TABLE = {"lexicon": "perturbations.json", "lexicon_sha": "eb06062ed6bb"}  # the package's, unchanged since it shipped


def _names_shipped_tables(data: Any) -> bool:
    """transformation_data naming only the package's perturbation table: {transformation key:
    table}, nested for composites."""
    if not isinstance(data, dict) or not data:
        return False
    return data == SHIPPED_TABLE or all(_names_shipped_tables(v) for v in data.values())


def _ran_with_shipped_tables(value: Any, logged: dict[str, Any]) -> bool:
    """transformation_data (2026-12-06): before it, human_lookup read $MODLENS_PERTURBATIONS, a
    perturbations.json in the data folders, or the package's, and only its edits recorded which
    (table name and SHA-256). An older row is this attack when the current tables are the package's
    and its final text has a human_lookup edit, every one naming the package's table, or its seed
    was skipped (never perturbed). A failed attack, or a success through other transformations,
    records no table, so it is redone."""
    if not _names_shipped_tables(value):
        return False
    if (logged.get("attack") or {}).get("status") == "skipped":
        return True
    # a word strategy's edit keeps the strategy's own params under "edit" (perturb.parts)
    tables = {(d.get("lexicon"), d.get("lexicon_sha")) for e in logged["params"].get("edits") or ()
              if "lexicon_sha" in (d := (e.get("params") or {}).get("edit") or {})}
    return tables == {(SHIPPED_TABLE["lexicon"], SHIPPED_TABLE["lexicon_sha"])}


# field -> check(current value, logged row {"params", "attack"})
ERA_DEFAULTS: dict[str, Callable[[Any, dict[str, Any]], bool]] = {"transformation_data": _ran_with_shipped_tables}


def same_attack(logged: dict[str, Any], config: dict[str, Any]) -> bool:
    """Whether a logged attack row ({"params", "attack"}, `logged_attacks`) is this attack config
    (`attack_config`): every field of its params equal, or absent from an older row and shown by
    the row to have been at this value (ERA_DEFAULTS)."""
    params = logged["params"]
    return all(params[key] == value if key in params else key in ERA_DEFAULTS and ERA_DEFAULTS[key](value, logged)
               for key, value in config.items())



def gold_toxic(labels: dict[str, Any]) -> bool | None:
    value = str(labels.get("toxic", "")).strip().lower()
    return True if value in ("1", "true", "yes", "toxic") else False if value in ("0", "false", "no") else None


class ViaEngine(Detector):
    """The attack's view of a detector: `score` (called from an attack worker thread) goes
    through the engine's batcher, so concurrent attacks share model calls and each model keeps
    its single worker thread."""

    def __init__(self, engine: Engine, key: str, loop: asyncio.AbstractEventLoop):
        d = engine.runners[key].detector
        self.inner, self.engine, self.key, self.loop = d, engine, key, loop
        self.name, self.version, self.labels, self.toxicity_label, self.threshold = \
            d.name, d.version, d.labels, d.toxicity_label, d.threshold

    def score(self, texts: Sequence[str]) -> list[LabelScores | None]:
        results = asyncio.run_coroutine_threadsafe(self.engine.score(texts, only=[self.key]), self.loop).result()
        return [r[self.key].labels for r in results]

    def toxicity(self, scores: LabelScores | None) -> float | None:
        return self.inner.toxicity(scores)


class CallFailureAsNoScore(Detector):
    """The attack's view of a detector it calls directly (`attack --text`, `perturb --attack`): a
    call that raises, or an answer without the toxicity label, is no score for its texts, as the
    engine's batcher makes it for `ViaEngine` (`DetectorRunner.score_chunk` and `result`). The
    attack then records what the dataset path records, an unknown result (the target had no score
    for the seed or a candidate, a judge none for a flip), and the next text is attacked; the
    command's scoring of its lines says the error. `error`: the first error its calls met, and
    `failed_calls` how many met one, for what a command's lines do not carry (perturb's word importance)."""

    def __init__(self, inner: Detector):
        self.inner = inner
        self.error: str | None = None
        self.failed_calls = 0
        self.name, self.version, self.labels, self.toxicity_label, self.threshold = \
            inner.name, inner.version, inner.labels, inner.toxicity_label, inner.threshold
        self.max_batch = inner.max_batch
        if getattr(inner, "encoder", None) is not None:  # `share_from` shares its MiniLM encoder
            self.encoder = inner.encoder  # type: ignore[attr-defined]

    def score(self, texts: Sequence[str]) -> list[LabelScores | None]:
        got = answers_or_errors(self.inner, list(texts))  # the rule the commands' lines are scored by
        error = next((e for _, _, e in got if e is not None), None)
        if error is not None:
            self.failed_calls += 1
            self.error = self.error or error
        return [labels for labels, _, _ in got]

    def toxicity(self, scores: LabelScores | None) -> float | None:
        return self.inner.toxicity(scores)
