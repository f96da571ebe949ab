"""What a dataset reader yields: comments with their labels and any human-made variants.

Every reader turns one file layout into `DatasetItem`s. `key` identifies the item across files:
the dataset's own id where the file has a stable id column, else `DIGEST:row-N`, the row number
behind the file's content hash (`file_digest`). Comments are keyed (platform, key) and every file
of a layout shares its platform (`dataset:sass`), so a bare row number would make row 0 of a
second file the first file's comment; with the hash, two files never share a comment and the same
file audited again (even copied elsewhere) finds the same comments.
`labels` includes `toxic` ("1"/"0") when the dataset says whether the text is toxic, by the
definition `Dataset.gold` states as text: it is stored as a gold label set (source, definition),
and the metrics, robustness and SASS sections of the report compare detectors against it.

Rows are read lazily (`iter_rows`): CSV/TSV and JSONL line by line, Parquet in record batches,
so a reader that needs one row at a time never holds the file in memory. Readers of small layouts
that cross-reference rows (NoisyHate, HateCheck, SASS's per-rater z-scores) read it whole.
"""
from __future__ import annotations

import csv
import hashlib
import json
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Generator, Iterable, Iterator

from modlens.rows import Variant

JSONL_SUFFIXES = (".jsonl", ".ndjson", ".json")
TSV_SUFFIXES = (".tsv", ".tab")
PARQUET_SUFFIXES = (".parquet", ".pq")
PARQUET_BATCH = 4096  # rows per record batch: bounded memory whatever the file's row groups
DIGEST_CHARS = 16     # 64 bits of sha256: enough to tell a study's files apart
NO_GOLD = "none"      # `Dataset.gold` of a file without a gold label


class DatasetError(ValueError):
    """The file does not have the layout its reader expects; the message says what is missing."""


def file_digest(path: Path | str | None = None, *, stream: Any = None) -> str:
    """The first `DIGEST_CHARS` hex digits of the sha256 of a file's bytes, read in blocks (memory
    does not grow with the file). `stream`: an open binary stream instead (a remote file)."""
    h = hashlib.sha256()
    if stream is None:
        with open(Path(path or ""), "rb") as fh:
            return file_digest(stream=fh)
    while block := stream.read(1 << 16):  # small blocks: reading stays within the readers' memory bound
        h.update(block)
    return h.hexdigest()[:DIGEST_CHARS]


def row_key(digest: str, n: int) -> str:
    """The key of row `n` (0-based) of the file whose content hash is `digest`."""
    return f"{digest}:row-{n}"


@dataclass
class DatasetItem:
    key: str
    text: str
    labels: dict[str, Any] = field(default_factory=dict)
    variants: list[Variant] = field(default_factory=list)


class Dataset:
    """A dataset file as items. `iter_items()` streams them (what audits use); `items` is the
    whole list, for small files and tests. `source` is a list, or a function that starts a fresh
    pass over the file each time it is called."""

    def __init__(self, name: str, path: Path, source: Iterable[DatasetItem] | Callable[[], Iterator[DatasetItem]],
                 meta: dict[str, Any] | None = None, *, fmt: str = "", notes: list[str] | None = None,
                 size: int | None = None, recorded_scores: dict[str, list[list[str]]] | None = None,
                 gold: str = NO_GOLD, source_id: str | None = None):
        self.name = name          # platform becomes f"dataset:{name}"
        self.path = path          # the file read (one page per file)
        self.source = source
        self.meta = meta or {}
        self.format = fmt or name  # the reader's format name (set by registry.load)
        self.notes = notes or []   # what the reader detected or assumed, printed by `modlens audit`
        self.size = size if size is not None else (len(source) if isinstance(source, list) else None)
        # detector name -> [[text column, score column], ...] of scores the file itself records
        # (Perspective in NoisyHate and SASS); `--detectors recorded` audits with them
        self.recorded_scores = recorded_scores or {}
        # what `toxic` means in this file, as text ("toxicity >= 0.5", "none"): with the source it
        # names the gold label set the items' `toxic` labels are stored under
        self.gold = gold
        # the file's content hash when its items are keyed by it (`row_key`), else None (an id
        # column keys them): an audit run is of one version of the file
        self.source_id = source_id
        self._items: list[DatasetItem] | None = source if isinstance(source, list) else None

    def iter_items(self) -> Iterator[DatasetItem]:
        if self._items is not None:
            return iter(self._items)
        return self.source() if callable(self.source) else iter(self.source)

    @property
    def items(self) -> list[DatasetItem]:
        if self._items is None:
            self._items = list(self.iter_items())
        return self._items


def _check_file(path: Path) -> None:
    if not path.is_file():
        raise DatasetError(f"{path}: file not found")


def _delimiter(path: Path) -> str:
    return "\t" if path.suffix.lower() in TSV_SUFFIXES else ","


def _open_csv(path: Path) -> Any:
    # a text column can hold more than csv's default 128 KiB field limit (long forum posts)
    csv.field_size_limit(min(sys.maxsize, 2**31 - 1))
    return open(path, encoding="utf-8", newline="")


def is_parquet(path: Path) -> bool:
    return path.suffix.lower() in PARQUET_SUFFIXES


def is_jsonl(path: Path) -> bool:
    return path.suffix.lower() in JSONL_SUFFIXES


def iter_rows(path: Path, columns: list[str] | None = None) -> Generator[dict[str, Any], None, None]:
    """Rows of a CSV, TSV, JSONL or Parquet file as dicts, one at a time. `columns` limits what
    Parquet reads from disk (the other formats read whole lines anyway)."""
    _check_file(path)
    if is_parquet(path):
        yield from _iter_parquet(path, columns)
    elif is_jsonl(path):
        with open(path, encoding="utf-8") as fh:
            for n, line in enumerate(fh, 1):
                if not line.strip():
                    continue
                try:
                    obj = json.loads(line)
                except json.JSONDecodeError as err:
                    raise DatasetError(f"{path}:{n}: not valid JSON ({err.msg}); expected one object per line") from None
                if not isinstance(obj, dict):
                    raise DatasetError(f"{path}:{n}: expected a JSON object per line")
                yield obj
    else:
        with _open_csv(path) as fh:
            yield from csv.DictReader(fh, delimiter=_delimiter(path))


def _iter_parquet(path: Path, columns: list[str] | None) -> Iterator[dict[str, Any]]:
    import pyarrow.parquet as pq

    try:
        pf = pq.ParquetFile(path)
    except Exception as err:  # pyarrow raises its own error types for a damaged or foreign file
        raise DatasetError(f"{path}: not a readable Parquet file ({err})") from None
    with pf:
        for batch in pf.iter_batches(batch_size=PARQUET_BATCH, columns=columns):
            yield from batch.to_pylist()


def read_columns(path: Path) -> list[str]:
    """The file's column names, read from its header (CSV/TSV), schema (Parquet) or first
    object (JSONL) without reading the rest."""
    _check_file(path)
    if is_parquet(path):
        import pyarrow.parquet as pq

        try:
            return list(pq.read_schema(path).names)
        except Exception as err:
            raise DatasetError(f"{path}: not a readable Parquet file ({err})") from None
    if is_jsonl(path):
        rows = iter_rows(path)
        try:
            first = next(rows, None)
        finally:
            rows.close()  # closes the file now, not when the generator is collected
        return list(first) if first else []
    with _open_csv(path) as fh:
        return next(csv.reader(fh, delimiter=_delimiter(path)), [])


def parquet_rows(path: Path) -> int | None:
    """Row count from Parquet metadata (free); None for the line-based formats."""
    if not is_parquet(path):
        return None
    import pyarrow.parquet as pq

    return int(pq.read_metadata(path).num_rows)


def read_rows(path: Path) -> list[dict[str, Any]]:
    """Every row at once: for the small layouts that cross-reference rows."""
    return list(iter_rows(path))


def require_columns(path: Path, rows: list[dict[str, Any]] | list[str], columns: list[str]) -> None:
    """`rows` (a list of row dicts) or the column names themselves must hold every one of `columns`."""
    if not rows:
        raise DatasetError(f"{path}: no rows")
    have = list(rows[0]) if isinstance(rows[0], dict) else [str(c) for c in rows]
    missing = [c for c in columns if c not in have]
    if missing:
        raise DatasetError(f"{path}: missing column(s) {', '.join(missing)}; has: {', '.join(map(str, have))}")


def word_span(text: str, index: int) -> tuple[int, int] | None:
    """Character span of the `index`-th whitespace token of `text`."""
    pos = 0
    for i, token in enumerate(text.split()):
        start = text.index(token, pos)
        pos = start + len(token)
        if i == index:
            return (start, pos)
    return None


def iter_nonempty(items: Iterable[DatasetItem]) -> Iterator[DatasetItem]:
    return (it for it in items if it.text.strip())
