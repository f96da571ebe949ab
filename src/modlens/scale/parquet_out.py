"""`modlens audit --engine ray --out-parquet DIR`: the audit's results as sharded Parquet instead of
rows in a study log, for runs whose driver should not hold the log; `modlens import DIR` loads them
into a log later, through the same recording services, as the same rows a direct audit writes.

DIR holds `manifest.json` (dataset, page, run parameters, study, every detector's name, version and
config) and, per chunk N, `scores-N.parquet`, `normalizations-N.parquet` and `items-N.parquet`
(each comment's key, text, labels and variants). Each file is written under a temporary name and
renamed; `items-N` comes last, so a chunk counts as done only once all three are there. A rerun of
the same command skips the items already in DIR; another audit into the same DIR is refused."""
from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator, Mapping, Sequence

from modlens.config import StudyConfig
from modlens.datasets.base import Dataset, DatasetItem
from modlens.detectors.base import Detector
from modlens.engine import Engine
from modlens.perturb.base import Variant
from modlens.scale.ray_audit import RayAuditor, RayOptions
from modlens.scale.sources import location
from modlens.services.errors import SetupError
from modlens.services.recording import record_scores, record_variants
from modlens.studylog import runs
from modlens.studylog.store import StudyLog, canonical_json

FORMAT = 1
MANIFEST = "manifest.json"
SHARD = re.compile(r"^(items|scores|normalizations)-(\d+)\.parquet$")


def manifest(data: Dataset, platform: str, params: dict[str, Any], study: StudyConfig,
             detectors: Mapping[str, Detector]) -> dict[str, Any]:
    path, url = location(data)
    return {"modlens_parquet": FORMAT, "dataset": data.name, "path": path,
            "page": {"platform": platform, "page_key": data.path.name, "url": url,
                     "title": data.name},
            "params": params, "study": study.model_dump(mode="json"),
            "detectors": {k: {"name": d.name, "version": d.version, "toxicity_label": d.toxicity_label,
                              "threshold": d.threshold, "config": d.config()} for k, d in detectors.items()}}


def shards(out: Path) -> dict[int, set[str]]:
    """chunk number -> the kinds of shard files it has."""
    found: dict[int, set[str]] = {}
    for p in out.iterdir() if out.is_dir() else []:
        m = SHARD.match(p.name)
        if m:
            found.setdefault(int(m.group(2)), set()).add(m.group(1))
    return found


def _read(path: Path) -> list[dict[str, Any]]:
    import pyarrow.parquet as pq

    # use_threads=False: pyarrow's reader threads can abort the process at exit (see studylog/bundle.py)
    return list(pq.read_table(path, use_threads=False).to_pylist()) if path.exists() else []


def done_keys(out: Path) -> set[str]:
    return {r["comment_key"] for n, kinds in shards(out).items() if "items" in kinds
            for r in _read(out / f"items-{n:06d}.parquet")}


class Sink:
    """Writes one chunk's results as shard files; opens DIR (checks or writes its manifest)."""

    def __init__(self, out: Path, meta: dict[str, Any]) -> None:
        self.out = out
        out.mkdir(parents=True, exist_ok=True)
        path = out / MANIFEST
        if path.exists():
            old = json.loads(path.read_text())
            if canonical_json(old.get("params")) != canonical_json(meta["params"]) or old.get("path") != meta["path"]:
                raise SetupError(f"{out} holds the results of another audit ({old.get('dataset')}, other parameters); "
                                 "give another --out-parquet folder")
        else:
            self._write_text(path, json.dumps(meta, indent=2, ensure_ascii=False))
        self.next = max(shards(out), default=-1) + 1

    def _write_text(self, path: Path, text: str) -> None:
        tmp = path.with_name(f".{path.name}.tmp")
        tmp.write_text(text)
        os.replace(tmp, path)

    def _write(self, name: str, rows: list[dict[str, Any]], schema: Any) -> None:
        import pyarrow as pa
        import pyarrow.parquet as pq

        path = self.out / name
        tmp = path.with_name(f".{name}.tmp")
        pq.write_table(pa.Table.from_pylist(rows, schema=schema), tmp)
        os.replace(tmp, path)

    def write(self, items: Sequence[DatasetItem], generated: Sequence[Sequence[Variant]],
              normalizations: Sequence[tuple[str, Any]], jobs: Sequence[tuple[str, str, Any]]) -> None:
        import pyarrow as pa

        n, self.next = self.next, self.next + 1
        s = pa.string()
        self._write(f"scores-{n:06d}.parquet", [
            {"text": t, "detector": k, "labels_json": None if r.labels is None else canonical_json(r.labels),
             "toxicity": r.toxicity, "latency_ms": r.latency_ms, "error": r.error} for t, k, r in jobs],
            pa.schema([("text", s), ("detector", s), ("labels_json", s), ("toxicity", pa.float64()),
                       ("latency_ms", pa.float64()), ("error", s)]))
        self._write(f"normalizations-{n:06d}.parquet", [
            {"source_text": t, "normalizer": r.normalizer or "default", "version": r.version or "",
             "text": r.text, "edits_json": json.dumps([e.to_dict() for e in r.edits], ensure_ascii=False)}
            for t, r in normalizations],
            pa.schema([(c, s) for c in ("source_text", "normalizer", "version", "text", "edits_json")]))
        self._write(f"items-{n:06d}.parquet", [
            {"comment_key": it.key, "text": it.text, "labels_json": canonical_json(it.labels),
             "variants_json": json.dumps([v.to_dict() for v in it.variants], ensure_ascii=False),
             "generated_json": json.dumps([v.to_dict() for v in gen], ensure_ascii=False)}
            for it, gen in zip(items, generated)],
            pa.schema([(c, s) for c in ("comment_key", "text", "labels_json", "variants_json", "generated_json")]))


class _NoLog:
    """What `run._drive` asks of the log while results go to Parquet instead."""

    def set_run_progress(self, run_id: int, n_done: int) -> None:
        pass


class ParquetAuditor(RayAuditor):
    """RayAuditor whose chunks end in shard files: every text is scored (no log to ask)."""

    def __init__(self, sink: Sink, engine: Engine, dataset: Dataset,
                 specs: Mapping[str, Any], options: RayOptions) -> None:
        super().__init__(_NoLog(), engine, dataset, 0, {}, specs, options)  # type: ignore[arg-type]
        self.sink = sink

    def _unscored(self, texts: Sequence[str], key: str) -> list[str]:
        return list(texts)

    async def process(self, items: Sequence[DatasetItem], page_id: int) -> None:
        generated = await self._variants([it.text for it in items])
        texts = self._chunk_texts(items, generated)
        normalizations: list[tuple[str, Any]] = []
        if self._normalize is not None:
            normalized = await self._normalized(texts)
            normalizations = list(zip(texts, normalized))
            texts = list(dict.fromkeys([*texts, *(n.text for n in normalized)]))
        jobs = await self._score_missing(texts)
        self.n_scored += len(jobs)
        self.n_missing += sum(r.toxicity is None for _, _, r in jobs)
        self.sink.write(items, generated, normalizations, jobs)


# --- modlens import DIR ---------------------------------------------------------------------
@dataclass
class _Score:
    labels: dict[str, float] | None
    toxicity: float | None
    latency_ms: float
    error: str | None


def _variants(raw: str) -> list[Variant]:
    return [Variant(**{**v, "positions": [tuple(p) for p in v["positions"]]}) for v in json.loads(raw)]


def _chunks(out: Path) -> Iterator[tuple[int, list[dict[str, Any]]]]:
    for n, kinds in sorted(shards(out).items()):
        if "items" in kinds:  # a chunk without its items file was cut off: its items are redone by a rerun
            yield n, _read(out / f"items-{n:06d}.parquet")


def import_parquet(out: str | Path, db: str | Path) -> dict[str, Any]:
    """Loads an `--out-parquet` folder into the study log at `db` (resumable and idempotent: items
    the log's run already holds are skipped). Returns counts."""
    out = Path(out)
    if not (out / MANIFEST).is_file():
        raise SetupError(f"{out}: no {MANIFEST}; give a folder written by `modlens audit --out-parquet`")
    meta = json.loads((out / MANIFEST).read_text())
    if meta.get("modlens_parquet") != FORMAT:
        raise SetupError(f"{out}: written by another modlens (format {meta.get('modlens_parquet')}, this reads {FORMAT})")
    study = meta["study"]
    counts = {"items": 0, "skipped": 0, "scores": 0, "chunks": 0}
    log = StudyLog(db)
    try:
        with log.transaction():
            log.ensure_study(study["study_id"], study.get("title", ""), study)
            det_ids = {k: log.ensure_detector(d["name"], d["version"], d["toxicity_label"], d["threshold"], d["config"])
                       for k, d in meta["detectors"].items()}
        page = meta["page"]
        page_id = log.ensure_page(page["platform"], page["page_key"], page["url"], page["title"])
        # the run an earlier import of this folder made, finished or not: importing again adds nothing
        found = log.query("SELECT run_id FROM audit_runs WHERE dataset = ? AND path = ? AND params_json = ? "
                          "ORDER BY run_id DESC LIMIT 1", (meta["dataset"], meta["path"], canonical_json(meta["params"])))
        run_id = found[0]["run_id"] if found else None
        if run_id is None:
            run_id = log.start_run(meta["dataset"], meta["path"], meta["params"])
        else:
            log.set_run_status(run_id, "running")
        done = runs.completed_keys(log, run_id)
        for n, items in _chunks(out):
            todo = [r for r in items if r["comment_key"] not in done]
            counts["skipped"] += len(items) - len(todo)
            if not todo:
                continue
            scores = _read(out / f"scores-{n:06d}.parquet")
            with log.transaction():  # as `Auditor.process` writes one chunk
                cids = []
                for r in todo:
                    cid = log.add_comment(page["platform"], r["comment_key"], page_id, r["text"])
                    for name, value in json.loads(r["labels_json"]).items():
                        log.add_label(cid, name, value, page["platform"])
                    record_variants(log, cid, _variants(r["variants_json"]), run_id=run_id)
                    cids.append(cid)
                record_scores(log, det_ids, [(s["text"], s["detector"], _Score(
                    None if s["labels_json"] is None else json.loads(s["labels_json"]), s["toxicity"],
                    s["latency_ms"], s["error"])) for s in scores])
                for m in _read(out / f"normalizations-{n:06d}.parquet"):
                    log.add_normalization(m["source_text"], m["normalizer"], m["version"], m["text"],
                                          json.loads(m["edits_json"]))
                for r, cid in zip(todo, cids):
                    record_variants(log, cid, _variants(r["generated_json"]), run_id=run_id)
                    log.add_run_item(run_id, cid)
            counts["items"] += len(todo)
            counts["scores"] += len(scores)
            counts["chunks"] += 1
        log.set_run_progress(run_id, runs.n_completed(log, run_id))
        log.finish_run(run_id, "finished")
        counts["run_id"] = run_id
    finally:
        log.close()
    return counts
