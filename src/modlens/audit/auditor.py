"""One audit run over a dataset's items, chunk by chunk, through the chunk pipeline
(`modlens.chunks`: register, variants, normalize, score what the log lacks, record) on any compute
(this process's engine, or Ray's: `scale.ray_audit.RayCompute`), then attacks (when asked; local
engine only). An item enters `run_items` only in the transaction that stores its last result, so
a run resumes without duplicates."""
from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Sequence

from modlens.audit.attack_checks import check_attacks
from modlens.audit.attacks import AttackSpec, ViaEngine, attack_config, build_attack, gold_toxic, same_attack
from modlens.chunks import ChunkPipeline, Compute, ItemSource, LocalCompute, LogSink
from modlens.chunks.sinks import GROUP_COMMIT_S
from modlens.datasets.base import Dataset, DatasetItem
from modlens.engine import Engine
from modlens.perturb.attack_record import counting_attack, result_known
from modlens.perturb.compose import Attack
from modlens.rows import Variant
from modlens.perturb.goals import is_toxic
from modlens.services.recording import record_scores, record_variants
from modlens.studylog.records.runs import logged_attacks
from modlens.studylog.records.labels import run_label_set
from modlens.studylog.store import StudyLog


def dataset_platform(dataset: Dataset) -> str:
    """The platform (and label source) of a dataset's comments; the file is their one page. The name
    is the one the reader gave (a data set it identified, else the file's content hash:
    `generic.plain_name`), never a file name."""
    return f"dataset:{dataset.name}"


class Auditor:
    """A dataset's chunks through the pipeline into the log, with attacks after each chunk."""

    def __init__(self, log: StudyLog, engine: Engine, dataset: Dataset, run_id: int, det_ids: dict[str, int],
                 attack: AttackSpec | None = None, attack_plan: dict[str, list[str]] | None = None, seed: int = 0,
                 *, page_id: int | None = None, compute: Compute | None = None, group_s: float = GROUP_COMMIT_S):
        self.log, self.engine, self.dataset, self.run_id, self.det_ids = log, engine, dataset, run_id, det_ids
        platform = dataset_platform(dataset)
        # the run records the gold label set its items' `toxic` labels go to (a new --label: a new set)
        gold_set = run_label_set(log, run_id, platform, dataset.gold)
        # `group_s`: chunks share a transaction while they come fast (a log no other process writes),
        # never with attacks: a chunk's attacks run long after its record, and the lock is not held that long
        self.sink = LogSink(log, ItemSource(platform, page_id, platform, gold_set), run_id, det_ids,
                            group_s=0.0 if attack else group_s)
        self.pipeline = ChunkPipeline(compute or LocalCompute(engine), self.sink)
        self.attack, self.attack_plan, self.seed = attack, attack_plan or {}, seed
        self.attacks: dict[str, Attack] = {}  # built on the event loop (their detectors call back into it)
        self.attack_counts: dict[str, dict[str, int]] = {
            k: {"success": 0, "failed": 0, "skipped": 0, "reused": 0, "unknown": 0} for k in self.attack_plan}
        self._pool: ThreadPoolExecutor | None = None

    @property
    def depth(self) -> int:
        """The pipeline's, but 1 with attacks: a chunk's attacks run after its record and before its
        items are done, so the next chunk is not recorded before they are (variants and run_items in
        the file's order, and no chunk's attacks racing another's for the detectors)."""
        return 1 if self.attack else self.pipeline.depth

    def progress(self, n_done: int) -> None:
        self.sink.progress(n_done)

    async def process(self, items: Sequence[DatasetItem]) -> None:
        chunk = await self.pipeline.run_chunk(items, done=not self.attack)
        if self.attack:  # an item is done only once its attacks are logged
            registered = [(it, cid) for it, cid in zip(items, chunk.comment_ids) if cid is not None]
            await self._attack_items(registered)
            await self._check_attacks()
            with self.log.transaction():
                self.sink.mark_done(chunk.comment_ids)

    async def finish(self) -> None:
        """After the last chunk: the checks of every success still without them, made once more, so the
        count of those left (`attack_checks.unmade`) is of checks this process tried; a resumed run whose
        items an earlier attempt finished processes no chunk, and would otherwise count them unmade."""
        if self.attack:
            await self._check_attacks()

    async def _score_missing(self, texts: Sequence[str]) -> list[tuple[str, str, Any]]:
        """(text, key, DetectorResult) for every detector that has no score (or an error) for a text."""
        return await self.pipeline.compute.score(self.sink.unscored(texts, list(self.engine.runners)))

    def _store_scores(self, jobs: list[tuple[str, str, Any]]) -> None:
        record_scores(self.log, self.det_ids, jobs)
        self.pipeline.count_scores(jobs)  # chunks and attacks: one tally

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

    def _logged_attack(self, cid: int, attack: Attack) -> tuple[dict[str, Any] | None, set[int]]:
        """The result of this very attack (same configuration and model versions) on this
        comment, from an earlier or interrupted run: attacks are the expensive part, never redone.
        A row an older modlens logged is this attack when the fields it lacks are at that era's values
        (`same_attack`); of this attack's rows, the one the report counts too (`counting_attack`) is
        reused when its record says what happened (`result_known`): else the attack is redone, and
        the ids of its rows are returned, whose record the new one replaces where it lands on the
        same row (same text and parameters)."""
        config = attack_config(attack)
        rows = [r for r in logged_attacks(self.log, cid, attack.strategy, attack.target_key, attack.seed)
                if same_attack(r, config)]
        counted = counting_attack(rows)
        if counted is not None and result_known(counted["attack"]):
            return {"text": counted["text"], "status": counted["attack"].get("status")}, set()
        return None, {r["variant_id"] for r in rows}

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
                found, unknown = self._logged_attack(cid, attack)
                if found is None:
                    todo.append((cid, key, it.text, unknown))
                    continue
                self.attack_counts[key]["reused"] += 1
                if found["status"] != "skipped":
                    reused_texts.append(found["text"])
        if reused_texts:  # scores an interrupted run may have missed (or that ended in an error)
            jobs = await self._score_missing(list(dict.fromkeys(reused_texts)))
            with self.log.transaction():
                self._store_scores(jobs)
        await asyncio.gather(*(self._attack_one(cid, key, text, unknown) for cid, key, text, unknown in todo))

    async def _check_attacks(self) -> None:
        """The new successes' model-dependent checks and normalized forms, stored for the report
        (`attack_checks.py`); the normalized forms get every detector's score, the target's included."""
        normalized = check_attacks(self.log)  # on the loop's thread: the log's connection lives here
        if normalized:
            jobs = await self._score_missing(normalized)
            with self.log.transaction():
                self._store_scores(jobs)

    async def _attack_one(self, cid: int, key: str, text: str, unknown: set[int]) -> None:
        attack = self.attacks[key]
        v: Variant = await asyncio.get_running_loop().run_in_executor(self._pool, attack.run, text)
        v.params = {**v.params, **attack_config(attack)}
        assert v.attack is not None  # an attack's Variant always carries its record
        status = v.attack["status"]
        # transfer: every adversarial text (and failed attempt) scored by every detector
        jobs = await self._score_missing([v.text]) if status != "skipped" else []
        with self.log.transaction():
            self._store_scores(jobs)
            (vid,) = record_variants(self.log, cid, [v], run_id=self.run_id)
            if vid in unknown:  # the same row as an older record whose result was unknown: this attempt's record
                # replaces it, known or unknown again (a cached judge without the text, an answer without the label)
                self.log.replace_attacks([(vid, v.attack)])
        self.attack_counts[key][status] += 1
        # of those run, the ones whose record does not say what the attack came to (the target or a
        # judge had no score for a text it sent; those scores are never logged, so score_errors cannot tell)
        self.attack_counts[key]["unknown"] += not result_known(v.attack)

    def close(self) -> None:
        self.sink.commit()  # the chunks recorded since the last COMMIT
        if self._pool is not None:
            self._pool.shutdown(wait=False, cancel_futures=True)
        self.pipeline.close()
