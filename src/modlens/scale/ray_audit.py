"""The audit's chunks through Ray: normalization as CPU tasks, each detector as a pool of actors
(`num_gpus` when the cluster has GPUs and `gpus_per_detector` > 0), the variant generator as CPU
actors; the answers come back to the driver, whose study log is the single writer.

`RayCompute` is the chunk pipeline's `Compute` (`modlens.chunks`) on Ray: registering items, the
resume checks ((text hash, detector version) pairs already scored are never sent) and every write
are the pipeline's and its sink's own code, so both engines write the same rows."""
from __future__ import annotations

import asyncio
import itertools
import math
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Sequence

from modlens.chunks.chunk import Failed, ScoreRow
from modlens.chunks.steps import normalizer_identity
from modlens.config import DetectorConfig
from modlens.detectors.base import Detector
from modlens.engine import DetectorResult, Engine
from modlens.rows import Variant
from modlens.services.errors import SetupError


# an actor whose process died (a crash, OOM, a lost node) is restarted (-1: always); a batch that
# failed with it is tried RETRIES more times, so a batch that kills its actor costs RETRIES + 1 restarts
MAX_RESTARTS = -1
RETRIES = 2
RETRY_BACKOFF_S = 0.2


@dataclass
class RayOptions:
    address: str | None = None        # None: a local Ray on this machine; "auto", "ray://HOST:PORT"
    gpus_per_detector: float = 0.0    # > 0: detector actors ask for this many GPUs when the cluster has any
    actors_per_detector: int | None = None  # default: from the cluster's CPUs / GPUs
    num_cpus: int | None = None       # a local Ray's CPUs (default: all)
    depth: int = 2                    # chunks in flight at once (one being written while the next computes)


def require_ray() -> Any:
    try:
        import ray
    except ModuleNotFoundError:
        raise SetupError("--engine ray needs Ray Data (ray is not installed)", "pip install 'modlens[ray]'") from None
    return ray


def connect(options: RayOptions) -> bool:
    """Joins the Ray cluster at `address`, else starts a local one; True when this call started it.
    A cluster that cannot be joined or started is a SetupError (the audit has written nothing yet)."""
    ray = require_ray()
    if ray.is_initialized():
        return False
    kwargs: dict[str, Any] = {"include_dashboard": False, "log_to_driver": False, "configure_logging": False}
    try:
        if options.address:
            ray.init(address=options.address, **kwargs)
        else:
            ray.init(num_cpus=options.num_cpus, **kwargs)
    except (ConnectionError, ValueError, RuntimeError, TimeoutError) as err:  # what ray.init raises for these
        where = f"join the Ray cluster at {options.address}" if options.address else "start a local Ray"
        fix = ("ray:// needs Ray Client: pip install 'ray[client]==2.60.0'" if "ray[client]" in str(err) else
               "check --ray-address (auto: the cluster this machine belongs to; ray://HOST:PORT: its Ray Client "
               "server) and that the cluster runs Ray 2.60.0")
        raise SetupError(f"cannot {where}: {str(err).splitlines()[0] if str(err) else type(err).__name__}", fix) from None
    return True


@dataclass
class Plan:
    """How the audit uses the cluster: detector actors ask for `gpus_per_detector` GPUs when the
    cluster has GPUs (one actor per that many GPUs and detector), else share ~3/4 of the CPUs with the
    variant actors; normalization tasks take the rest."""
    use_gpu: bool
    per_detector: int
    variant_actors: int
    cpus_per_actor: float
    task_cpus: float
    tasks: int
    threads: int = 1  # torch threads per CPU actor: the CPUs over the actors, at least 1

    @classmethod
    def of(cls, cpus: float, gpus: float, n_detectors: int, variants: bool, options: RayOptions) -> "Plan":
        use_gpu = options.gpus_per_detector > 0 and gpus > 0
        per = options.actors_per_detector or (max(1, int(gpus // (options.gpus_per_detector * n_detectors)))
                                              if use_gpu else max(1, int(cpus // (n_detectors + 1))))
        n_var = max(1, int(cpus // 4)) if variants else 0
        actors = n_detectors * per + n_var
        return cls(use_gpu, per, n_var, min(1.0, cpus * 0.75 / actors),
                   min(1.0, max(0.25, cpus * 0.25)), max(1, int(cpus)), max(1, round(cpus / actors)))


class _Pool:
    """A detector's actors (or the variant generator's), used round-robin; `batch` texts per call."""

    def __init__(self, actors: list[Any], batch: int) -> None:
        self.actors, self.batch = actors, batch
        self.retry_lock = asyncio.Lock()
        self._next = itertools.cycle(actors)

    def next(self) -> Any:
        return next(self._next)

    async def call(self, method: str, texts: list[str]) -> Any:
        """`method` on the next actor. An actor that dies fails the call it ran and every call queued
        behind it: Ray restarts it, and each failed call is tried again (RETRIES times, one call at a
        time), so only a call that kills it every time raises its last RayActorError."""
        from ray.exceptions import RayActorError

        try:
            return await getattr(self.next(), method).remote(texts)
        except RayActorError as first:
            err = first
            async with self.retry_lock:
                for attempt in range(RETRIES):
                    await asyncio.sleep(RETRY_BACKOFF_S * (attempt + 1))  # time for Ray to see the death and restart
                    try:
                        return await getattr(self.next(), method).remote(texts)
                    except RayActorError as again:
                        err = again
            raise err from None  # the last death, not the first it followed


def died(err: Exception) -> str:
    """The error a call that killed its actor every time records for each of its texts."""
    return f"{type(err).__name__}: {str(err).splitlines()[0]}"


def _split(seq: Sequence[Any], parts: int) -> list[Sequence[Any]]:
    size = max(1, math.ceil(len(seq) / max(1, parts)))
    return [seq[i:i + size] for i in range(0, len(seq), size)]


def loaded(what: str, refs: list[Any], fix: str) -> list[Any]:
    """What the workers started for `what` report having loaded (their identities), awaited: one that
    could not load is a SetupError with the worker's own error (the last line of Ray's traceback)."""
    import ray

    try:
        return list(ray.get(refs))
    except ray.exceptions.RayError as err:
        cause = next((line.strip() for line in reversed(str(err).splitlines()) if line.strip()), type(err).__name__)
        raise SetupError(f"{what} could not load on a Ray worker: {cause}", fix) from None


def same(what: str, identities: Sequence[Any], driver: Any, show: Callable[..., str], fix: str) -> None:
    """SetupError unless every worker's identity is the driver's (`show` words one: its parts as arguments)."""
    for identity in identities:
        if identity != driver:
            raise SetupError(f"{what}: a Ray worker loaded {show(*identity)}, the driver {show(*driver)}", fix)


def show_variants(name: str, version: str, method: str, strategies: Mapping[str, Mapping[str, Any]]) -> str:
    return (f"target {name}@{version} ({method} importance), strategies "
            + ", ".join(f"{k} {dict(v)}" if v else k for k, v in strategies.items()))


class RayCompute:
    """The chunk's variants, normalization and scores on Ray; `engine` is the driver's (it names
    every detector, normalizer and generator version the log records)."""

    def __init__(self, engine: Engine, specs: Mapping[str, DetectorConfig | Detector], options: RayOptions) -> None:
        self.engine = engine
        self.options = options
        self.depth = max(1, options.depth)
        self.started_ray = connect(options)
        try:
            self._start(specs)
        except BaseException:
            self.close()
            raise

    def _start(self, specs: Mapping[str, DetectorConfig | Detector]) -> None:
        import ray

        from modlens.scale import actors

        res: dict[str, float] = ray.cluster_resources()  # type: ignore[no-untyped-call]
        plan = Plan.of(float(res.get("CPU", 1)), float(res.get("GPU", 0)), len(self.engine.runners),
                       self.engine.generator is not None, self.options)
        use_gpu, per, n_var, cpu_each = plan.use_gpu, plan.per_detector, plan.variant_actors, plan.cpus_per_actor
        self.task_cpus, self.n_tasks, self.gpu = plan.task_cpus, plan.tasks, use_gpu
        det_cls = ray.remote(max_restarts=MAX_RESTARTS)(actors.DetectorActor)
        gpu_opts = {"num_gpus": self.options.gpus_per_detector} if use_gpu else {}
        dtypes = {k: getattr(r.detector, "dtype", None) for k, r in self.engine.runners.items()}
        pools: dict[str, list[Any]] = {k: [det_cls.options(num_cpus=cpu_each, **gpu_opts).remote(
            specs[k], use_gpu, dtypes[k] if isinstance(dtypes[k], str) else None, plan.threads) for _ in range(per)]
            for k in self.engine.runners}
        # every actor started, for close(): those of a detector checked later than one that failed too
        self.actors: list[Any] = [a for acts in pools.values() for a in acts]
        self.variant_pool: _Pool | None = None
        target = self.engine.target_key()
        if n_var:
            assert target is not None
            var_cls = ray.remote(max_restarts=MAX_RESTARTS)(actors.VariantActor)
            dtype = dtypes[target] if isinstance(dtypes[target], str) else None
            self.variant_pool = _Pool([var_cls.options(num_cpus=cpu_each).remote(
                self.engine.study.perturbation, target, specs[target], plan.threads, dtype) for _ in range(n_var)], 1)
            self.actors += self.variant_pool.actors
        self._normalize = ray.remote(actors.normalize_texts).options(num_cpus=self.task_cpus) \
            if self.engine.normalizer is not None else None
        # workers load the normalizer while the actors start: checked with them below
        normalizers = [ray.remote(actors.normalizer_loaded).options(num_cpus=self.task_cpus).remote(
            self.engine.study.normalizer) for _ in range(self.n_tasks)] if self.engine.normalizer is not None else []
        # reproducibility: every worker must run what the log registers, and every one must have loaded
        # before the first write, so a run that cannot compute its rows writes none
        self.pools: dict[str, _Pool] = {}
        for k, acts in pools.items():
            d = self.engine.runners[k].detector
            identities = loaded(f"detector {k}", [a.identity.remote() for a in acts],
                                "install modlens and the detector's packages on every node")
            same(f"detector {k}", [i[:2] for i in identities], (d.name, d.version), "{0}@{1}".format,
                 "install the same detector versions on every node (and set the detector's dtype in the study "
                 "when the driver has no GPU)")
            self.pools[k] = _Pool(acts, max(1, min(i[2] for i in identities)))
        if self.variant_pool is not None and target is not None and self.engine.variant_setup is not None:
            fix = ("install modlens, the target detector's packages and every strategy's (a plug-in, "
                   "a table such as human_lookup's) alike on every node")
            same("the variant generator",
                 loaded("the variant generator", [a.identity.remote() for a in self.variant_pool.actors], fix),
                 actors.variant_identity(self.engine.runners[target].detector, self.engine.variant_setup),
                 show_variants, fix)
        if self.engine.normalizer is not None:
            fix = "install the same modlens and normalizer steps (plug-ins) on every node"
            same("the normalizer", loaded("the normalizer", normalizers, fix),
                 normalizer_identity(self.engine.normalizer), "{0}@{1}".format, fix)

    # --- the three compute steps, on Ray --------------------------------------------------
    async def variants(self, texts: list[str]) -> list[list[Variant] | Failed]:
        if self.variant_pool is None:
            return [[] for _ in texts]
        parts = _split(texts, len(self.variant_pool.actors) * 2)
        got = await asyncio.gather(*(self._variants(self.variant_pool, list(p)) for p in parts))
        return [v for part in got for v in part]

    @staticmethod
    async def _variants(pool: _Pool, texts: list[str]) -> list[list[Variant] | Failed]:
        """One part's variants on one of the variant actors, retried as a detector's batch is (`_Pool.call`):
        a part that kills its actor every time is a step error for each of its texts, and the audit goes on."""
        from ray.exceptions import RayActorError

        try:
            got: list[list[Variant] | Failed] = await pool.call("variants", texts)
        except RayActorError as err:
            return [Failed(died(err))] * len(texts)
        return got

    async def normalize(self, texts: list[str]) -> list[Any | Failed]:
        assert self._normalize is not None
        parts = _split(texts, self.n_tasks)
        got = await asyncio.gather(*(self._normalize.remote(self.engine.study.normalizer, list(p)) for p in parts))
        return [n for part in got for n in part]

    async def _call(self, key: str, texts: list[str]) -> list[DetectorResult]:
        """One batch on one of the detector's actors. A detector that raises gives an error per text
        (in the actor); an actor that dies is restarted and the batch retried (`_Pool.call`), so only a
        batch that kills it every time is recorded as an error. The audit goes on either way."""
        from ray.exceptions import RayActorError

        d = self.engine.runners[key].detector
        try:
            got = await self.pools[key].call("score", texts)
        except RayActorError as err:
            got = [(None, None, 0.0, died(err))] * len(texts)
        return [DetectorResult(key, d.name, d.version, labels, tox, ms, error) for labels, tox, ms, error in got]

    async def score(self, todo: Mapping[str, Sequence[str]]) -> list[ScoreRow]:
        calls = []
        for k, texts in todo.items():
            size = self.pools[k].batch
            calls += [(k, list(texts[i:i + size])) for i in range(0, len(texts), size)]
        scored = await asyncio.gather(*(self._call(k, batch) for k, batch in calls))
        return [(t, k, r) for (k, batch), results in zip(calls, scored) for t, r in zip(batch, results)]

    def close(self) -> None:
        """Kills the actors and shuts down a Ray this object started; a second call does nothing
        (the audit closes it when its chunks end, and again on its way out of an error before them)."""
        import ray

        for actor in getattr(self, "actors", []):
            ray.kill(actor)
        self.actors = []
        if self.started_ray and ray.is_initialized():
            ray.shutdown()
        self.started_ray = False
