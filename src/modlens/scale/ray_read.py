"""Datasets read by Ray Data (`--engine ray`): a URI (`s3://`, `gs://`, `abfs://`, `hdfs://`,
`file://`: any filesystem `pyarrow.fs.FileSystem.from_uri` knows) or a local folder, read with
`ray.data.read_parquet` / `read_csv` / `read_json` on the cluster and streamed to the driver in order.

The rows become items exactly as the local readers make them: the columns are detected from the
first file's header or schema by the generic reader's rules (`datasets.generic.row_map`: text
column, gold label, group and id columns, `--text-col`/`--label`/`--label-cols`/`--id-col`), and
every item is keyed `RELATIVE/FILE:DIGEST:row-N` (N counted within its file, DIGEST the file's
content hash, `datasets.base.file_digest`, read through `pyarrow.fs`; the id with `--id-col`) as
the folder reader (`scale.sources`) keys it. A single file is named by that content hash as the
local reader names it (`datasets.generic.plain_name`), never by its file name, and its run records
the hash as its source; a folder by its files' paths and hashes (`datasets.base.folder_name`), never
by the folder's name; a file or folder the user names (`--name NAME --id-col COLUMN`) by that name,
checked as the local reader checks it (`datasets.generic.declared_name`). The hashes are read before the rows. So a file or folder audited on either
engine is one data set, and its run resumes on the other. Ray reads the files in name order with `preserve_order`, and each row carries its file's path
(`include_paths`), so the per-file row index is the row's position among that file's rows: the same
keys on every run, and a rerun resumes.

Built-in layouts (NoisyHate, HateCheck, Davidson, SASS) are small files whose readers cross-reference
rows: a URI holding one is copied to a temporary folder through `pyarrow.fs` and read by its own
reader (a local folder of them keeps the file-by-file path). Credentials are `pyarrow.fs`'s: for S3
the usual AWS environment variables, `~/.aws` profiles or the instance role; for GCS the
application-default credentials."""
from __future__ import annotations

import csv
import io
import json
import logging
import os
import re
import tempfile
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any, Iterator

from modlens.datasets import registry
from modlens.datasets.base import Dataset, DatasetError, DatasetItem, file_digest, folder_digest, folder_name
from modlens.datasets.generic import RowMap, declared_name, declared_note, name_note, plain_name, row_map
from modlens.studylog import csvcells

URI = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")
KINDS = {".csv": "csv", ".tsv": "tsv", ".jsonl": "jsonl", ".ndjson": "jsonl", ".parquet": "parquet", ".pq": "parquet"}
BATCH = 4096         # rows per batch the driver takes from Ray
PATH_COLUMN = "path"  # the column `include_paths` adds


def is_uri(dataset: str) -> bool:
    return bool(URI.match(dataset))


def local_path(uri: str) -> Path | None:
    """The local path of a `file://` URI, else None."""
    if not uri.lower().startswith("file://"):
        return None
    from urllib.parse import unquote, urlparse

    return Path(unquote(urlparse(uri).path))


@dataclass
class Listing:
    """The data files of a URI or folder: `files` are paths as `fs` names them, in name order."""
    fs: Any
    root: str
    files: list[str]
    rel: dict[str, str]   # file -> its path relative to the root (the key prefix)
    single: bool          # the dataset is one file, not a folder

    def kind(self, file: str) -> str:
        return KINDS[PurePosixPath(file).suffix.lower()]


def _wanted(rel: str) -> bool:
    parts = PurePosixPath(rel).parts
    return PurePosixPath(rel).suffix.lower() in KINDS and not any(p.startswith((".", "_")) for p in parts)


def list_files(dataset: str) -> Listing:
    """The files under a URI (recursively; hidden and `_`-prefixed ones such as `_SUCCESS` skipped)
    or the one file it names."""
    import pyarrow.fs as pafs

    if is_uri(dataset):
        try:
            fs, root = pafs.FileSystem.from_uri(dataset)
        except (ValueError, OSError) as err:  # an unknown scheme, a filesystem pyarrow was built without
            raise DatasetError(f"{dataset}: cannot open ({err})") from None
    else:
        fs, root = pafs.LocalFileSystem(), str(Path(dataset).expanduser().resolve())
    root = root.rstrip("/") or "/"
    info = fs.get_file_info(root)
    if info.type == pafs.FileType.NotFound:
        raise DatasetError(f"{dataset}: not found")
    if info.type == pafs.FileType.File:
        name = PurePosixPath(root).name
        if PurePosixPath(name).suffix.lower() not in KINDS:
            raise DatasetError(f"{dataset}: not a CSV, TSV, JSONL or Parquet file")
        return Listing(fs, root, [root], {root: name}, True)
    found = fs.get_file_info(pafs.FileSelector(root, recursive=True))
    rel = {f.path: f.path[len(root):].lstrip("/") for f in found if f.type == pafs.FileType.File}
    files = sorted((p for p, r in rel.items() if _wanted(r)), key=lambda p: rel[p])
    if not files:
        raise DatasetError(f"{dataset}: a folder with no CSV, TSV, JSONL or Parquet files")
    return Listing(fs, root, files, {p: rel[p] for p in files}, False)


def columns_of(listing: Listing, file: str) -> list[str]:
    """A file's column names from its header (CSV/TSV), schema (Parquet) or first object (JSONL)."""
    kind = listing.kind(file)
    if kind == "parquet":
        import pyarrow.parquet as pq

        try:
            return list(pq.read_schema(file, filesystem=listing.fs).names)
        except Exception as err:  # pyarrow raises its own error types for a damaged or foreign file
            raise DatasetError(f"{file}: not a readable Parquet file ({err})") from None
    with listing.fs.open_input_stream(file) as raw:
        head = io.TextIOWrapper(raw, encoding="utf-8", newline="")
        if kind == "jsonl":
            for line in head:
                if line.strip():
                    obj = json.loads(line)
                    return list(obj) if isinstance(obj, dict) else []
            return []
        return next(csv.reader(head, delimiter="\t" if kind == "tsv" else ","), [])


def builtin_layout(columns: list[str]) -> str | None:
    """The built-in layout these columns identify (as `registry.detect` sees them), else None."""
    lower = {c.strip().lower() for c in columns}
    for fmt, needed in registry.SIGNATURES:
        if all(n in lower for n in needed):
            return fmt
    return "sass" if registry._sass_evidence(columns) else None


def _runs(listing: Listing) -> list[list[str]]:
    """The files in name order, cut into runs of one format (one Ray read each)."""
    runs: list[list[str]] = []
    for f in listing.files:
        if runs and listing.kind(runs[-1][0]) == listing.kind(f):
            runs[-1].append(f)
        else:
            runs.append([f])
    return runs


def _read(listing: Listing, files: list[str], mapping: RowMap, columns: list[str]) -> Any:
    """One Ray Data read of same-format files, in order, with each row's file path."""
    import ray.data

    kind = listing.kind(files[0])
    common: dict[str, Any] = {"filesystem": listing.fs, "include_paths": True, "partitioning": None}
    if kind == "parquet":
        with _footer_actors(len(files)):
            return ray.data.read_parquet(files, **common).select_columns([*mapping.needed, PATH_COLUMN])
    if kind == "jsonl":  # Arrow's JSON reader reads one object per line
        return ray.data.read_json(files, file_extensions=None, **common)
    import pyarrow as pa
    import pyarrow.csv as pacsv

    # every field a string, as Python's csv module gives it ("" stays "", "007" stays "007")
    convert = pacsv.ConvertOptions(column_types={c: pa.string() for c in columns}, strings_can_be_null=False,
                                   quoted_strings_can_be_null=False, include_columns=mapping.needed,
                                   include_missing_columns=True)
    parse = pacsv.ParseOptions(delimiter="\t" if kind == "tsv" else ",", newlines_in_values=True)
    return ray.data.read_csv(files, convert_options=convert, parse_options=parse, **common)


FOOTER_FILES_PER_ACTOR = 128  # Ray's footer reader reads this many files at once (its io_concurrency)


@contextmanager
def _footer_actors(n_files: int) -> Iterator[None]:
    """Ray Data 2.60 reads Parquet footers on a pool of new actors per read (32 by default, each a new
    worker process): tens of seconds on a small machine for a folder of a few files. One actor per
    FOOTER_FILES_PER_ACTOR files, up to Ray's default; a RAY_DATA_PARQUET_FOOTER_NUM_ACTORS the user set wins.
    Ray reads the variable when `read_parquet` builds the dataset, on this driver."""
    name = "RAY_DATA_PARQUET_FOOTER_NUM_ACTORS"
    if name in os.environ:
        yield
        return
    os.environ[name] = str(min(32, max(1, -(-n_files // FOOTER_FILES_PER_ACTOR))))
    try:
        yield
    finally:
        os.environ.pop(name, None)


def _stream(listing: Listing, mapping: RowMap, runs: list[tuple[list[str], list[str]]],
            known: dict[str, str]) -> Iterator[DatasetItem]:
    """The items, in file and row order; `known`: every listed file's content hash (rel -> digest),
    the keys' digest where there is no id column."""
    import ray.data

    ctx = ray.data.DataContext.get_current()
    logging.getLogger("ray.data").setLevel(logging.ERROR)
    ctx.execution_options.preserve_order = True  # file and row order: stable keys
    ctx.enable_progress_bars = False  # the audit's own bar counts items
    for files, columns in runs:
        ds = _read(listing, files, mapping, columns)
        # modlens's own CSV export: its `'` before a formula character comes off (as `iter_rows` does)
        own = listing.kind(files[0]) in ("csv", "tsv") and csvcells.is_own_header(columns)
        counts: dict[str, int] = {}
        seen: dict[str, set[str]] = {}
        digests = {rel: None if mapping.id_col else d for rel, d in known.items()}
        for batch in ds.iter_batches(batch_size=BATCH, batch_format="pyarrow"):
            for row in batch.to_pylist():
                file = row.pop(PATH_COLUMN)
                if own:
                    row = {k: csvcells.restore(v) for k, v in row.items()}
                rel = listing.rel.get(file) or listing.rel[_match(listing, file)]
                n = counts.get(rel, 0)
                counts[rel] = n + 1
                it = mapping.item(n, row, seen.setdefault(rel, set()), digest=digests[rel])
                yield DatasetItem(it.key if listing.single else f"{rel}:{it.key}", it.text, it.labels, it.variants)


def _hash(listing: Listing, file: str) -> str:
    """The content hash (`base.file_digest`) of a listed file, streamed through its filesystem."""
    with listing.fs.open_input_stream(file) as stream:
        return file_digest(stream=stream)


def _match(listing: Listing, file: str) -> str:
    """The listed file Ray's `path` names (Ray may drop or add a leading slash or a bucket prefix)."""
    for f in listing.files:
        if f.lstrip("/") == file.lstrip("/") or f.endswith("/" + file.lstrip("/")) or file.endswith("/" + f.lstrip("/")):
            listing.rel[file] = listing.rel[f]
            return f
    raise DatasetError(f"Ray Data returned a row of {file}, which is not one of the files listed")


@dataclass
class Blocked:
    """A URI Ray Data should not read (a built-in layout, or files with a `path` column): the caller
    copies it locally (`copy_local`) and reads it file by file (`scale.sources.copied`)."""
    listing: Listing


def load(dataset: str, fmt: str | None = None, *, name: str | None = None, **options: Any) -> Dataset | Blocked | None:
    """The dataset as Ray Data reads it, or None when it should be read file by file instead (a local
    folder of a built-in layout, or files with a `path` column, which `include_paths` would hide);
    `Blocked` for a URI of that kind (copied locally, then read by its own reader)."""
    listing = list_files(dataset)
    first = listing.files[0]
    columns = columns_of(listing, first)
    layout = builtin_layout(columns)
    blocked = fmt not in (None, "csv", "jsonl", "parquet") or layout is not None or PATH_COLUMN in columns
    if blocked:
        if not is_uri(dataset) or local_path(dataset) is not None:
            return None
        return Blocked(listing)
    where = f"{dataset.rstrip('/')}/{listing.rel[first]}" if not listing.single else dataset
    mapping = row_map(Path(first), columns, where=where, **{k: options.get(k) for k in
                                                           ("text_col", "id_col", "label_cols", "label")})
    runs = [(files, columns if files[0] == first else columns_of(listing, files[0])) for files in _runs(listing)]
    # the data set its content names, as the local readers name it: a file by its hash, a folder by its
    # files' paths and hashes (read here, before the rows; the keys reuse them)
    digests = {listing.rel[f]: _hash(listing, f) for f in listing.files}
    content = digests[listing.rel[first]] if listing.single else None
    if name is not None:  # declared (`--name`): checked and noted as the local reader does
        named = declared_name(name, mapping.id_col)
        mapping.notes.append(declared_note(named, mapping.id_col or ""))
    else:
        named = (plain_name(content) if content is not None else
                 folder_name((rel, plain_name(digest), digest) for rel, digest in digests.items()))
        if content is not None:
            mapping.notes.append(name_note(named, PurePosixPath(listing.root).stem))

    def items() -> Iterator[DatasetItem]:
        return _stream(listing, mapping, runs, digests)

    label = PurePosixPath(listing.root).name or listing.root
    kinds = sorted({listing.kind(f) for f in listing.files})
    notes = [f"read {label} with Ray Data: {len(listing.files)} file(s) as {', '.join(kinds)} "
             f"(columns from {listing.rel[first]})", *mapping.notes]
    here = local_path(dataset) if is_uri(dataset) else Path(dataset).expanduser()
    path = here if here is not None else Path(PurePosixPath(listing.root))
    data = Dataset(named, path, items, mapping.meta,
                   notes=notes, size=_size(listing) if here is not None else None, gold=mapping.definition,
                   source_id=None if mapping.id_col else content)
    # keyed by ids or not, the bytes read (a single file's, or a folder's files' paths and hashes), as the
    # local readers record them
    data.digest = content if content is not None else folder_digest(digests.items())
    data.format = "csv" if kinds == ["tsv"] else kinds[0] if len(kinds) == 1 else "mixed"
    if here is None:
        data.uri = dataset  # type: ignore[attr-defined]  # where the audit run and the page say it was read
    return data


def _size(listing: Listing) -> int | None:
    """The row count from local Parquet footers (free); None for other formats."""
    if any(listing.kind(f) != "parquet" for f in listing.files):
        return None
    import pyarrow.parquet as pq

    return sum(int(pq.read_metadata(f, filesystem=listing.fs).num_rows) for f in listing.files)


def copy_local(dataset: str, listing: Listing) -> Path:
    """The files of a URI copied to a temporary folder through `pyarrow.fs`; the path to read them from
    (the folder keeps the URI's last name; the data set's name comes from the bytes, which are the same)."""
    import pyarrow.fs as pafs

    tmp = Path(tempfile.mkdtemp(prefix="modlens-uri-")) / (PurePosixPath(listing.root).name or "dataset")
    local = pafs.LocalFileSystem()
    for f in listing.files:
        dest = tmp / (listing.rel[f] if not listing.single else PurePosixPath(f).name)
        dest.parent.mkdir(parents=True, exist_ok=True)
        pafs.copy_files(f, str(dest), source_filesystem=listing.fs, destination_filesystem=local)
    return tmp / PurePosixPath(listing.files[0]).name if listing.single else tmp
