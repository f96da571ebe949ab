"""Batch audits: run the engine (the daemon's detectors, batchers, normalizer and variant
generator) over a dataset file and write everything into the same study log as live data.

One dataset file = one page on platform `dataset:<name>`; every item = one comment, with its
labels and any human-made variants the dataset records. Each run is one `audit_runs` row;
an item enters `run_items` only in the same transaction that stores its last score, so an
interrupted audit resumes where it stopped (same dataset, path and parameters) without
duplicate rows, and a later run re-scores only what is missing or failed.

With an `AttackSpec` every seed comment is also attacked (TaeBench-style TAE/BAE, see
docs/PERTURB.md) against each target detector; every outcome (success, failed, skipped) is
one `variants` row, and each adversarial text is scored by every detector (transfer).
"""
from __future__ import annotations

import asyncio
import json
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

from modlens.config import DetectorConfig, NormalizerConfig, PerturbationConfig, StudyConfig
from modlens.datasets import registry as datasets
from modlens.datasets.base import Dataset, DatasetItem
from modlens.detectors import registry
from modlens.detectors.base import Detector, DetectorUnavailable
from modlens.engine import Engine
from modlens.perturb.attack import GreedyAttack
from modlens.perturb.base import Variant
from modlens.studylog.store import StudyLog


class AuditError(ValueError):
    """An audit that cannot start (bad dataset, no detector); nothing was written."""


@dataclass
class AuditResult:
    run_id: int
    dataset: str
    path: str
    n_items: int
    n_skipped: int            # already complete from an earlier (interrupted) attempt
    n_scored: int             # (text, detector) scores computed in this call
    n_missing: int            # scores a detector had no answer for (e.g. cached table misses)
    detectors: dict[str, str] # key -> name@version
    seconds: float
    resumed: bool
    unavailable: dict[str, str] = field(default_factory=dict)
    attacks: dict[str, dict[str, int]] = field(default_factory=dict)  # target key -> {status: count, "reused": n}

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


# --- detector specs ---------------------------------------------------------------------------

def parse_detector_spec(spec: str, study: StudyConfig | None = None) -> DetectorConfig:
    """A `--detectors` entry -> DetectorConfig.

    - a key of the study file's `[[detectors]]` (with its options), else a registry name;
    - `cached:PATH` with the columns `text`/`score`, or
      `cached:PATH:TEXT=SCORE[,TEXT=SCORE...][:NAME]` (e.g. the Perspective scores in NoisyHate:
      `cached:dev.csv:clean=perspective_clean,perturbed=perspective_perturbed:perspective`).
    """
    if study is not None:
        for cfg in study.detectors:
            if cfg.key == spec:
                return cfg
    if spec.startswith("cached:"):
        parts = spec.split(":")
        path = parts[1] if len(parts) > 1 else ""
        mappings = [["text", "score"]]
        if len(parts) > 2 and parts[2]:
            try:
                mappings = [list(pair.split("=", 1)) for pair in parts[2].split(",")]
            except ValueError:
                mappings = []
            if any(len(m) != 2 or not all(m) for m in mappings):
                raise AuditError(f"detector {spec!r}: columns must read TEXT=SCORE[,TEXT=SCORE]")
        name = parts[3] if len(parts) > 3 and parts[3] else "cached"
        if len(parts) > 4:
            raise AuditError(f"detector {spec!r}: expected cached:PATH[:TEXT=SCORE,...][:NAME]")
        return DetectorConfig(name="cached", id=name, options={"path": path, "mappings": mappings, "name": name})
    if spec not in registry.PLUGINS:
        raise AuditError(f"unknown detector {spec!r}: not a registry name ({', '.join(registry.PLUGINS)}), "
                         "not a key of the study file, not cached:PATH")
    return DetectorConfig(name=spec)


def load_detectors(configs: Sequence[DetectorConfig]) -> tuple[dict[str, Detector], dict[str, str]]:
    loaded, unavailable = {}, {}
    for cfg in configs:
        try:
            loaded[cfg.key] = registry.create(cfg.name, **cfg.options)
        except (DetectorUnavailable, KeyError) as err:
            unavailable[cfg.key] = f"{err} — fix: {getattr(err, 'fix', '')}".rstrip(" —fix:")
    return loaded, unavailable


def audit_study(study: StudyConfig, normalize: bool, perturb: Sequence[str] | None) -> StudyConfig:
    """The study as the engine should see it for this audit: normalizer and generator only on request."""
    norm = study.normalizer.model_copy(update={"enabled": normalize})
    pert = study.perturbation.model_copy(update={"enabled": bool(perturb), **({"strategies": list(perturb)} if perturb else {})})
    return study.model_copy(update={"normalizer": norm, "perturbation": pert})


# --- attacks ----------------------------------------------------------------------------------

@dataclass
class AttackSpec:
    """`modlens audit --attack`: the attack, the detectors it targets and the AND-ensemble judges."""
    goal: str                            # "tae" (toxic seeds made benign) | "bae" (benign seeds made toxic)
    targets: list[str] | None = None     # detector keys; None: every local detector that scores new text
    ensemble: list[str] | None = None    # judge keys; None: every other detector that scores new text; []: none
    max_queries: int = 200
    max_edit_ratio: float = 0.25
    strategies: list[str] | None = None  # None: perturb.attack.DEFAULT_ATTACK_STRATEGIES
    workers: int = 4                     # attacks in flight at once (their queries share the batchers)


def _answers_any_text(det: Detector) -> bool:
    """A cached score table knows only its own texts: it can neither be attacked nor judge."""
    from modlens.detectors.cached import CachedDetector
    return not isinstance(det, CachedDetector)


def plan_attacks(spec: AttackSpec, detectors: dict[str, Detector]) -> dict[str, list[str]]:
    """target key -> judge keys, checked against the loaded detectors (AuditError otherwise)."""
    for what, keys in (("--attack-targets", spec.targets), ("--ensemble", spec.ensemble)):
        unknown = [k for k in keys or () if k not in detectors]
        if unknown:
            raise AuditError(f"{what}: {', '.join(unknown)} not loaded (loaded: {', '.join(detectors)})")
    targets = spec.targets or [k for k, d in detectors.items() if not d.remote and _answers_any_text(d)]
    if not targets:
        raise AuditError("--attack: no loaded local detector can be attacked (cached tables only score their own texts)")
    judges = spec.ensemble if spec.ensemble is not None else [k for k, d in detectors.items() if _answers_any_text(d)]
    return {t: [j for j in judges if j != t] for t in dict.fromkeys(targets)}


def _build_attack(spec: AttackSpec, key: str, target: Detector, judges: Sequence[Detector], seed: int) -> GreedyAttack:
    try:
        return GreedyAttack(target, goal=spec.goal, strategies=spec.strategies, max_queries=spec.max_queries,
                            max_edit_fraction=spec.max_edit_ratio, judges=judges, seed=seed, target_key=key)
    except (KeyError, ValueError) as err:
        raise AuditError(f"--attack: {err.args[0] if err.args else err}") from None


def _attack_config(attack: GreedyAttack) -> dict[str, Any]:
    """What makes an attack result reproducible, beyond GreedyAttack's own params: the target's
    study key and the versions of the target and judges (a new model version is a new attack)."""
    return {"goal": attack.goal, "strategies": list(attack.strategies), "max_queries": attack.max_queries,
            "max_edit_fraction": attack.max_edit_fraction, "candidates_per_strategy": attack.candidates_per_strategy,
            "judges": [j.name for j in attack.judges], "target": attack.target_key,
            "target_version": attack.target.version, "judge_versions": {j.name: j.version for j in attack.judges}}


def gold_toxic(labels: dict[str, Any]) -> bool | None:
    value = str(labels.get("toxic", "")).strip().lower()
    return True if value in ("1", "true", "yes", "toxic") else False if value in ("0", "false", "no") else None


class _ViaEngine(Detector):
    """The attack's view of a detector: `score` (called from an attack worker thread) goes
    through the engine's batcher, so concurrent attacks share model calls and each model keeps
    its single worker thread."""

    def __init__(self, engine: Engine, key: str, loop: asyncio.AbstractEventLoop):
        d = engine.runners[key].detector
        self.inner, self.engine, self.key, self.loop = d, engine, key, loop
        self.name, self.version, self.labels, self.toxicity_label, self.threshold = \
            d.name, d.version, d.labels, d.toxicity_label, d.threshold

    def score(self, texts):
        results = asyncio.run_coroutine_threadsafe(self.engine.score(texts, only=[self.key]), self.loop).result()
        return [r[self.key].labels for r in results]

    def toxicity(self, scores):
        return self.inner.toxicity(scores)


# --- the run ----------------------------------------------------------------------------------

class _Auditor:
    def __init__(self, log: StudyLog, engine: Engine, dataset: Dataset, run_id: int, det_ids: dict[str, int],
                 attack: AttackSpec | None = None, attack_plan: dict[str, list[str]] | None = None, seed: int = 0):
        self.log, self.engine, self.dataset, self.run_id, self.det_ids = log, engine, dataset, run_id, det_ids
        self.platform = f"dataset:{dataset.name}"
        self.source = f"dataset:{dataset.name}"
        self.n_scored = self.n_missing = 0
        self.attack, self.attack_plan, self.seed = attack, attack_plan or {}, seed
        self.attacks: dict[str, GreedyAttack] = {}  # built on the event loop (their detectors call back into it)
        self.attack_counts: dict[str, dict[str, int]] = {
            k: {"success": 0, "failed": 0, "skipped": 0, "reused": 0} for k in self.attack_plan}
        self._pool = None

    def _register(self, items: Sequence[DatasetItem], page_id: int) -> list[tuple[DatasetItem, int]]:
        out = []
        with self.log.transaction():
            for it in items:
                cid = self.log.add_comment(self.platform, it.key, page_id, it.text)
                for name, value in it.labels.items():
                    self.log.add_label(cid, name, value, self.source)
                for v in it.variants:
                    self.log.add_variant(cid, v, self.run_id)
                out.append((it, cid))
        return out

    def _needs_score(self, text: str, key: str) -> bool:
        row = self.log.get_score(text, self.det_ids[key])
        return row is None or row["error"] is not None

    async def process(self, items: Sequence[DatasetItem], page_id: int) -> None:
        engine = self.engine
        registered = self._register(items, page_id)
        generated = await asyncio.gather(*(engine.variants(it.text) for it, _ in registered)) \
            if engine.generator is not None else [[] for _ in registered]
        texts: list[str] = []
        for (it, _), gen in zip(registered, generated):
            texts += [it.text, *(v.text for v in it.variants), *(v.text for v in gen)]
        texts = list(dict.fromkeys(texts))
        normalizations = []
        if engine.normalizer is not None:  # in a worker thread: the batchers keep the event loop
            normalized = await asyncio.get_running_loop().run_in_executor(None, lambda: [engine.normalize(t) for t in texts])
            normalizations = list(zip(texts, normalized))
            texts = list(dict.fromkeys([*texts, *(n.text for n in normalized)]))
        jobs = await self._score_missing(texts)
        with self.log.transaction():
            self._store_scores(jobs)
            for t, n in normalizations:
                self.log.add_normalization(t, n.normalizer, n.version, n.text, [e.to_dict() for e in n.edits])
            for (it, cid), gen in zip(registered, generated):
                for v in gen:
                    self.log.add_variant(cid, v, self.run_id)
                if not self.attack:
                    self.log.add_run_item(self.run_id, cid)
        if self.attack:  # an item is done only once its attacks are logged
            await self._attack_items(registered)
            with self.log.transaction():
                for _, cid in registered:
                    self.log.add_run_item(self.run_id, cid)

    async def _score_missing(self, texts: Sequence[str]) -> list[tuple[str, str, Any]]:
        """(text, key, DetectorResult) for every detector that has no score (or an error) for a text."""
        todo: dict[str, list[str]] = {}  # detector key -> texts it has not scored yet
        for t in texts:
            for k in self.engine.runners:
                if self._needs_score(t, k):
                    todo.setdefault(k, []).append(t)
        # one engine call per detector: each detector's batcher gets all its texts at once
        scored = await asyncio.gather(*(self.engine.score(ts, only=[k]) for k, ts in todo.items()))
        return [(t, k, res[k]) for (k, ts), results in zip(todo.items(), scored) for t, res in zip(ts, results)]

    def _store_scores(self, jobs: list[tuple[str, str, Any]]) -> None:
        for t, k, r in jobs:
            self.log.add_score(t, self.det_ids[k], r.labels, r.toxicity, r.latency_ms, r.error)
            self.n_scored += 1
            self.n_missing += r.toxicity is None

    # --- attacks ---------------------------------------------------------------------------
    def _is_seed(self, item: DatasetItem, key: str) -> bool:
        """TAE: toxic seeds, BAE: benign ones, by the gold `toxic` label, else by the target's
        own verdict. A seed the target already gets wrong is still attacked: the attack logs it
        as `skipped`, which keeps it out of the success rate's denominator."""
        toxic = gold_toxic(item.labels)
        if toxic is None:
            row = self.log.get_score(item.text, self.det_ids[key])
            if row is None or row["toxicity"] is None:
                return True  # unknown: the attack records "target has no score for the seed"
            toxic = row["toxicity"] >= self.engine.runners[key].detector.threshold
        return toxic if self.attack.goal == "tae" else not toxic

    def _logged_attack(self, cid: int, attack: GreedyAttack) -> dict[str, Any] | None:
        """The result of this very attack (same configuration and model versions) on this
        comment, from an earlier or interrupted run: attacks are the expensive part, never redone."""
        config = _attack_config(attack)
        rows = self.log.query(
            "SELECT v.params_json, v.attack_json, t.text FROM variants v JOIN texts t ON t.text_id = v.text_id "
            "WHERE v.comment_id = ? AND v.strategy = ? AND v.target_detector = ? AND v.seed = ? "
            "AND v.attack_json IS NOT NULL", (cid, f"attack-{attack.goal}", attack.target_key, attack.seed))
        for r in rows:
            params = json.loads(r["params_json"])
            if all(params.get(k) == v for k, v in config.items()):
                return {"text": r["text"], "status": json.loads(r["attack_json"]).get("status")}
        return None

    async def _attack_items(self, registered: Sequence[tuple[DatasetItem, int]]) -> None:
        loop = asyncio.get_running_loop()
        if not self.attacks:
            via = {k: _ViaEngine(self.engine, k, loop) for k in self.engine.runners}
            self.attacks = {t: _build_attack(self.attack, t, via[t], [via[j] for j in judges], self.seed)
                            for t, judges in self.attack_plan.items()}
            self._pool = ThreadPoolExecutor(max(1, self.attack.workers), thread_name_prefix="attack")
        todo, reused_texts = [], []
        for it, cid in registered:
            for key, attack in self.attacks.items():
                if not self._is_seed(it, key):
                    continue
                found = self._logged_attack(cid, attack)
                if found is None:
                    todo.append((cid, key, it.text))
                    continue
                self.attack_counts[key]["reused"] += 1
                if found["status"] != "skipped":
                    reused_texts.append(found["text"])
        if reused_texts:  # scores an interrupted run may have missed (or that ended in an error)
            jobs = await self._score_missing(list(dict.fromkeys(reused_texts)))
            with self.log.transaction():
                self._store_scores(jobs)
        await asyncio.gather(*(self._attack_one(cid, key, text) for cid, key, text in todo))

    async def _attack_one(self, cid: int, key: str, text: str) -> None:
        attack = self.attacks[key]
        v: Variant = await asyncio.get_running_loop().run_in_executor(self._pool, attack.run, text)
        v.params = {**v.params, **_attack_config(attack)}
        status = v.attack["status"]
        # transfer: every adversarial text (and failed attempt) scored by every detector
        jobs = await self._score_missing([v.text]) if status != "skipped" else []
        with self.log.transaction():
            self._store_scores(jobs)
            self.log.add_variant(cid, v, self.run_id)
        self.attack_counts[key][status] += 1

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=False, cancel_futures=True)


def _resumable_run(log: StudyLog, dataset: str, path: str, params: dict[str, Any]) -> int | None:
    from modlens.studylog.store import canonical_json
    rows = log.query("SELECT run_id FROM audit_runs WHERE dataset = ? AND path = ? AND params_json = ? "
                     "AND status != 'finished' ORDER BY run_id DESC LIMIT 1", (dataset, path, canonical_json(params)))
    return rows[0]["run_id"] if rows else None


def run_audit(dataset: str, *, db: str | Path, fmt: str | None = None, study: StudyConfig | None = None,
              detectors: Sequence[str] | None = None, normalize: bool = False, perturb: Sequence[str] | None = None,
              limit: int | None = None, chunk_size: int = 256, reader_options: dict[str, Any] | None = None,
              progress: bool = True, on_chunk: Callable[[int], None] | None = None,
              detector_objects: dict[str, Detector] | None = None, attack: AttackSpec | None = None) -> AuditResult:
    """Audit one dataset into the study log at `db`. `detector_objects` bypasses the registry
    (tests and embedding code); otherwise `detectors` specs, else the study's detectors.
    `attack`: also attack every seed comment (see AttackSpec) and log each outcome."""
    t0 = time.perf_counter()
    study = study or StudyConfig()
    try:
        data = datasets.load(dataset, fmt, **(reader_options or {}))
    except (ValueError, OSError) as err:
        raise AuditError(str(err)) from None
    items = data.items[:limit] if limit else data.items
    unavailable: dict[str, str] = {}
    if detector_objects is None:
        configs = [parse_detector_spec(s, study) for s in detectors] if detectors else list(study.detectors)
        detector_objects, unavailable = load_detectors(configs)
    if not detector_objects:
        raise AuditError("no detector could be loaded: " + "; ".join(f"{k}: {v}" for k, v in unavailable.items()))
    params = {"format": fmt or data.name, "detectors": {k: f"{d.name}@{d.version}" for k, d in detector_objects.items()},
              "normalize": normalize, "perturb": list(perturb or []), "limit": limit}
    plan, seed = None, study.perturbation.seed
    if attack is not None:
        plan = plan_attacks(attack, detector_objects)
        for key, judges in plan.items():  # bad budgets or strategies fail here, before anything is written
            _build_attack(attack, key, detector_objects[key], [detector_objects[j] for j in judges], seed)
        params["attack"] = {"goal": attack.goal, "targets": plan, "max_queries": attack.max_queries,
                            "max_edit_ratio": attack.max_edit_ratio, "strategies": attack.strategies, "seed": seed}
    engine = Engine(audit_study(study, normalize, perturb), detectors=detector_objects)
    if normalize and engine.normalizer is None:
        raise AuditError(f"--normalize: the normalizer is unavailable ({engine.component_errors.get('normalizer')})")
    if perturb and engine.generator is None:
        raise AuditError(f"--perturb: the variant generator is unavailable ({engine.component_errors.get('perturbation')})")
    log = StudyLog(db)
    try:
        log.ensure_study(study.study_id, study.title, study.model_dump())
        page_id = log.ensure_page(f"dataset:{data.name}", data.path.name, data.path.resolve().as_uri(), data.name)
        det_ids = {k: log.ensure_detector(d.name, d.version, d.toxicity_label, d.threshold, d.config())
                   for k, d in detector_objects.items()}
        path = str(data.path.resolve())
        run_id = _resumable_run(log, data.name, path, params)
        resumed = run_id is not None
        if run_id is None:
            run_id = log.start_run(data.name, path, params)
        else:
            log.set_run_status(run_id, "running")
        done_keys = {r["comment_key"] for r in log.query(
            "SELECT c.comment_key FROM run_items ri JOIN comments c USING (comment_id) WHERE ri.run_id = ?", (run_id,))}
        todo = [it for it in items if it.key not in done_keys]
        auditor = _Auditor(log, engine, data, run_id, det_ids, attack, plan, seed)
        status = "interrupted"
        try:
            asyncio.run(_drive(auditor, todo, page_id, chunk_size, len(items) - len(todo), len(items), progress, on_chunk))
            status = "finished"
        finally:
            n_done = log.query("SELECT count(*) AS n FROM run_items WHERE run_id = ?", (run_id,))[0]["n"]
            log.set_run_progress(run_id, n_done)
            log.finish_run(run_id, status)
    finally:
        log.close()
    return AuditResult(run_id, data.name, path, len(items), len(items) - len(todo), auditor.n_scored, auditor.n_missing,
                       {k: f"{d.name}@{d.version}" for k, d in detector_objects.items()},
                       time.perf_counter() - t0, resumed, unavailable, auditor.attack_counts)


async def _drive(auditor: _Auditor, todo: list[DatasetItem], page_id: int, chunk_size: int, n_done: int,
                 n_total: int, progress: bool, on_chunk: Callable[[int], None] | None) -> None:
    from tqdm import tqdm

    bar = tqdm(total=n_total, initial=n_done, desc=f"audit {auditor.dataset.name}", unit="item", disable=not progress)
    try:
        for start in range(0, len(todo), chunk_size):
            chunk = todo[start:start + chunk_size]
            await auditor.process(chunk, page_id)
            n_done += len(chunk)
            auditor.log.set_run_progress(auditor.run_id, n_done)
            bar.update(len(chunk))
            if on_chunk:
                on_chunk(n_done)
    finally:
        bar.close()
        auditor.close()
        await auditor.engine.close()
