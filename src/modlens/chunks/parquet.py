"""The Parquet sink: `modlens audit --engine ray --out-parquet DIR` writes a chunk's results as shard
files instead of rows in a study log (for runs whose driver should not hold the log), and
`modlens import DIR` feeds them back through the log sink (`sinks.LogSink`) as the same rows a
direct audit writes.

DIR holds `manifest.json` (dataset, page, run parameters, study, every detector's name, version and
config) and, per chunk N, `scores-N.parquet`, `normalizations-N.parquet`, `step_errors-N.parquet` and
`items-N.parquet` (each comment's key, text, labels and variants). Each file is written under a
temporary name and renamed; `items-N` comes last, so a chunk counts as done only once it is there. A
rerun of the same command skips the items already in DIR; another audit into the same DIR is refused."""
from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator, Mapping, Sequence

from modlens.chunks.chunk import Chunk, StepError
from modlens.chunks.register import ItemSource
from modlens.chunks.sinks import LogSink
from modlens.config import StudyConfig
from modlens.datasets.base import Dataset, DatasetItem
from modlens.detectors.base import Detector
from modlens.normalize.base import Edit, Normalized
from modlens.rows import Variant
from modlens.services.errors import SetupError
from modlens.studylog import runs
from modlens.studylog.records.labels import run_label_set
from modlens.studylog.codec import canonical_json
from modlens.studylog.store import StudyLog

FORMAT = 1
# the gold label set of a folder whose manifest predates label sets (no "gold": its definition is unknown)
LEGACY_GOLD = "as written to an --out-parquet folder before label sets"
MANIFEST = "manifest.json"
KINDS = ("items", "scores", "normalizations", "step_errors")
SHARD = re.compile(rf"^({'|'.join(KINDS)})-(\d+)\.parquet$")


def manifest(data: Dataset, platform: str, location: tuple[str, str], params: dict[str, Any], study: StudyConfig,
             detectors: Mapping[str, Detector]) -> dict[str, Any]:
    """`location`: the dataset's (path, url) as the run and its page record them."""
    path, url = location
    return {"modlens_parquet": FORMAT, "dataset": data.name, "path": path,
            "page": {"platform": platform, "page_key": data.path.name, "url": url, "title": data.name},
            "params": params, "study": study.model_dump(mode="json"), "gold": data.gold,
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


def _shard(out: Path, kind: str, n: int) -> Path:
    return out / f"{kind}-{n:06d}.parquet"


def done_keys(out: Path) -> set[str]:
    return {r["comment_key"] for n, kinds in shards(out).items() if "items" in kinds
            for r in _read(_shard(out, "items", n))}


class ParquetSink:
    """A chunk's results as shard files; opens DIR (checks or writes its manifest). Keeps no log,
    so every text is scored and nothing is registered before the compute."""

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
            self._replace(path, lambda tmp: tmp.write_text(json.dumps(meta, indent=2, ensure_ascii=False)))
        self.next = max(shards(out), default=-1) + 1

    @staticmethod
    def _replace(path: Path, write: Any) -> None:
        tmp = path.with_name(f".{path.name}.tmp")
        write(tmp)
        os.replace(tmp, path)

    def _write(self, kind: str, n: int, rows: list[dict[str, Any]], schema: Any) -> None:
        import pyarrow as pa
        import pyarrow.parquet as pq

        self._replace(_shard(self.out, kind, n), lambda tmp: pq.write_table(pa.Table.from_pylist(rows, schema=schema), tmp))

    def register(self, items: Sequence[DatasetItem]) -> list[int | None]:
        return [None] * len(items)

    def unscored(self, texts: Sequence[str], keys: Sequence[str]) -> dict[str, list[str]]:
        return {k: list(texts) for k in keys} if texts else {}

    def record(self, chunk: Chunk, *, done: bool = True) -> None:
        import pyarrow as pa

        n, self.next = self.next, self.next + 1
        s = pa.string()
        self._write("scores", n, [
            {"text": t, "detector": k, "labels_json": None if r.labels is None else canonical_json(r.labels),
             "toxicity": r.toxicity, "latency_ms": r.latency_ms, "error": r.error} for t, k, r in chunk.scores],
            pa.schema([("text", s), ("detector", s), ("labels_json", s), ("toxicity", pa.float64()),
                       ("latency_ms", pa.float64()), ("error", s)]))
        self._write("normalizations", n, [
            {"source_text": t, "normalizer": r.normalizer or "default", "version": r.version or "",
             "text": r.text, "edits_json": json.dumps([e.to_dict() for e in r.edits], ensure_ascii=False)}
            for t, r in chunk.normalizations],
            pa.schema([(c, s) for c in ("source_text", "normalizer", "version", "text", "edits_json")]))
        self._write("step_errors", n, [e.__dict__ for e in chunk.errors],
                    pa.schema([(c, s) for c in ("text", "step", "component", "version", "message")]))
        self._write("items", n, [
            {"comment_key": it.key, "text": it.text, "labels_json": canonical_json(it.labels),
             "variants_json": json.dumps([v.to_dict() for v in it.variants], ensure_ascii=False),
             "generated_json": json.dumps([v.to_dict() for v in gen], ensure_ascii=False)}
            for it, gen in zip(chunk.items, chunk.generated)],
            pa.schema([(c, s) for c in ("comment_key", "text", "labels_json", "variants_json", "generated_json")]))

    def mark_done(self, comment_ids: Sequence[int | None]) -> None:
        pass  # a chunk is done once its items shard is written

    def progress(self, n_done: int) -> None:
        pass  # no run row: the shards on disk are the progress


# --- modlens import DIR ---------------------------------------------------------------------
@dataclass
class _Score:
    labels: dict[str, float] | None
    toxicity: float | None
    latency_ms: float
    error: str | None


def _variants(raw: str) -> list[Variant]:
    return [Variant(**{**v, "positions": [tuple(p) for p in v["positions"]]}) for v in json.loads(raw)]


def _normalized(row: dict[str, Any]) -> Normalized:
    return Normalized(row["text"], [Edit(**e) for e in json.loads(row["edits_json"])], row["normalizer"], row["version"])


def read_chunk(out: Path, n: int) -> Chunk:
    """Chunk N as the audit produced it (comment ids unknown until registered)."""
    items = _read(_shard(out, "items", n))
    return Chunk(
        [DatasetItem(r["comment_key"], r["text"], json.loads(r["labels_json"]), _variants(r["variants_json"]))
         for r in items], [None] * len(items), [_variants(r["generated_json"]) for r in items],
        [(m["source_text"], _normalized(m)) for m in _read(_shard(out, "normalizations", n))],
        [(s["text"], s["detector"], _Score(None if s["labels_json"] is None else json.loads(s["labels_json"]),
                                           s["toxicity"], s["latency_ms"], s["error"]))
         for s in _read(_shard(out, "scores", n))],
        [StepError(**e) for e in _read(_shard(out, "step_errors", n))])


def chunks(out: Path) -> Iterator[Chunk]:
    for n, kinds in sorted(shards(out).items()):
        if "items" in kinds:  # a chunk without its items file was cut off: its items are redone by a rerun
            yield read_chunk(out, n)


def import_parquet(out: str | Path, db: str | Path) -> dict[str, Any]:
    """Loads an `--out-parquet` folder into the study log at `db` through the log sink (resumable and
    idempotent: items the log's run already holds are skipped). Returns counts."""
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
        run_id = runs.find_run(log, meta["dataset"], meta["path"], meta["params"])
        if run_id is None:
            run_id = log.start_run(meta["dataset"], meta["path"], meta["params"])
        else:
            log.set_run_status(run_id, "running")
        gold_set = run_label_set(log, run_id, page["platform"], meta.get("gold", LEGACY_GOLD))
        sink = LogSink(log, ItemSource(page["platform"], page_id, page["platform"], gold_set), run_id, det_ids)
        done = runs.completed_keys(log, run_id)
        for chunk in chunks(out):
            todo = [it for it in chunk.items if it.key not in done]
            counts["skipped"] += len(chunk.items) - len(todo)
            if not todo:
                continue
            keep = [i for i, it in enumerate(chunk.items) if it.key not in done]
            with log.transaction():  # as the audit's log sink writes one chunk
                chunk.items, chunk.generated = todo, [chunk.generated[i] for i in keep]
                chunk.comment_ids = sink.register(todo)
                sink.record(chunk)
            counts["items"] += len(todo)
            counts["scores"] += len(chunk.scores)
            counts["chunks"] += 1
        log.set_run_progress(run_id, runs.n_completed(log, run_id))
        log.finish_run(run_id, "finished")
        counts["run_id"] = run_id
    finally:
        log.close()
    return counts
