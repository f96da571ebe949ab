"""`run_audit`: one dataset file through the engine into the study log, resumable."""
from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

from modlens.audit.attacks import AttackSpec, build_attack, plan_attacks
from modlens.audit.auditor import Auditor, dataset_platform
from modlens.config import StudyConfig
from modlens.datasets import registry as datasets
from modlens.datasets.base import DatasetItem
from modlens.detectors.base import Detector
from modlens.engine import Engine
from modlens.services.detectors import load_detectors, parse_detector_spec
from modlens.services.errors import SetupError
from modlens.services.recording import register
from modlens.studylog import runs
from modlens.studylog.store import StudyLog


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


def audit_study(study: StudyConfig, normalize: bool, perturb: Sequence[str] | None) -> StudyConfig:
    """The study as the engine should see it for this audit: normalizer and generator only on request."""
    norm = study.normalizer.model_copy(update={"enabled": normalize})
    pert = study.perturbation.model_copy(update={"enabled": bool(perturb), **({"strategies": list(perturb)} if perturb else {})})
    return study.model_copy(update={"normalizer": norm, "perturbation": pert})


def run_audit(dataset: str, *, db: str | Path, fmt: str | None = None, study: StudyConfig | None = None,
              detectors: Sequence[str] | None = None, normalize: bool = False, perturb: Sequence[str] | None = None,
              limit: int | None = None, chunk_size: int = 256, reader_options: dict[str, Any] | None = None,
              progress: bool = True, on_chunk: Callable[[int], None] | None = None,
              detector_objects: dict[str, Detector] | None = None, attack: AttackSpec | None = None) -> AuditResult:
    """Audit one dataset into the study log at `db`. `detector_objects` bypasses the registry
    (tests and embedding code); otherwise `detectors` specs, else the study's detectors.
    `attack`: also attack every seed comment (see AttackSpec) and log each outcome.
    Raises SetupError (nothing written) when the audit cannot start."""
    t0 = time.perf_counter()
    study = study or StudyConfig()
    try:
        data = datasets.load(dataset, fmt, **(reader_options or {}))
    except (ValueError, OSError) as err:
        raise SetupError(str(err)) from None
    items = data.items[:limit] if limit else data.items
    unavailable: dict[str, str] = {}
    if detector_objects is None:
        configs = [parse_detector_spec(s, study) for s in detectors] if detectors else list(study.detectors)
        loaded = load_detectors(configs)
        detector_objects, unavailable = loaded.detectors, loaded.unavailable
    if not detector_objects:
        raise SetupError("no detector could be loaded: " + "; ".join(f"{k}: {v}" for k, v in unavailable.items()))
    params = {"format": fmt or data.name, "detectors": {k: f"{d.name}@{d.version}" for k, d in detector_objects.items()},
              "normalize": normalize, "perturb": list(perturb or []), "limit": limit}
    plan, seed = None, study.perturbation.seed
    if attack is not None:
        plan = plan_attacks(attack, detector_objects)
        for key, judges in plan.items():  # bad budgets or strategies fail here, before anything is written
            build_attack(attack, key, detector_objects[key], [detector_objects[j] for j in judges], seed)
        params["attack"] = {"goal": attack.goal, "targets": plan, "max_queries": attack.max_queries,
                            "max_edit_ratio": attack.max_edit_ratio, "strategies": attack.strategies, "seed": seed}
    engine = Engine(audit_study(study, normalize, perturb), detectors=detector_objects)
    if normalize and engine.normalizer is None:
        raise SetupError(f"normalize: the normalizer is unavailable ({engine.component_errors.get('normalizer')})")
    if perturb and engine.generator is None:
        raise SetupError(f"perturb: the variant generator is unavailable ({engine.component_errors.get('perturbation')})")
    log = StudyLog(db)
    try:
        with log.transaction():
            det_ids = register(log, study, detector_objects)
        page_id = log.ensure_page(dataset_platform(data), data.path.name, data.path.resolve().as_uri(), data.name)
        path = str(data.path.resolve())
        run_id = runs.resumable_run(log, data.name, path, params)
        resumed = run_id is not None
        if run_id is None:
            run_id = log.start_run(data.name, path, params)
        else:
            log.set_run_status(run_id, "running")
        done_keys = runs.completed_keys(log, run_id)
        todo = [it for it in items if it.key not in done_keys]
        auditor = Auditor(log, engine, data, run_id, det_ids, attack, plan, seed)
        status = "interrupted"
        try:
            asyncio.run(_drive(auditor, todo, page_id, chunk_size, len(items) - len(todo), len(items), progress, on_chunk))
            status = "finished"
        finally:
            log.set_run_progress(run_id, runs.n_completed(log, run_id))
            log.finish_run(run_id, status)
    finally:
        log.close()
    return AuditResult(run_id, data.name, path, len(items), len(items) - len(todo), auditor.n_scored, auditor.n_missing,
                       {k: f"{d.name}@{d.version}" for k, d in detector_objects.items()},
                       time.perf_counter() - t0, resumed, unavailable, auditor.attack_counts)


async def _drive(auditor: Auditor, todo: list[DatasetItem], page_id: int, chunk_size: int, n_done: int,
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
