"""One audit run over a dataset's items, chunk by chunk: register each item as a comment,
generate variants, normalize, score what the log lacks, then attack (when asked). An item
enters `run_items` only in the transaction that stores its last result, so a run resumes
without duplicates."""
from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Sequence

from modlens.audit.attacks import AttackSpec, ViaEngine, attack_config, build_attack, gold_toxic
from modlens.datasets.base import Dataset, DatasetItem
from modlens.engine import Engine
from modlens.perturb.attack import GreedyAttack
from modlens.perturb.base import Variant
from modlens.perturb.goals import is_toxic
from modlens.services.recording import record_normalization, record_scores, record_variants
from modlens.studylog import runs
from modlens.studylog.store import StudyLog


def dataset_platform(dataset: Dataset) -> str:
    """The platform (and label source) of a dataset's comments; the file is their one page."""
    return f"dataset:{dataset.name}"


class Auditor:
    def __init__(self, log: StudyLog, engine: Engine, dataset: Dataset, run_id: int, det_ids: dict[str, int],
                 attack: AttackSpec | None = None, attack_plan: dict[str, list[str]] | None = None, seed: int = 0):
        self.log, self.engine, self.dataset, self.run_id, self.det_ids = log, engine, dataset, run_id, det_ids
        self.platform = self.source = dataset_platform(dataset)
        self.n_scored = self.n_missing = 0
        self.attack, self.attack_plan, self.seed = attack, attack_plan or {}, seed
        self.attacks: dict[str, GreedyAttack] = {}  # built on the event loop (their detectors call back into it)
        self.attack_counts: dict[str, dict[str, int]] = {
            k: {"success": 0, "failed": 0, "skipped": 0, "reused": 0} for k in self.attack_plan}
        self._pool: ThreadPoolExecutor | None = None

    def _register(self, items: Sequence[DatasetItem], page_id: int) -> list[tuple[DatasetItem, int]]:
        out = []
        with self.log.transaction():
            for it in items:
                cid = self.log.add_comment(self.platform, it.key, page_id, it.text)
                for name, value in it.labels.items():
                    self.log.add_label(cid, name, value, self.source)
                record_variants(self.log, cid, it.variants, run_id=self.run_id)
                out.append((it, cid))
        return out

    def _unscored(self, texts: Sequence[str], key: str) -> list[str]:
        """The texts this detector has no score (or only an error) for, in order: one query."""
        done = self.log.scored_texts(texts, self.det_ids[key])
        return [t for t in texts if t not in done]

    @staticmethod
    def _chunk_texts(items: Sequence[DatasetItem], generated: Sequence[Sequence[Any]]) -> list[str]:
        """Every text of a chunk that needs scores: items, their dataset variants, generated variants."""
        texts: list[str] = []
        for it, gen in zip(items, generated):
            texts += [it.text, *(v.text for v in it.variants), *(v.text for v in gen)]
        return list(dict.fromkeys(texts))

    def _commit_chunk(self, jobs: Any, normalizations: Sequence[tuple[str, Any]],
                      registered: Sequence[tuple[DatasetItem, int]], generated: Sequence[Sequence[Any]],
                      *, items_done: bool) -> None:
        """One transaction per chunk: scores, normalizations, generated variants and (unless
        attacks are still to come) the run items that mark the chunk's items done."""
        with self.log.transaction():
            self._store_scores(jobs)
            for t, n in normalizations:
                record_normalization(self.log, t, n)
            for (_item, cid), gen in zip(registered, generated):
                record_variants(self.log, cid, gen, run_id=self.run_id)
                if items_done:
                    self.log.add_run_item(self.run_id, cid)

    async def process(self, items: Sequence[DatasetItem], page_id: int) -> None:
        engine = self.engine
        registered = self._register(items, page_id)
        generated = await asyncio.gather(*(engine.variants(it.text) for it, _ in registered)) \
            if engine.generator is not None else [[] for _ in registered]
        texts = self._chunk_texts([it for it, _ in registered], generated)
        normalizations = []
        if engine.normalizer is not None:  # in a worker thread: the batchers keep the event loop
            normalized = await asyncio.get_running_loop().run_in_executor(None, lambda: [engine.normalize(t) for t in texts])
            normalizations = list(zip(texts, normalized))
            texts = list(dict.fromkeys([*texts, *(n.text for n in normalized)]))
        jobs = await self._score_missing(texts)
        self._commit_chunk(jobs, normalizations, registered, generated, items_done=not self.attack)
        if self.attack:  # an item is done only once its attacks are logged
            await self._attack_items(registered)
            with self.log.transaction():
                for _, cid in registered:
                    self.log.add_run_item(self.run_id, cid)

    async def _score_missing(self, texts: Sequence[str]) -> list[tuple[str, str, Any]]:
        """(text, key, DetectorResult) for every detector that has no score (or an error) for a text."""
        todo = {k: ts for k in self.engine.runners if (ts := self._unscored(texts, k))}  # key -> texts to score
        # one engine call per detector: each detector's batcher gets all its texts at once
        scored = await asyncio.gather(*(self.engine.score(ts, only=[k]) for k, ts in todo.items()))
        return [(t, k, res[k]) for (k, ts), results in zip(todo.items(), scored) for t, res in zip(ts, results)]

    def _store_scores(self, jobs: list[tuple[str, str, Any]]) -> None:
        record_scores(self.log, self.det_ids, jobs)
        self.n_scored += len(jobs)
        self.n_missing += sum(r.toxicity is None for _, _, r in jobs)

    # --- attacks ---------------------------------------------------------------------------
    def _is_seed(self, item: DatasetItem, key: str) -> bool:
        """TAE: toxic seeds, BAE: benign ones, by the gold `toxic` label, else by the target's
        own verdict. A seed the target already gets wrong is still attacked: the attack logs it
        as `skipped`, which keeps it out of the success rate's denominator."""
        assert self.attack is not None
        toxic = gold_toxic(item.labels)
        if toxic is None:
            row = self.log.get_score(item.text, self.det_ids[key])
            if row is None or row["toxicity"] is None:
                return True  # unknown: the attack records "target has no score for the seed"
            toxic = is_toxic(row["toxicity"], self.engine.runners[key].detector.threshold)
        return toxic if self.attack.goal == "tae" else not toxic

    def _logged_attack(self, cid: int, attack: GreedyAttack) -> dict[str, Any] | None:
        """The result of this very attack (same configuration and model versions) on this
        comment, from an earlier or interrupted run: attacks are the expensive part, never redone."""
        config = attack_config(attack)
        for r in runs.logged_attacks(self.log, cid, getattr(attack, "strategy", f"attack-{attack.goal}"),
                                     attack.target_key, attack.seed):
            if all(r["params"].get(k) == v for k, v in config.items()):
                return {"text": r["text"], "status": r["attack"].get("status")}
        return None

    async def _attack_items(self, registered: Sequence[tuple[DatasetItem, int]]) -> None:
        assert self.attack is not None
        loop = asyncio.get_running_loop()
        if not self.attacks:
            via = {k: ViaEngine(self.engine, k, loop) for k in self.engine.runners}
            self.attacks = {t: build_attack(self.attack, t, via[t], [via[j] for j in judges], self.seed)
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
        v.params = {**v.params, **attack_config(attack)}
        status = v.attack["status"]
        # transfer: every adversarial text (and failed attempt) scored by every detector
        jobs = await self._score_missing([v.text]) if status != "skipped" else []
        with self.log.transaction():
            self._store_scores(jobs)
            record_variants(self.log, cid, [v], run_id=self.run_id)
        self.attack_counts[key][status] += 1

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=False, cancel_futures=True)
