"""The Parquet sink: `modlens audit --engine ray --out-parquet DIR` writes a chunk's results as shard
files instead of rows in a study log (for runs whose driver should not hold the log), and
`modlens import DIR` feeds them back through the log sink (`sinks.LogSink`) as the same rows a
direct audit writes.

DIR holds `manifest.json` (dataset, page, run parameters, study, every detector's name, version and
config) and, per chunk N, `scores-N.parquet`, `normalizations-N.parquet`, `step_errors-N.parquet` and
`items-N.parquet` (each comment's key, text, labels and variants). Each file is written under a
temporary name and renamed; `items-N` comes last, so a chunk counts as done only once it is there. A
rerun of the same command skips the items already in DIR, and scores no text DIR holds a good score
for; another audit into the same DIR is refused. The digest of the bytes a run read is no part of
that identity (READ_RECORDS): a rerun over a file that grew (rows keyed by --id-col) resumes, and the
manifest lists each version its runs read."""
from __future__ import annotations

import functools
import hashlib
import json
import math
import os
import re
import sqlite3
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Collection, Iterable, Iterator, Mapping, Sequence

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

from modlens.chunks.chunk import Chunk, StepError
from modlens.chunks.register import ItemSource
from modlens.chunks.sinks import LogSink
from modlens.config import LimitsConfig, StudyConfig
from modlens.datasets.base import Dataset, DatasetItem
from modlens.detectors.base import Detector
from modlens.normalize.base import Edit, Normalized
from modlens.rows import Variant
from modlens.safe_archive import MAX_JSON_DEPTH, ArchiveError, json_depth, loads_json, read_file, read_parquet
from modlens.services.errors import SetupError
from modlens.studylog.records.runs import (completed_keys, find_run, n_completed, record_bytes_read, run_identity,
                                          with_bytes_read)
from modlens.studylog.records.labels import run_label_set
from modlens.studylog.codec import canonical_json
from modlens.studylog.connection import LogUnwritable, unwritable
from modlens.studylog.store import StudyLog

FORMAT = 1
# the gold label set of a folder whose manifest predates label sets (no "gold": its definition is unknown)
LEGACY_GOLD = "as written to an --out-parquet folder before label sets"
MANIFEST = "manifest.json"
KINDS = ("items", "scores", "normalizations", "step_errors")
SHARD = re.compile(rf"^({'|'.join(KINDS)})-(\d+)\.parquet$")
# The shard schema, one description for the writer and for the import's check: per kind, (column,
# Arrow type, may be null). A folder may come from someone else, so `modlens import` checks every
# file against it, and the JSON columns against JSON_COLUMNS, before it writes anything.
_STR, _FLOAT = "string", "double"
COLUMNS: dict[str, tuple[tuple[str, str, bool], ...]] = {
    "items": (("comment_key", _STR, False), ("text", _STR, False), ("labels_json", _STR, False),
              ("variants_json", _STR, False), ("generated_json", _STR, False)),
    "scores": (("text", _STR, False), ("detector", _STR, False), ("labels_json", _STR, True),
               ("toxicity", _FLOAT, True), ("latency_ms", _FLOAT, False), ("error", _STR, True)),
    "normalizations": tuple((c, _STR, False) for c in ("source_text", "normalizer", "version", "text", "edits_json")),
    "step_errors": tuple((c, _STR, False) for c in ("text", "step", "component", "version", "message")),
}
# a detector's label score, as every detector produces it (detectors.base: a probability)
Probability = Annotated[float, Field(ge=0.0, le=1.0, allow_inf_nan=False)]
JSON_COLUMNS: dict[tuple[str, str], Any] = {
    ("items", "labels_json"): dict[str, str | int | float | bool | None],
    ("items", "variants_json"): list[Variant],
    ("items", "generated_json"): list[Variant],
    ("scores", "labels_json"): dict[str, Probability],
    ("normalizations", "edits_json"): list[Edit],
}


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

    # use_threads=False: pyarrow's reader threads can abort the process at exit (see safe_archive.py)
    return list(pq.read_table(path, use_threads=False).to_pylist()) if path.exists() else []


def _shard(out: Path, kind: str, n: int) -> Path:
    return out / f"{kind}-{n:06d}.parquet"


def _digest(text: str) -> bytes:
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()


def _answers(out: Path) -> Iterator[tuple[str, str, str | None]]:
    """(text, detector key, error) of every score row of DIR's finished chunks: those `modlens import`
    reads (a chunk without its items file was cut off, and its items are redone)."""
    import pyarrow.parquet as pq

    for n, kinds in sorted(shards(out).items()):
        if {"items", "scores"} <= kinds:
            table = pq.read_table(_shard(out, "scores", n), columns=["text", "detector", "error"], use_threads=False)
            yield from zip(*(table.column(c).to_pylist() for c in ("text", "detector", "error")))


def folder_errors(out: Path) -> tuple[list[tuple[str, str, str, str]], dict[str, dict[str, str]]]:
    """What DIR's finished chunks, those of every run into it, hold of errors: its step errors as
    (step, component@version, message, text), in chunk order, and per detector key the texts none of
    whose score rows is good, each with its first error (`modlens import` keeps that row: a good score
    replaces an error, and a text with a good score is never scored again)."""
    steps = [(r["step"], f"{r['component']}@{r['version']}", r["message"], r["text"])
             for n, kinds in sorted(shards(out).items()) if {"items", "step_errors"} <= kinds
             for r in _read(_shard(out, "step_errors", n))]
    failing: dict[str, dict[str, str]] = {}
    for text, key, error in _answers(out):
        if error is None:
            failing.get(key, {}).pop(text, None)
        else:
            failing.setdefault(key, {}).setdefault(text, error)
    return steps, {key: texts for key, texts in failing.items() if texts}


def done_keys(out: Path) -> set[str]:
    return {r["comment_key"] for n, kinds in shards(out).items() if "items" in kinds
            for r in _read(_shard(out, "items", n))}


class ParquetSink:
    """A chunk's results as shard files; opens DIR (checks or writes its manifest). Keeps no log,
    so nothing is registered before the compute, and a text is scored unless DIR already holds a
    good score for it, from this run (a text repeated in a later chunk) or an earlier one into DIR
    (a rerun that resumes). So DIR holds one row per text and detector, except for a text whose score
    was an error: it is scored again when met again, and each scoring adds a row (the error, then the
    new score). The log it is imported into keeps one row (a good score replaces the error, a second
    error leaves the first), and the run's tally counts texts, one per text and detector, as that log
    holds them (`pipeline.count_errors`)."""

    def __init__(self, out: Path, meta: dict[str, Any]) -> None:
        self.out = out
        out.mkdir(parents=True, exist_ok=True)
        path = out / MANIFEST
        self._manifest: dict[str, Any] | None = None  # the manifest to write with the next chunk
        if path.exists():
            old = json.loads(path.read_text())
            if run_identity(old.get("params")) != run_identity(meta["params"]) or old.get("path") != meta["path"]:
                raise SetupError(f"{out} holds the results of another audit ({old.get('dataset')}, other parameters); "
                                 "give another --out-parquet folder")
            # other bytes than the folder's runs read so far: the manifest says so with this run's first chunk,
            # listing every version its runs read (`file_digests`); a manifest written before runs
            # recorded them names none, and no list of the earlier runs' bytes can be made
            params = with_bytes_read(old["params"], meta["params"], unknown_earlier=True)
            self._manifest = None if params is None else {**old, "params": params}
        else:
            self._replace(path, lambda tmp: tmp.write_text(json.dumps(meta, indent=2, ensure_ascii=False)))
        self.next = max(shards(out), default=-1) + 1
        # detector key -> digests of the texts DIR holds a good score for (digests: a large run's
        # texts would not all fit in memory; an error is scored again, as on the log sink)
        self._answered: dict[str, set[bytes]] = {}
        self._answer(_answers(out))

    @staticmethod
    def _replace(path: Path, write: Any) -> None:
        tmp = path.with_name(f".{path.name}.tmp")
        write(tmp)
        os.replace(tmp, path)

    def _write(self, kind: str, n: int, rows: list[dict[str, Any]]) -> None:
        import pyarrow as pa
        import pyarrow.parquet as pq

        schema = pa.schema([(c, pa.type_for_alias(t)) for c, t, _ in COLUMNS[kind]])
        self._replace(_shard(self.out, kind, n), lambda tmp: pq.write_table(pa.Table.from_pylist(rows, schema=schema), tmp))

    def register(self, items: Sequence[DatasetItem]) -> list[int | None]:
        return [None] * len(items)

    def _answer(self, rows: Iterable[tuple[str, str, str | None]]) -> None:
        for t, k, error in rows:
            if error is None:
                self._answered.setdefault(k, set()).add(_digest(t))

    def unscored(self, texts: Sequence[str], keys: Sequence[str]) -> dict[str, list[str]]:
        answered = {k: a for k in keys if (a := self._answered.get(k))}
        digests = [_digest(t) for t in texts] if answered else []  # once per text, only if needed
        todo: dict[str, list[str]] = {}
        for k in keys:
            a = answered.get(k)
            if left := list(texts) if a is None else [t for t, d in zip(texts, digests) if d not in a]:
                todo[k] = left
        return todo

    def record(self, chunk: Chunk, *, done: bool = True) -> None:
        chunk.comment_ids = self.register(chunk.items)
        n, self.next = self.next, self.next + 1
        self._write("scores", n, [
            {"text": t, "detector": k, "labels_json": None if r.labels is None else canonical_json(r.labels),
             "toxicity": r.toxicity, "latency_ms": r.latency_ms, "error": r.error} for t, k, r in chunk.scores])
        self._write("normalizations", n, [
            {"source_text": t, "normalizer": r.normalizer or "default", "version": r.version or "",
             "text": r.text, "edits_json": json.dumps([e.to_dict() for e in r.edits], ensure_ascii=False)}
            for t, r in chunk.normalizations])
        self._write("step_errors", n, [e.__dict__ for e in chunk.errors])
        if self._manifest is not None:  # before the items file that makes the chunk done
            manifest_json = json.dumps(self._manifest, indent=2, ensure_ascii=False)
            self._replace(self.out / MANIFEST, lambda tmp: tmp.write_text(manifest_json))
            self._manifest = None
        self._write("items", n, [
            {"comment_key": it.key, "text": it.text, "labels_json": canonical_json(it.labels),
             "variants_json": json.dumps([v.to_dict() for v in it.variants], ensure_ascii=False),
             "generated_json": json.dumps([v.to_dict() for v in gen], ensure_ascii=False)}
            for it, gen in zip(chunk.items, chunk.generated)])
        self._answer((t, k, r.error) for t, k, r in chunk.scores)  # once the chunk is written

    def mark_done(self, comment_ids: Sequence[int | None]) -> None:
        pass  # a chunk is done once its items shard is written

    def progress(self, n_done: int) -> None:
        pass  # no run row: the shards on disk are the progress


# --- modlens import DIR ---------------------------------------------------------------------
MANIFEST_MAX_BYTES = 16 << 20  # a manifest is some KB: the study's configuration and the detectors'
REFETCH = ("give a folder `modlens audit --out-parquet DIR` wrote; if it was, ask whoever sent it to run "
           "the audit again (the folder was damaged or changed)")
# The longest text a shard may hold, in UTF-8 bytes: the daemon's protocol takes no comment in a frame
# larger than `limits.max_message_bytes` (1 MiB; it then cuts the comment to `max_comment_chars`). An
# audit keeps a dataset's texts whole, so the import's bound is the frame's, not the cut's.
MAX_TEXT_BYTES: int = LimitsConfig.model_fields["max_message_bytes"].default
TEXT_COLUMNS = {"items": ("text",), "scores": ("text",), "normalizations": ("source_text", "text"),
                "step_errors": ("text",)}


class ShardError(SetupError):
    """A shard folder that does not match the shard schema: the message names the file and the
    column, `fix` says what to do. Raised before anything is written."""

    def __init__(self, message: str, fix: str = REFETCH) -> None:
        super().__init__(message, fix)


class _Strict(BaseModel):
    model_config = ConfigDict(strict=True, extra="allow")


class _Page(_Strict):
    platform: str
    page_key: str
    url: str | None
    title: str | None


class _Study(_Strict):
    study_id: str
    title: str = ""


class _DetectorEntry(_Strict):
    name: str
    version: str
    toxicity_label: str | None
    threshold: float | None
    config: dict[str, Any]


class _Manifest(_Strict):
    """The manifest's fields the import reads, with their types."""
    dataset: str
    path: str | None
    page: _Page
    params: dict[str, Any]
    study: _Study
    gold: str = LEGACY_GOLD
    detectors: dict[str, _DetectorEntry]


def read_manifest(out: Path) -> dict[str, Any]:
    """The folder's manifest, checked: bounded, nested at most 64 levels, this format, every field
    the import reads of its type."""
    path = out / MANIFEST
    if not _regular(path):
        raise ShardError(f"{out}: no {MANIFEST}", fix="give a folder written by `modlens audit --out-parquet`")
    try:
        meta = loads_json(read_file(path, MANIFEST_MAX_BYTES), str(path), max_bytes=MANIFEST_MAX_BYTES)
    except ArchiveError as err:
        raise ShardError(str(err)) from None
    version = meta.get("modlens_parquet") if isinstance(meta, dict) else None
    if version != FORMAT:
        raise ShardError(f"{path}: modlens_parquet is {version!r}, this modlens reads format {FORMAT}",
                         fix="import it with the modlens that wrote it, or " + REFETCH)
    try:
        _Manifest.model_validate(meta)
    except ValidationError as err:
        raise ShardError(f"{path}: {_first_error(err)}") from None
    return dict(meta)


def _regular(path: Path) -> bool:
    """Whether `path` exists; ShardError when it is not a regular file. A symbolic link is not
    followed (lstat), wherever it points: the folder's files are the folder's own."""
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return False
    if not stat.S_ISREG(mode):
        kind = ("a symbolic link" if stat.S_ISLNK(mode) else "a folder" if stat.S_ISDIR(mode)
                else "a FIFO" if stat.S_ISFIFO(mode) else "a special file")
        raise ShardError(f"{path}: not a regular file ({kind}); an --out-parquet folder holds its files themselves",
                         fix=f"copy the file the link points to into the folder in its place, or {REFETCH}")
    return True


def _first_error(err: ValidationError) -> str:
    first = err.errors()[0]
    where = ".".join(str(p) for p in first["loc"])
    return f"{where}: {first['msg']}" if where else str(first["msg"])


def _decode(path: Path, row: int, column: str, raw: str, shape: Any) -> Any:
    """A JSON column's value: nested at most 64 levels (checked before decoding), of its shape."""
    where = f"{path}: column {column}, row {row}"
    depth = json_depth(raw.encode("utf-8", "surrogatepass"))
    if depth > MAX_JSON_DEPTH:
        raise ShardError(f"{where}: JSON nested deeper than {MAX_JSON_DEPTH} levels ({depth})")
    try:
        return _adapter(shape).validate_json(raw, strict=True)
    except ValidationError as err:
        raise ShardError(f"{where}: {_first_error(err)}") from None


@functools.cache
def _adapter(shape: Any) -> TypeAdapter[Any]:
    return TypeAdapter(shape)


def _checked_rows(out: Path, kind: str, n: int, detectors: Collection[str]) -> list[dict[str, Any]]:
    """Shard `kind`-`n` as rows, checked against the shard schema, its JSON columns decoded; a chunk
    without this kind of file has none of its rows. ShardError names the file and the column."""
    import pyarrow as pa

    path = _shard(out, kind, n)
    if not _regular(path):
        return []
    try:
        table = read_parquet(path, str(path))
    except ArchiveError as err:
        raise ShardError(str(err)) from None
    have = {field.name: field.type for field in table.schema}
    for column, type_name, nullable in COLUMNS[kind]:
        want = pa.type_for_alias(type_name)
        if column not in have:
            raise ShardError(f"{path}: column {column} is missing (the shard schema: "
                             f"{', '.join(c for c, _, _ in COLUMNS[kind])})")
        if have[column] != want:
            raise ShardError(f"{path}: column {column} is {have[column]}, the shard schema says {want}")
        if not nullable and table.column(column).null_count:
            raise ShardError(f"{path}: column {column} has {table.column(column).null_count} empty (null) values; "
                             "every row needs one")
    if unknown := sorted(set(have) - {c for c, _, _ in COLUMNS[kind]}):
        raise ShardError(f"{path}: column {unknown[0]} is not in the shard schema")
    for column in TEXT_COLUMNS[kind]:
        _check_length(path, column, table.column(column))
    try:
        rows: list[dict[str, Any]] = table.to_pylist()
    except (pa.ArrowException, UnicodeDecodeError) as err:
        raise ShardError(f"{path}: not readable as text ({type(err).__name__}: {str(err)[:200]})") from None
    shapes = {c: shape for (k, c), shape in JSON_COLUMNS.items() if k == kind}
    for i, row in enumerate(rows):
        for column, shape in shapes.items():
            if row[column] is not None:
                row[column] = _decode(path, i, column, row[column], shape)
        if kind == "scores":
            if row["detector"] not in detectors:
                raise ShardError(f"{path}: column detector, row {i}: {row['detector']!r} is not a detector of the "
                                 f"manifest ({', '.join(sorted(detectors))})")
            _check_number(path, i, "toxicity", row["toxicity"], 1.0)
            _check_number(path, i, "latency_ms", row["latency_ms"], math.inf)
    return rows


def _check_number(path: Path, row: int, column: str, value: float | None, top: float) -> None:
    """A score is a probability in [0, 1] (as every detector produces it; null: the detector had no
    answer); a latency is finite and not negative."""
    if value is None or (math.isfinite(value) and 0.0 <= value <= top):
        return
    want = "a probability in [0, 1]" if top == 1.0 else "a finite number of milliseconds, not negative"
    raise ShardError(f"{path}: column {column}, row {row}: {value!r} is not {want}")


def _check_length(path: Path, column: str, values: Any) -> None:
    """Every text of `column` at most MAX_TEXT_BYTES long (counted by Arrow, without decoding)."""
    import pyarrow.compute as pc

    lengths = pc.binary_length(values)
    longest = pc.max(lengths).as_py()
    if longest is None or longest <= MAX_TEXT_BYTES:
        return
    row = pc.index(lengths, longest).as_py()
    raise ShardError(f"{path}: column {column}, row {row}: a text of {longest:,} bytes, longer than the "
                     f"{MAX_TEXT_BYTES:,} bytes (`limits.max_message_bytes`) in which the daemon takes a comment",
                     fix="cut the dataset's texts to that length and run the audit again")


@dataclass
class _Score:
    labels: dict[str, float] | None
    toxicity: float | None
    latency_ms: float
    error: str | None


def read_chunk(out: Path, n: int, detectors: Collection[str]) -> Chunk:
    """Chunk N as the audit produced it (comment ids unknown until registered), every file checked
    against the shard schema; `detectors`: the manifest's detector keys."""
    items = _checked_rows(out, "items", n, detectors)
    return Chunk(
        [DatasetItem(r["comment_key"], r["text"], r["labels_json"], r["variants_json"]) for r in items],
        [None] * len(items), [r["generated_json"] for r in items],
        [(m["source_text"], Normalized(m["text"], m["edits_json"], m["normalizer"], m["version"]))
         for m in _checked_rows(out, "normalizations", n, detectors)],
        [(s["text"], s["detector"], _Score(s["labels_json"], s["toxicity"], s["latency_ms"], s["error"]))
         for s in _checked_rows(out, "scores", n, detectors)],
        [StepError(**e) for e in _checked_rows(out, "step_errors", n, detectors)])


def chunks(out: Path, detectors: Collection[str]) -> Iterator[Chunk]:
    for n, kinds in sorted(shards(out).items()):
        if "items" in kinds:  # a chunk without its items file was cut off: its items are redone by a rerun
            yield read_chunk(out, n, detectors)


def import_parquet(out: str | Path, db: str | Path) -> dict[str, Any]:
    """Loads an `--out-parquet` folder into the study log at `db` through the log sink (idempotent:
    items the log's run already holds are skipped). Returns counts: `items` imported into the run,
    `skipped` (the run held them), `chunks` imported; of the score rows of those chunks, `scores_read`,
    `scores_added` to the log, `scores_replacing_errors` (a good score where the log held an error)
    and `scores_already_in_log` (the log kept the row it held for that text and detector version:
    one another audit or import wrote, or one an earlier chunk of this same folder wrote, as when a
    text the folder scored again after an error got an error again), the last three counted by the
    write itself. Every shard is checked first (a
    bad one raises ShardError before the log is opened); then the whole import is one transaction,
    so the log holds all of the folder or, whatever stops it, none of it."""
    out = Path(out)
    meta = read_manifest(out)
    check_folder(out, meta)
    counts = {"items": 0, "skipped": 0, "chunks": 0, "scores_read": 0, "scores_added": 0,
              "scores_replacing_errors": 0, "scores_already_in_log": 0}
    log = StudyLog(db)
    try:
        run_id = find_run(log, meta["dataset"], meta["path"], meta["params"])
        if run_id is not None and _nothing_new(log, run_id, out, meta, counts):
            counts["run_id"] = run_id
            return counts  # importing a folder again adds nothing, not even a timestamp
        try:
            _import(log, out, meta, run_id, counts)
        except (sqlite3.Error, LogUnwritable) as err:  # a full disk, a log made read-only, an I/O error, a lock
            if (failed := unwritable(err, db)) is None:
                raise
            raise _stopped(log, meta, failed) from None
    finally:
        log.close()
    return counts


def _stopped(log: StudyLog, meta: dict[str, Any], failed: LogUnwritable) -> LogUnwritable:
    """An import the log stopped taking writes in, as the CLI reports it: what the log holds of the
    folder, read after the rollback (the import is one transaction: all of this attempt is undone)."""
    run_id = find_run(log, meta["dataset"], meta["path"], meta["params"])
    n = 0 if run_id is None else n_completed(log, run_id)
    held = f"{n} of the folder's items are in the log (run {run_id})" if n else "the log holds none of the folder's items"
    return failed.stopped(f"the import is one transaction, undone whole: {held}", ": it imports what the log does not hold")


def _import(log: StudyLog, out: Path, meta: dict[str, Any], run_id: int | None, counts: dict[str, Any]) -> None:
    """The folder's chunks the log's run does not hold, into the log in one transaction; `counts` filled."""
    study, page = meta["study"], meta["page"]
    with log.transaction():
        log.ensure_study(study["study_id"], study.get("title", ""), study)
        det_ids = {k: log.ensure_detector(d["name"], d["version"], d["toxicity_label"], d["threshold"], d["config"])
                   for k, d in meta["detectors"].items()}
        page_id = log.ensure_page(page["platform"], page["page_key"], page["url"], page["title"])
        # the run an earlier import of this folder made, finished or not, goes on
        if run_id is None:
            run_id = log.start_run(meta["dataset"], meta["path"], meta["params"])
        else:  # the folder's versions it does not record yet (a rerun into the folder read another)
            record_bytes_read(log, run_id, meta["params"])
        gold_set = run_label_set(log, run_id, page["platform"], meta.get("gold", LEGACY_GOLD))
        sink = LogSink(log, ItemSource(page["platform"], page_id, page["platform"], gold_set), run_id, det_ids)
        done = completed_keys(log, run_id)
        counts["skipped"] = 0
        for chunk in chunks(out, meta["detectors"]):
            keep = [i for i, it in enumerate(chunk.items) if it.key not in done]
            counts["skipped"] += len(chunk.items) - len(keep)
            if not keep:
                continue
            chunk.items, chunk.generated = [chunk.items[i] for i in keep], [chunk.generated[i] for i in keep]
            sink.record(chunk)  # registered and recorded in one transaction
            counts["items"] += len(keep)
            counts["chunks"] += 1
        written = sink.scores_written
        counts.update(scores_read=written.given, scores_added=written.added,
                      scores_replacing_errors=written.replaced, scores_already_in_log=written.kept)
        log.set_run_progress(run_id, n_completed(log, run_id))
        log.finish_run(run_id, "finished")
    counts["run_id"] = run_id


def check_folder(out: Path, meta: dict[str, Any]) -> None:
    """Every chunk of the folder checked against the shard schema (not kept: a folder may be larger
    than memory), and each comment_key in one items row of the whole folder: a key twice would be
    one comment counted as two items."""
    seen: dict[str, tuple[int, int]] = {}  # comment_key -> (chunk, row) of its first items row
    for n, kinds in sorted(shards(out).items()):
        if "items" not in kinds:
            continue
        chunk = read_chunk(out, n, meta["detectors"])
        for row, item in enumerate(chunk.items):
            first = seen.setdefault(item.key, (n, row))
            if first != (n, row):
                raise ShardError(
                    f"{_shard(out, 'items', n)}: column comment_key, row {row}: {item.key!r} is also the key of "
                    f"{_shard(out, 'items', first[0]).name} row {first[1]}; an audit writes each comment once "
                    "(a dataset refuses a repeated id)")


def _nothing_new(log: StudyLog, run_id: int, out: Path, meta: dict[str, Any], counts: dict[str, Any]) -> bool:
    """Whether the log's run is finished and holds every item of the folder (counted as skipped)."""
    if log.conn.execute("SELECT status FROM audit_runs WHERE run_id = ?", (run_id,)).fetchone()[0] != "finished":
        return False
    done = completed_keys(log, run_id)
    for chunk in chunks(out, meta["detectors"]):
        if any(it.key not in done for it in chunk.items):
            return False
        counts["skipped"] += len(chunk.items)
    return True
