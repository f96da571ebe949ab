"""Files strangers send, run against a copy of a real study log: every hostile `--out-parquet` shard
folder through `modlens import`, every hostile bundle through `modlens merge` (each must be refused
in one line, the log left as it was).

    python bench/bench_hostile_files.py

Prints, per case and in total: refused in one line (exit 2, `modlens <cmd>: …` plus at most a `fix:`
line, naming the file), tracebacks, and target logs changed (compared byte for byte after a WAL
checkpoint, and by `iterdump()`). A sound modlens prints 0 tracebacks and 0 changed logs. The builders
are shared with the tests (tests/test_import_hostile_shards.py, tests/test_bundle_hostile.py).
"""
from __future__ import annotations

import argparse
import contextlib
import hashlib
import io
import json
import os
import shutil
import sqlite3
import sys
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from modlens.studylog.codec import canonical_json

ITEMS, CHUNK = 60, 20  # three chunks of 20 items
DETECTOR = "lexical"
MANIFEST = "manifest.json"


# --- shard folders ------------------------------------------------------------------------------

@dataclass
class _Answer:  # what a detector answered, as a chunk carries it (chunks.chunk.Score)
    labels: dict[str, float] | None
    toxicity: float | None
    latency_ms: float
    error: str | None = None


def shard_manifest(dataset: str = "hostile") -> dict[str, Any]:
    """A manifest as `modlens audit --out-parquet` writes it (chunks.parquet.manifest)."""
    return {"modlens_parquet": 1, "dataset": dataset, "path": f"/data/{dataset}.csv",
            "page": {"platform": f"dataset:{dataset}", "page_key": f"{dataset}.csv", "url": None, "title": dataset},
            "params": {"detectors": [DETECTOR], "normalize": True, "seed": 0},
            "study": {"study_id": "default", "title": "Default study"}, "gold": "toxic as the file says",
            "detectors": {DETECTOR: {"name": DETECTOR, "version": "1.0", "toxicity_label": "toxic",
                                     "threshold": 0.5, "config": {"words": ["idiot"]}}}}


def clean_shards(out: Path, items: int = ITEMS, chunk: int = CHUNK) -> Path:
    """A clean shard folder written by the real Parquet sink: `items` comments in chunks of `chunk`,
    each with a gold label, a dataset variant, a generated variant, a score, a normalization."""
    from modlens.chunks.chunk import Chunk, StepError
    from modlens.chunks.parquet import ParquetSink
    from modlens.datasets.base import DatasetItem
    from modlens.normalize.base import Edit, Normalized
    from modlens.rows import Variant

    sink = ParquetSink(out, shard_manifest())
    for start in range(0, items, chunk):
        keys = range(start, min(start + chunk, items))
        texts = [f"comment {i}: you idi0t" if i % 3 == 0 else f"comment {i}: nice post" for i in keys]
        batch = [DatasetItem(f"hostile.csv:row-{i}", t, {"toxic": float(i % 3 == 0), "group": "a"},
                             [Variant(t.upper(), "dataset", {}, 0, [(0, 7)], t)]) for i, t in zip(keys, texts)]
        generated = [[Variant(t.replace("o", "0"), "leet", {"rate": 0.5}, 7, [(1, 2)], t)] for t in texts]
        normalized = [(t, Normalized(t.replace("idi0t", "idiot"), [Edit(13, 18, "idi0t", "idiot", "leet", 0.9)]
                                     if "idi0t" in t else [], "default", "n1")) for t in texts]
        scores = [(t, DETECTOR, _Answer({"toxic": 0.9 if "idi0t" in t else 0.1}, 0.9 if "idi0t" in t else 0.1, 1.5))
                  for t in texts]
        errors = [StepError(texts[0], "variants", "leet", "v1", "no position to change")]
        sink.record(Chunk(batch, [None] * len(batch), generated, normalized, scores, errors))
    return out


def shard(folder: Path, kind: str, n: int = 0) -> Path:
    return folder / f"{kind}-{n:06d}.parquet"


def rewrite_column(folder: Path, kind: str, column: str, change: Callable[[list[Any]], Any], n: int = 0) -> None:
    """Shard `kind`-`n` written again with `column` replaced by `change(its values)` (a list, or a pyarrow
    array for a type of one's choosing); None drops the column."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = shard(folder, kind, n)
    table = pq.read_table(path, use_threads=False)
    at = table.column_names.index(column)
    new = change(table.column(column).to_pylist())
    table = table.remove_column(at) if new is None else table.set_column(at, column, pa.array(new))
    pq.write_table(table, path)


def edit_manifest(folder: Path, change: Callable[[dict[str, Any]], Any]) -> None:
    path = folder / MANIFEST
    meta = json.loads(path.read_text())
    change(meta)
    path.write_text(json.dumps(meta))


def link_outside(folder: Path, name: str) -> None:
    """`folder/name` moved out of the folder, a symbolic link to it left in its place."""
    outside = folder.parent / f"{folder.name}-outside-{name}"
    shutil.move(folder / name, outside)
    (folder / name).symlink_to(outside)


DEEP = "[" * 100_000 + "]" * 100_000


@dataclass(frozen=True)
class ShardCase:
    """A hostile folder made from a clean one by `build`; the refusal names `file` and `column`."""
    name: str
    build: Callable[[Path], None]
    file: str
    column: str


def _set(meta: dict[str, Any], path: str, value: Any) -> None:
    *parents, last = path.split(".")
    for p in parents:
        meta = meta[p]
    meta[last] = value


SHARD_CASES = [
    ShardCase("comment_key as an integer", lambda f: rewrite_column(f, "items", "comment_key", lambda v: list(range(len(v)))),
              "items-000000.parquet", "comment_key"),
    ShardCase("toxicity as a string", lambda f: rewrite_column(f, "scores", "toxicity", lambda v: [str(x) for x in v], n=1),
              "scores-000001.parquet", "toxicity"),
    ShardCase("labels_json not JSON", lambda f: rewrite_column(f, "items", "labels_json", lambda v: ["{not json"] * len(v), n=2),
              "items-000002.parquet", "labels_json"),
    ShardCase("null text", lambda f: rewrite_column(f, "items", "text", lambda v: v[:-1] + [None], n=1),
              "items-000001.parquet", "text"),
    ShardCase("a missing column", lambda f: rewrite_column(f, "scores", "error", lambda v: None, n=2),
              "scores-000002.parquet", "error"),
    ShardCase("a garbage shard", lambda f: shard(f, "normalizations", 1).write_bytes(b"PAR1 garbage, not Parquet PAR1"),
              "normalizations-000001.parquet", "Parquet"),
    ShardCase("detectors as a list in the manifest", lambda f: edit_manifest(f, lambda m: _set(m, "detectors", [DETECTOR])),
              MANIFEST, "detectors"),
    ShardCase("page platform as a number in the manifest", lambda f: edit_manifest(f, lambda m: _set(m, "page.platform", 5)),
              MANIFEST, "page.platform"),
    ShardCase("threshold as a string in the manifest",
              lambda f: edit_manifest(f, lambda m: _set(m, f"detectors.{DETECTOR}.threshold", "high")),
              MANIFEST, "threshold"),
    ShardCase("a manifest nested 100k deep", lambda f: (f / MANIFEST).write_text('{"modlens_parquet": 1, "x": ' + DEEP + "}"),
              MANIFEST, "nested deeper"),
    ShardCase("an unknown detector", lambda f: rewrite_column(f, "scores", "detector", lambda v: ["nope"] * len(v), n=1),
              "scores-000001.parquet", "detector"),
    ShardCase("variants_json nested 100k deep", lambda f: rewrite_column(f, "items", "variants_json", lambda v: [DEEP] * len(v), n=2),
              "items-000002.parquet", "variants_json"),
    ShardCase("edits_json of the wrong shape",
              lambda f: rewrite_column(f, "normalizations", "edits_json", lambda v: ['[{"start": "one"}]'] * len(v)),
              "normalizations-000000.parquet", "edits_json"),
    ShardCase("a lone surrogate in labels_json",
              lambda f: rewrite_column(f, "items", "labels_json", lambda v: ['{"toxic": "\\ud800"}'] * len(v)),
              "items-000000.parquet", "labels_json"),
    # scores: finite, within [0, 1] (what detectors produce; NaN would be stored as null, Inf as Inf)
    *(ShardCase(f"toxicity {what}", lambda f, x=value: rewrite_column(f, "scores", "toxicity", lambda v: v[:-1] + [x], n=1),
                "scores-000001.parquet", "toxicity")
      for what, value in (("NaN", float("nan")), ("Inf", float("inf")), ("negative", -5.0), ("above 1", 1.5))),
    ShardCase("a label score NaN in labels_json",
              lambda f: rewrite_column(f, "scores", "labels_json", lambda v: ['{"toxic": NaN}'] * len(v), n=2),
              "scores-000002.parquet", "labels_json"),
    ShardCase("a label score of 7 in labels_json",
              lambda f: rewrite_column(f, "scores", "labels_json", lambda v: ['{"toxic": 7}'] * len(v)),
              "scores-000000.parquet", "labels_json"),
    # one comment per key: 20 rows with one key would collapse into one comment counted 20 times
    ShardCase("one comment_key for a whole shard",
              lambda f: rewrite_column(f, "items", "comment_key", lambda v: [v[0]] * len(v), n=1),
              "items-000001.parquet", "comment_key"),
    ShardCase("a comment_key in two shards",
              lambda f: rewrite_column(f, "items", "comment_key", lambda v: ["hostile.csv:row-0", *v[1:]], n=2),
              "items-000002.parquet", "items-000000.parquet"),
    ShardCase("a 5 MB text", lambda f: rewrite_column(f, "items", "text", lambda v: ["x" * 5_000_000, *v[1:]], n=2),
              "items-000002.parquet", "text"),
    # "a regular file": a link is not followed, wherever it points
    ShardCase("a shard that is a symbolic link to a file outside the folder",
              lambda f: link_outside(f, shard(f, "items", 1).name), "items-000001.parquet", "symbolic link"),
    ShardCase("a manifest that is a symbolic link", lambda f: link_outside(f, MANIFEST), MANIFEST, "symbolic link"),
]


# --- bundles ---------------------------------------------------------------------------------------

def members(path: Path) -> dict[str, bytes]:
    with zipfile.ZipFile(path) as zf:
        return {name: zf.read(name) for name in zf.namelist()}


def parts(path: Path) -> tuple[dict[str, Any], dict[str, bytes]]:
    """A bundle's manifest and its other members."""
    found = members(path)
    manifest = json.loads(found.pop(MANIFEST))
    return manifest, found


def forge(dst: Path, manifest: dict[str, Any], tables: dict[str, bytes], *, manifest_text: bytes | None = None,
          seal: bool = True) -> Path:
    """A bundle written by hand: the tables' and the bundle's checksums recomputed (as anyone
    holding the file can), so only the reader's own limits stand between it and the merge.
    Members not in the manifest are written as they are."""
    manifest = json.loads(json.dumps(manifest))
    for name, data in tables.items():
        table = name.removeprefix("tables/").removesuffix(".parquet")
        if isinstance(manifest.get("tables"), dict) and table in manifest["tables"]:
            manifest["tables"][table]["sha256"] = hashlib.sha256(data).hexdigest()
    if seal:
        body = {k: v for k, v in manifest.items() if k != "bundle_sha256"}
        manifest["bundle_sha256"] = hashlib.sha256(canonical_json(body).encode()).hexdigest()
    with zipfile.ZipFile(dst, "w") as zf:
        for name, data in tables.items():
            zf.writestr(name, data, compress_type=zipfile.ZIP_STORED)
        zf.writestr(MANIFEST, manifest_text if manifest_text is not None else json.dumps(manifest),
                    compress_type=zipfile.ZIP_DEFLATED)
    return dst


UNDECLARED = {"a path out of the folder": "../../escaped.txt", "an absolute name": "/tmp/modlens-absolute.txt",
              "an extra table": "tables/extra.parquet"}


def with_member(good: Path, dst: Path, name: str, data: bytes = b"not declared in the manifest") -> Path:
    """The participant's bundle, signature and all, with one member the manifest does not declare."""
    manifest, found = parts(good)
    return forge(dst, manifest, found | {name: data})


def bench_bundle(work: Path) -> Path:
    """A signed participant bundle of study `bench`: a consented session's comments, scores and
    ratings written through the study log's own calls, exported by the real code."""
    from modlens.exchange.bundle import write_bundle_file
    from modlens.studylog.store import StudyLog

    db, out = work / "participant.sqlite", work / "participant.bundle"
    with StudyLog(db) as log, log.transaction():
        log.ensure_study("bench", "bench", {"study_id": "bench", "author_salt": "bench-salt-0123456789abcdef"})
        det = log.ensure_detector("minilm-toxicity", "h1", "toxic", 0.5, {})
        log.ensure_rater("bench", "rater-0", "2025-05-01T10:00:00Z")
        log.start_session("s-0", "bench", "rater-0", "modlens-extension", "0.1", 1)
        page = log.ensure_page("youtube", "vid-1", "https://www.youtube.com/watch?v=vid-1", "Video")
        for i in range(10):
            cid = log.add_comment("youtube", f"c{i}", page, f"comment c{i}", author_hash=f"h{i}")
            log.add_sighting(cid, "s-0")
            log.add_score(f"comment c{i}", det, {"toxic": i / 10}, i / 10, 3.0, None)
            log.add_rating("bench", "rater-0", f"r-{i}", "s-0", cid, {"toxicity": "toxic"}, None, None, False, 900)
    write_bundle_file(db, out)
    return out


def other_pack(work: Path, study_id: str = "another-study") -> Path:
    from modlens.study import folder, pack

    root = work / f"{study_id}-folder"
    folder.init_folder(root, study_id)
    out = work / f"{study_id}.modlens"
    pack.write(folder.load_folder(root), out)
    return out


# --- running them -----------------------------------------------------------------------------------

def log_state(db: Path) -> tuple[str, list[str]]:
    """(SHA-256 of the file after a WAL checkpoint, its dump): equal states, equal log."""
    if not db.exists():
        return "absent", []
    con = sqlite3.connect(db)
    try:
        con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        dump = list(con.iterdump())
    finally:
        con.close()
    return hashlib.sha256(db.read_bytes()).hexdigest(), dump


def run_cli(argv: list[str]) -> tuple[int, str]:
    """`modlens ARGV` in this process: (exit code, stderr); an escaping exception is a traceback."""
    import traceback

    from modlens.cli import main

    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        try:
            code = main(argv)
        except BaseException:  # noqa: B036 - what the user would see: a traceback
            traceback.print_exc()
            code = 1
    return code, err.getvalue()


def one_line(stderr: str, command: str, names: str) -> bool:
    """Refused as the README says: `modlens <command>: …` naming `names`, plus at most a `fix:` line."""
    lines = [line for line in stderr.splitlines() if line.strip()]
    return (0 < len(lines) <= 2 and lines[0].startswith(f"modlens {command}: ") and names in lines[0]
            and all(line.strip().startswith("fix:") for line in lines[1:]))


@dataclass
class Outcome:
    case: str
    code: int
    refused_in_one_line: bool
    traceback: bool
    log_changed: bool


def shard_outcomes(work: Path) -> list[Outcome]:
    clean = clean_shards(work / "clean")
    real = work / "real.sqlite"
    code, err = run_cli(["import", str(clean), "--db", str(real)])
    if code != 0:
        raise SystemExit(f"the clean import failed: {err}")
    out = []
    for n, case in enumerate(SHARD_CASES):
        folder, db = work / f"shards-{n}", work / f"target-{n}.sqlite"
        shutil.copytree(clean, folder)
        shutil.copy(real, db)
        case.build(folder)
        before = log_state(db)
        code, err = run_cli(["import", str(folder), "--db", str(db)])
        out.append(Outcome(f"import: {case.name}", code, code == 2 and one_line(err, "import", case.file),
                           "Traceback" in err, log_state(db) != before))
    return out


def bundle_outcomes(work: Path) -> list[Outcome]:
    good = bench_bundle(work)
    real = work / "merged.sqlite"
    code, err = run_cli(["merge", "--out", str(real), str(good)])
    if code != 0:
        raise SystemExit(f"the clean merge failed: {err}")
    cases: list[tuple[str, list[str], Path]] = [
        ("the same bundle again, with another study's --study", ["--study", str(other_pack(work))], good)]
    for n, (what, name) in enumerate(UNDECLARED.items()):
        cases.append((f"an undeclared member: {what}", [], with_member(good, work / f"undeclared-{n}.bundle", name)))
    out = []
    for n, (what, extra, bundle) in enumerate(cases):
        db = work / f"merged-{n}.sqlite"
        shutil.copy(real, db)
        before = log_state(db)
        code, err = run_cli(["merge", "--out", str(db), *extra, str(bundle)])
        refused = [line for line in err.splitlines() if line.startswith("modlens merge: refused")]
        out.append(Outcome(f"merge: {what}", code, code == 2 and len(refused) == 1 and str(bundle) in refused[0],
                           "Traceback" in err, log_state(db) != before))
    return out


def run(work: Path) -> list[Outcome]:
    """Every case against copies of real logs made under `work` (MODLENS_HOME set there)."""
    os.environ["MODLENS_HOME"] = str(work / "home")
    return shard_outcomes(work) + bundle_outcomes(work)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keep", metavar="DIR", help="build the files in DIR and keep them")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(args.keep or tmp)
        work.mkdir(parents=True, exist_ok=True)
        outcomes = run(work)
    for o in outcomes:
        print(f"{o.case:<62} exit {o.code}  one line: {'yes' if o.refused_in_one_line else 'NO'}  "
              f"traceback: {'YES' if o.traceback else 'no'}  log changed: {'YES' if o.log_changed else 'no'}")
    print(f"{len(outcomes)} hostile files: {sum(o.refused_in_one_line for o in outcomes)} refused in one line, "
          f"{sum(o.traceback for o in outcomes)} tracebacks, {sum(o.log_changed for o in outcomes)} target logs changed")
    return 0 if all(o.refused_in_one_line and not o.traceback and not o.log_changed for o in outcomes) else 1


if __name__ == "__main__":
    sys.exit(main())
