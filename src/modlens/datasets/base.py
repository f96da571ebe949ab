"""What a dataset reader yields: comments with their labels and any human-made variants.

Every reader turns one file layout into `DatasetItem`s. `key` identifies the item across files:
the dataset's own id where the file has a stable id column, else `DIGEST:row-N`, the row number
behind the file's content hash (`file_digest`). Comments are keyed (platform, key) and the files
of one data set share its platform (the four released SASS files are all `dataset:sass`), so a bare
row number would make row 0 of a second file the first file's comment; with the hash, two files never
share a comment and the same file audited again (even copied elsewhere) finds the same comments.
What a data set is called: the catalog's name for the catalog's bytes (`catalog_name`), else the
file's content hash (`content_name`); never its file name.
`labels` includes `toxic` ("1"/"0") when the dataset says whether the text is toxic, by the
definition `Dataset.gold` states as text: it is stored as a gold label set (source, definition),
and the metrics, robustness and SASS sections of the report compare detectors against it.

Rows are read lazily (`iter_rows`): CSV/TSV and JSONL line by line, Parquet in record batches,
so a reader that needs one row at a time never holds the file in memory. Readers of small layouts
that cross-reference rows (NoisyHate, HateCheck, SASS's per-rater z-scores) read it whole.
"""
from __future__ import annotations

import codecs
import csv
import hashlib
import json
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Generator, Iterable, Iterator

from modlens.datasets import longfields
from modlens.errors import ErrorKind, ModlensError
from modlens.fileversion import per_version
from modlens.fileversion import stamp as _stamp  # the key of `_hashed` and `_text_format`
from modlens.normalize.base import Normalized
from modlens.paths import hash_file, hash_stream
from modlens.rows import Variant
from modlens.studylog import csvcells

JSONL_SUFFIXES = (".jsonl", ".ndjson", ".json")
TSV_SUFFIXES = (".tsv", ".tab")
PARQUET_SUFFIXES = (".parquet", ".pq")
PARQUET_BATCH = 4096  # rows per record batch: bounded memory whatever the file's row groups
DIGEST_CHARS = 16     # 64 bits of sha256: enough to tell a study's files apart
NO_GOLD = "none"      # `Dataset.gold` of a file without a gold label
CONTENT_PREFIX = "file-"  # a data set named by its file's content hash (`content_name`)


class DatasetError(ModlensError, ValueError):
    """The file does not have the layout its reader expects; the message says what is missing,
    `fix` (when there is one) what to do about it."""


def file_digest(path: Path | str | None = None, *, stream: Any = None) -> str:
    """The first `DIGEST_CHARS` hex digits of the sha256 of a file's bytes, read in blocks (memory
    does not grow with the file), once per version of the file (`_file_hash`: a reader, the registry
    and a folder's listing all ask). `stream`: an open binary stream instead (a remote file)."""
    if stream is None:
        return _file_hash(Path(path or ""))[:DIGEST_CHARS]
    return hash_stream(hashlib.sha256(), stream, block=1 << 16).hexdigest()[:DIGEST_CHARS]  # small blocks: bounded memory


def content_name(digest: str) -> str:
    """The name of a data set modlens did not identify: `file-DIGEST`, its file's content hash
    (`file_digest`). Different bytes are different data sets whatever the files are called, and the
    same bytes under any name or folder are one: comments are logged, keyed and reported per name."""
    return f"{CONTENT_PREFIX}{digest}"


def folder_name(files: Iterable[tuple[str, str, str]]) -> str:
    """The name of a folder of data files, from (relative path, data set name, content hash) of each
    file in name order: the data set every file is (the four released SASS files are `sass`), else the
    folder's content hash, `file-DIGEST` over its files' paths and hashes. Never the folder's own name:
    two different `shards/` folders are two data sets, the same files in another folder one."""
    files = list(files)
    names = {name for _, name, _ in files}
    if len(names) == 1 and not named_by_content(next(iter(names))):
        return names.pop()
    return content_name(folder_digest((rel, digest) for rel, _, digest in files))


def folder_digest(files: Iterable[tuple[str, str]]) -> str:
    """The digest of the bytes a folder's audit reads: of its files' (relative path, content hash) in
    name order, the one its `file-DIGEST` name is made of (`folder_name`)."""
    listing = "".join(f"{rel}\t{digest}\n" for rel, digest in files)
    return hashlib.sha256(listing.encode()).hexdigest()[:DIGEST_CHARS]


def named_by_content(name: str) -> bool:
    """Whether `name` is a `content_name`: editing such a file makes it another data set."""
    return name.startswith(CONTENT_PREFIX)


def catalog_name(name: str, path: Path, digest: str | None = None) -> tuple[str, str | None]:
    """(name, note) of a file a layout's reader took as catalog data set `name`: `name` when the
    file's bytes are the catalog's (one of its pinned SHA-256, or of its upstream git blob ids); else the
    file's content hash, `file-DIGEST`, with a note saying why, also when the catalog pins no hash of
    the data set (no file is taken for it unseen). A file in Davidson's columns is not Davidson's data
    for that: under its name its rows would be pooled with Davidson's in the report, cited as Davidson
    et al., and its index would key them as Davidson's own tweets."""
    if catalog_files(name, path):
        return name, None
    named = content_name(digest or _file_hash(path)[:DIGEST_CHARS])
    if not any(_pins(name)):
        return named, (f"named {named} by its content: read in {name}'s layout, but the catalog pins no SHA-256 of the "
                       f"{name} data set yet, so no file is taken for it (neither pooled with it nor cited as it)")
    return named, (f"named {named} by its content: read in {name}'s layout, but its bytes are not the {name} data "
                   "set's (the catalog's SHA-256 or git blob id), so it is neither pooled with it nor cited as it")


def catalog_files(name: str, path: Path) -> list[str]:
    """The files of catalog data set `name` (as the catalog names them, e.g. `hate/test_text.txt`)
    whose pin (SHA-256, or upstream git blob id) the bytes at `path` have: [] for any other file, and
    without reading it when the catalog pins none."""
    sha_pins, blob_pins = _pins(name)
    found = []
    if sha_pins:
        full = _file_hash(path)
        found = [file for file, pin in sha_pins if pin == full]
    if blob_pins and not found:  # a file pinned by its upstream git blob id only (HateXplain's)
        blob = _file_hash(path, git_blob=True)
        found = [file for file, pin in blob_pins if pin == blob]
    return found


def _pins(name: str) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    """(file, SHA-256) and (file, git blob id) pins of catalog data set `name`."""
    from modlens.datasets.catalog import CATALOG

    entry = CATALOG.get(name)
    return (entry.pinned_files(), entry.blob_pinned_files()) if entry is not None else ([], [])


def _file_hash(path: Path, *, git_blob: bool = False) -> str:
    """The file's SHA-256, or its git blob id (`fetch.git_blob_of`), read once per version of the
    file (`_hashed`)."""
    from modlens.datasets.fetch import git_blob_of

    return _hashed(str(path), _stamp(path), git_blob_of if git_blob else _sha256)


def _sha256(path: Path) -> str:
    """`fetch.sha256_of` in small blocks: a reader's hashing stays within the readers' memory bound."""
    return hash_file(hashlib.sha256(), path, block=1 << 16).hexdigest()


@per_version(maxsize=16)
def _hashed(path: str, _stamp: tuple[int, ...], hasher: Callable[[Path], str]) -> str:
    """`hasher(path)` (a SHA-256, a git blob id) once per file version: every load of the shipped file asks."""
    return hasher(Path(path))


def row_key(digest: str, n: int) -> str:
    """The key of row `n` (0-based) of the file whose content hash is `digest`."""
    return f"{digest}:row-{n}"


@dataclass
class DatasetItem:
    key: str
    text: str
    labels: dict[str, Any] = field(default_factory=dict)
    variants: list[Variant] = field(default_factory=list)
    # (the file's text, the reader step's output) when a step the reader applies as it reads
    # (`Dataset.text_steps`: html_unescape) changed the text; `text` is then that output, and the
    # audit records the change as a normalization of the file's text
    read_as: tuple[str, Normalized] | None = None


class Dataset:
    """A dataset file as items. `iter_items()` streams them (what audits use); `items` is the
    whole list, for small files and tests. `source` is a list, or a function that starts a fresh
    pass over the file each time it is called."""

    def __init__(self, name: str, path: Path, source: Iterable[DatasetItem] | Callable[[], Iterator[DatasetItem]],
                 meta: dict[str, Any] | None = None, *, fmt: str = "", notes: list[str] | None = None,
                 size: int | None = None, recorded_scores: dict[str, list[list[str]]] | None = None,
                 gold: str = NO_GOLD, source_id: str | None = None, text_steps: list[str] | None = None):
        # platform becomes f"dataset:{name}": the name the reader gives a data set it identified
        # (by layout, shorthand), else the file's content hash (`content_name`), never its file name
        self.name = name
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
        # the digest of the bytes read (`file_digest`), also when an id column keys the items
        # (`registry.load` sets it then): an audit run records which bytes its rows came from
        self.digest = source_id
        # the steps the reader applies to every text as it reads (`html_unescape` for tweets)
        self.text_steps = list(text_steps or [])
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


class DatasetNotFound(DatasetError):
    """The file (or shorthand) does not exist: `modlens` exits with the not-found code."""

    kind = ErrorKind.NOT_FOUND


def _check_file(path: Path) -> None:
    if not path.is_file():
        raise DatasetNotFound(f"{path}: file not found",
                              fix="check the path (or name a shorthand: noisyhate, hatecheck, davidson, sass)")


# --- reading text files: encoding, delimiter, quotes ---------------------------------------------
SNIFF_BYTES = 1 << 16          # what encoding, binary and delimiter detection look at
DELIMITERS = (",", ";", "\t", "|")
BOMS = ((codecs.BOM_UTF32_LE, "utf-32"), (codecs.BOM_UTF32_BE, "utf-32"), (codecs.BOM_UTF8, "utf-8-sig"),
        (codecs.BOM_UTF16_LE, "utf-16"), (codecs.BOM_UTF16_BE, "utf-16"))  # UTF-32 LE starts like UTF-16 LE
ENCODING_FIX = ("--encoding cp1252 (Excel on Windows), --encoding latin-1, or the encoding the file was saved in; "
                "or save it as \"CSV UTF-8\"")
PARQUET_FIX = "check the file is complete, or give it the suffix of its real format"
# what a binary file that is not text is, from its first bytes
MAGIC = ((b"PAR1", "a Parquet file", "name it .parquet"),
         (b"PK\x03\x04", "a ZIP archive (an Excel .xlsx?)", "save it from the spreadsheet as CSV UTF-8"),
         (b"\x1f\x8b", "a gzip-compressed file", "decompress it (gunzip)"),
         (b"\xd0\xcf\x11\xe0", "an old Excel .xls file", "save it from the spreadsheet as CSV UTF-8"))


@dataclass(frozen=True)
class TextFormat:
    """How a CSV/TSV/JSONL file is read: its encoding and (CSV/TSV) delimiter, with notes saying
    what was detected when it is not the plain default (UTF-8, the suffix's delimiter)."""
    encoding: str
    delimiter: str
    notes: tuple[str, ...] = ()


def _line_of(data: bytes, offset: int) -> int:
    return data.count(b"\n", 0, offset) + 1


def _encoding(path: Path, head: bytes, declared: str | None) -> tuple[str, str | None]:
    """(encoding, note): a byte-order mark, else UTF-8 when the start of the file is UTF-8 with
    some non-ASCII text in it, else the declared encoding, else UTF-8 (ASCII is both)."""
    for bom, name in BOMS:
        if head.startswith(bom):
            return name, f"encoding {name.replace('-sig', '')} (byte-order mark)"
    if declared:
        try:
            codecs.lookup(declared)
        except LookupError:
            raise DatasetError(f"{path}: --encoding {declared!r} is not an encoding Python knows",
                               fix="--encoding utf-8, cp1252 or latin-1") from None
    for magic, what, fix in MAGIC:
        if head.startswith(magic):
            raise DatasetError(f"{path}: {what}, not a CSV/TSV/JSONL text file", fix=fix)
    if b"\x00" in head[:8192]:
        raise DatasetError(f"{path}: a binary file (it holds NUL bytes), not CSV/TSV/JSONL text",
                           fix="give a CSV, TSV or JSONL text file, or a Parquet file named .parquet")
    try:
        codecs.getincrementaldecoder("utf-8")().decode(head, final=len(head) < SNIFF_BYTES)
        utf8_error = None
    except UnicodeDecodeError as err:
        utf8_error = err
    if utf8_error is None and (not declared or not head.isascii()):
        return "utf-8", None
    if declared:
        return declared, f"encoding {declared} (--encoding)"
    assert utf8_error is not None
    raise DatasetError(f"{path}: line {_line_of(head, utf8_error.start)}: not UTF-8 text (byte "
                       f"0x{head[utf8_error.start]:02x})", fix=ENCODING_FIX)


def _outside_quotes(line: str, ch: str) -> int:
    return sum(part.count(ch) for part in line.split('"')[::2])


def _sniff_delimiter(path: Path, header: str) -> tuple[str, str | None]:
    """The delimiter the header line uses most (outside quotes): `;` for European Excel's CSVs."""
    default = "\t" if path.suffix.lower() in TSV_SUFFIXES else ","
    counts = {d: _outside_quotes(header, d) for d in DELIMITERS}
    best = max(DELIMITERS, key=lambda d: (counts[d], d == default))
    if counts[best] == 0 or counts[best] == counts[default]:
        return default, None
    shown = "tab" if best == "\t" else repr(best)
    return best, f"delimiter {shown} (the header line has {counts[best]}, and {counts[default]} {default!r})"


@per_version(maxsize=64)
def _text_format(path: str, _stamp: tuple[int, ...], declared: str | None) -> TextFormat:
    p = Path(path)
    with open(p, "rb") as fh:
        head = fh.read(SNIFF_BYTES)
    encoding, note = _encoding(p, head, declared)
    notes = [note] if note else []
    if is_jsonl(p):
        return TextFormat(encoding, ",", tuple(notes))
    text = head.decode(encoding, errors="replace")
    delimiter, why = _sniff_delimiter(p, text.lstrip("\ufeff").splitlines()[0] if text.strip() else "")
    return TextFormat(encoding, delimiter, tuple(notes + ([why] if why else [])))


def text_format(path: Path, encoding: str | None = None) -> TextFormat:
    """The encoding and delimiter of a text data file (cached per file version); `encoding`: the
    declared `--encoding`, used when the file has no byte-order mark and does not read as UTF-8."""
    _check_file(path)
    return _text_format(str(path), _stamp(path), encoding)


def _decode_error(path: Path, err: UnicodeDecodeError, encoding: str) -> DatasetError:
    """The error naming the line of the first byte `encoding` cannot read: the text layer decodes
    ahead of the line it hands out, so the file is scanned again (on this error path only)."""
    decoder, line = codecs.getincrementaldecoder(encoding)(), 1
    byte = err.object[err.start]
    with open(path, "rb") as fh:
        while block := fh.read(1 << 16):
            try:
                decoder.decode(block)
            except UnicodeDecodeError as found:
                bad = max(0, found.start - (len(found.object) - len(block)))  # held-back bytes come first
                line, byte = line + block.count(b"\n", 0, bad), block[bad] if bad < len(block) else byte
                break
            line += block.count(b"\n")
    return DatasetError(f"{path}: line {line}: not {encoding} text (byte 0x{byte:02x})", fix=ENCODING_FIX)


def _open_text(path: Path, fmt: TextFormat) -> Any:
    # a text column can hold more than csv's default 128 KiB field limit (long forum posts)
    csv.field_size_limit(min(sys.maxsize, 2**31 - 1))
    return open(path, encoding=fmt.encoding, newline="")


def _csv_rows(path: Path, fmt: TextFormat) -> Generator[list[str], None, None]:
    """The CSV/TSV records, strict about quotes: an unterminated quote would otherwise swallow the
    rest of the file into one field, silently. Errors name the line the bad record starts on."""
    with _open_text(path, fmt) as fh:
        # a field of megabytes: csv's own buffer would hold 4 to 8 bytes per character of it (longfields.py)
        reader: Any = (longfields.Reader(fh, fmt.delimiter) if longfields.has_long_line(path)
                       else csv.reader(fh, delimiter=fmt.delimiter, strict=True))
        while True:
            start = reader.line_num + 1
            try:
                row = next(reader)
            except StopIteration:
                return
            except UnicodeDecodeError as err:
                raise _decode_error(path, err, fmt.encoding) from None
            except csv.Error as err:
                what = ("a quote opened here is never closed" if "end of data" in str(err)
                        else f"malformed quoting ({err})")
                raise DatasetError(f"{path}: line {start}: {what}",
                                   fix='close the quote, or double a quote inside a quoted field ("" for ")') from None
            yield row


def is_parquet(path: Path) -> bool:
    return path.suffix.lower() in PARQUET_SUFFIXES


def is_jsonl(path: Path) -> bool:
    return path.suffix.lower() in JSONL_SUFFIXES


def iter_rows(path: Path, columns: list[str] | None = None,
              encoding: str | None = None) -> Generator[dict[str, Any], None, None]:
    """Rows of a CSV, TSV, JSONL or Parquet file as dicts, one at a time. `columns` limits what
    Parquet reads from disk (the other formats read whole lines anyway); `encoding`: the declared
    `--encoding` (see `text_format`)."""
    _check_file(path)
    if is_parquet(path):
        yield from _iter_parquet(path, columns)
        return
    fmt = text_format(path, encoding)
    if is_jsonl(path):
        with _open_text(path, fmt) as fh:
            n = 0
            while True:
                try:
                    line = fh.readline()
                except UnicodeDecodeError as err:
                    raise _decode_error(path, err, fmt.encoding) from None
                if not line:
                    return
                n += 1
                if not line.strip():
                    continue
                try:
                    obj = json.loads(line)
                except json.JSONDecodeError as err:
                    raise DatasetError(f"{path}:{n}: not valid JSON ({err.msg}); expected one object per line") from None
                if not isinstance(obj, dict):
                    raise DatasetError(f"{path}:{n}: expected a JSON object per line")
                yield obj
    records = _csv_rows(path, fmt)
    header = [h.lstrip("\ufeff") for h in next(records, [])]
    if csvcells.is_own_header(header):  # modlens's own export: its `'` before a formula character comes off
        records = (csvcells.restore_row(values) for values in records)
    for values in records:
        if values:  # csv.DictReader skips blank lines too
            yield dict(zip(header, values)) if len(values) == len(header) else _ragged(header, values)


def _ragged(header: list[str], values: list[str]) -> dict[str, Any]:
    """As csv.DictReader: missing fields None, extra ones under the key None."""
    row: dict[Any, Any] = dict(zip(header, values))
    if len(values) > len(header):
        row[None] = values[len(header):]
    else:
        row.update(dict.fromkeys(header[len(values):]))
    return row


def _iter_parquet(path: Path, columns: list[str] | None) -> Iterator[dict[str, Any]]:
    import pyarrow.parquet as pq

    try:
        pf = pq.ParquetFile(path)
    except Exception as err:  # pyarrow raises its own error types for a damaged or foreign file
        raise DatasetError(f"{path}: not a readable Parquet file ({err})", fix=PARQUET_FIX) from None
    with pf:
        for batch in pf.iter_batches(batch_size=PARQUET_BATCH, columns=columns):
            yield from batch.to_pylist()


def read_columns(path: Path, encoding: str | None = None) -> list[str]:
    """The file's column names, read from its header (CSV/TSV), schema (Parquet) or first
    object (JSONL) without reading the rest."""
    _check_file(path)
    if is_parquet(path):
        import pyarrow.parquet as pq

        try:
            return list(pq.read_schema(path).names)
        except Exception as err:
            raise DatasetError(f"{path}: not a readable Parquet file ({err})", fix=PARQUET_FIX) from None
    rows = iter_rows(path, encoding=encoding) if is_jsonl(path) else _csv_rows(path, text_format(path, encoding))
    try:
        first = next(rows, None)
    finally:
        rows.close()  # closes the file now, not when the generator is collected
    if first is None:
        return []
    return list(first) if isinstance(first, dict) else [str(c).lstrip("\ufeff") for c in first]


def check_rows(path: Path, encoding: str | None = None) -> None:
    """One rule for files with nothing to audit: an empty file and a header without rows are the
    same error (reading the first row only)."""
    if is_parquet(path):
        empty = parquet_rows(path) == 0
    else:
        rows = iter_rows(path, encoding=encoding)
        try:
            empty = next(rows, None) is None
        finally:
            rows.close()
    if empty:
        raise DatasetError(f"{path}: no rows to read (the file is empty or has a header only)",
                           fix="give a file with a header line and at least one row")


def parquet_rows(path: Path) -> int | None:
    """Row count from Parquet metadata (free); None for the line-based formats."""
    if not is_parquet(path):
        return None
    import pyarrow.parquet as pq

    return int(pq.read_metadata(path).num_rows)


def count_rows(path: Path, encoding: str | None = None) -> int | None:
    """The number of rows, for a progress bar's total and ETA: Parquet's metadata; for CSV/TSV the
    records as the reader parses them (a quoted field may hold line breaks: Davidson's 24,783
    tweets are 26,953 lines), blank lines skipped as the reader skips them; for JSONL its non-blank
    lines. A file the parser stops on is counted by its lines. None when it cannot be read."""
    if is_parquet(path):
        return parquet_rows(path)
    if not is_jsonl(path):
        try:
            records = _csv_rows(path, text_format(path, encoding))
            try:
                return max(0, sum(1 for values in records if values) - 1)  # less the header
            finally:
                records.close()
        except (DatasetError, UnicodeError, OSError):
            pass  # the audit reports the bad record when it gets there; the total is an estimate
    try:
        with open(path, "rb") as fh:  # JSONL (one object a line), or a CSV the parser stops on
            lines = sum(1 for line in fh if line.strip())
    except OSError:
        return None
    return max(0, lines - (0 if is_jsonl(path) else 1))


def read_rows(path: Path, encoding: str | None = None) -> list[dict[str, Any]]:
    """Every row at once: for the small layouts that cross-reference rows."""
    return list(iter_rows(path, encoding=encoding))


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


# why a text is not scored: a blank comment has nothing to judge (a detector still answers one:
# minilm-toxicity gave "" 0.456), so its score would enter every metric as noise. Perspective
# answers such a request with COMMENT_EMPTY.
EMPTY, WHITESPACE = "empty", "whitespace only"
# what a whitespace-only text is made of: every character str.isspace() knows (none lies above
# U+3000), and those that show nothing without being spaces (zero-width space, joiners, word
# joiner, BOM); SQL's trim(text, BLANK_CHARS) finds the same texts in a log
BLANK_CHARS = "".join(c for c in map(chr, range(0x3001)) if c.isspace()) + "\u200b\u200c\u200d\u2060\ufeff"


def blank_reason(text: str) -> str | None:
    """Why `text` is not scored (`EMPTY`, `WHITESPACE`: spaces, tabs, line breaks, no-break and
    zero-width spaces only), or None when it has something to score."""
    if not text:
        return EMPTY
    return WHITESPACE if not text.strip(BLANK_CHARS) else None
