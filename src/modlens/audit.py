"""Batch audits: run the engine (the daemon's detectors, batchers, normalizer and variant
generator) over a dataset file and write everything into the same study log as live data.

One dataset file = one page on platform `dataset:<name>`; every item = one comment, with its
labels and any human-made variants the dataset records. Each run is one `audit_runs` row;
an item enters `run_items` only in the same transaction that stores its last score, so an
interrupted audit resumes where it stopped (same dataset, path and parameters) without
duplicate rows, and a later run re-scores only what is missing or failed.
"""
from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

from modlens.config import DetectorConfig, NormalizerConfig, PerturbationConfig, StudyConfig
from modlens.datasets import registry as datasets
from modlens.datasets.base import Dataset, DatasetItem
from modlens.detectors import registry
from modlens.detectors.base import Detector, DetectorUnavailable
from modlens.engine import Engine
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


# --- the run ----------------------------------------------------------------------------------

class _Auditor:
    def __init__(self, log: StudyLog, engine: Engine, dataset: Dataset, run_id: int, det_ids: dict[str, int]):
        self.log, self.engine, self.dataset, self.run_id, self.det_ids = log, engine, dataset, run_id, det_ids
        self.platform = f"dataset:{dataset.name}"
        self.source = f"dataset:{dataset.name}"
        self.n_scored = self.n_missing = 0

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
        normalizations = []
        for (it, _), gen in zip(registered, generated):
            item_texts = [it.text, *(v.text for v in it.variants), *(v.text for v in gen)]
            texts += item_texts
            if engine.normalizer is not None:
                for t in dict.fromkeys(item_texts):
                    n = engine.normalize(t)
                    normalizations.append((t, n))
                    texts.append(n.text)
        texts = list(dict.fromkeys(texts))
        jobs = [(t, k) for t in texts for k in engine.runners if self._needs_score(t, k)]
        results = await asyncio.gather(*(engine.score_text(t, only=[k]) for t, k in jobs))
        with self.log.transaction():
            for (t, k), res in zip(jobs, results):
                r = res[k]
                self.log.add_score(t, self.det_ids[k], r.labels, r.toxicity, r.latency_ms, r.error)
                self.n_scored += 1
                self.n_missing += r.toxicity is None
            for t, n in normalizations:
                self.log.add_normalization(t, n.normalizer, n.version, n.text, [e.to_dict() for e in n.edits])
            for (it, cid), gen in zip(registered, generated):
                for v in gen:
                    self.log.add_variant(cid, v, self.run_id)
                self.log.add_run_item(self.run_id, cid)


def _resumable_run(log: StudyLog, dataset: str, path: str, params: dict[str, Any]) -> int | None:
    from modlens.studylog.store import canonical_json
    rows = log.query("SELECT run_id FROM audit_runs WHERE dataset = ? AND path = ? AND params_json = ? "
                     "AND status != 'finished' ORDER BY run_id DESC LIMIT 1", (dataset, path, canonical_json(params)))
    return rows[0]["run_id"] if rows else None


def run_audit(dataset: str, *, db: str | Path, fmt: str | None = None, study: StudyConfig | None = None,
              detectors: Sequence[str] | None = None, normalize: bool = False, perturb: Sequence[str] | None = None,
              limit: int | None = None, chunk_size: int = 256, reader_options: dict[str, Any] | None = None,
              progress: bool = True, on_chunk: Callable[[int], None] | None = None,
              detector_objects: dict[str, Detector] | None = None) -> AuditResult:
    """Audit one dataset into the study log at `db`. `detector_objects` bypasses the registry
    (tests and embedding code); otherwise `detectors` specs, else the study's detectors."""
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
        auditor = _Auditor(log, engine, data, run_id, det_ids)
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
                       time.perf_counter() - t0, resumed, unavailable)


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
        await auditor.engine.close()
