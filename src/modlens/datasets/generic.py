"""Any CSV/TSV/JSONL/Parquet file with a text column, streamed row by row.

Stored as labels: the gold label (`--label`, else a benchmark's own layout, `gold.LAYOUTS`:
HatEval's HS, OLID's subtask_a, Civil Comments' toxicity >= 0.5, Jigsaw's toxic, the Dynabench
hate set's label; else the first recognized column of `gold.GOLD_COLUMNS`) as `toxic` "1"/"0" plus
its raw value, the layout's other label columns, recognized group and id columns
(`gold.GROUP_COLUMNS`, `gold.ID_COLUMNS`, under their lower-case names) and `label_cols`
(`["*"]`: every column). Nothing else: see `gold` for why. When no gold label is found, a note
names the columns that look like labels and the `--label` flag that reads each.

Items are keyed by the `--id-col` column's value, else `DIGEST:row-N` (`base.row_key`: the row
number behind the file's content hash, `Dataset.source_id`). The data set is named by the file's
content hash, never by its file name (`plain_name`): two different `data.csv` are two data sets, and
one file copied under another name is the same one. So an edited file is another data set, unless the
user declares its name with an id column (`declared_name`: `--name NAME --id-col COLUMN`): then every
version of the file is that data set, and its audit resumes."""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator, Sequence

from modlens.datasets.base import (CONTENT_PREFIX, NO_GOLD, Dataset, DatasetError, DatasetItem, content_name, file_digest,
                                   is_parquet, iter_rows, parquet_rows, read_columns, require_columns, row_key)
from modlens.datasets.catalog import CATALOG
from modlens.datasets.gold import (GOLD_COLUMNS, GROUP_COLUMNS, ID_COLUMNS, TEXT_COLUMNS, GoldSpec, find_column,
                                   find_layout, gold_label, label_candidates, recognized)


def _text_column(path: Path, columns: list[str], text_col: str | None) -> str:
    if text_col:
        require_columns(path, columns, [text_col])
        return text_col
    found = find_column(columns, TEXT_COLUMNS)
    if found is None:
        raise DatasetError(f"{path}: missing column(s) text; has: {', '.join(columns)}",
                           fix="--text-col COLUMN names the column holding the comments")
    return found


def _gold(path: Path, columns: list[str], label: GoldSpec | None,
          exclude: set[str]) -> tuple[GoldSpec | None, str, dict[str, str]]:
    """The gold spec, a note saying where it came from, and the columns a benchmark's layout keeps
    as labels (`gold.LAYOUTS`: HatEval's TR and AG beside HS...)."""
    if label is not None:
        if label.column:
            require_columns(path, columns, [label.column])
        return (label if label.column else None), f"gold label: {label.describe()}", {}
    candidates = [c for c in columns if c not in exclude]
    layout = find_layout(candidates)
    if layout is not None:
        bench, spec, keep = layout
        kept = f"; {', '.join(keep.values())} stored as labels" if keep else ""
        return spec, (f"{bench.name} layout: gold label recognized: {spec.describe()}{kept}; --label COLUMN chooses "
                      "another, --label none stores none"), keep
    found = find_column(candidates, GOLD_COLUMNS)
    if found is None:
        return None, (f"no gold label (no column named {', '.join(GOLD_COLUMNS[:4])}, …): "
                      "metrics against gold labels need --label COLUMN[=TOXIC_VALUES]"), {}
    spec = GoldSpec(found)
    return spec, f"gold label recognized: {spec.describe()}; --label COLUMN chooses another, --label none stores none", {}


@dataclass
class RowMap:
    """How a file's rows become items: the text column, the gold label and the label columns the
    reader found in its column names. `read` streams a local file through it; the Ray Data reader
    (`modlens.scale.ray_read`) maps the rows Ray reads with the same object, so both give the same items."""
    where: str
    text: str
    id_col: str | None
    gold: GoldSpec | None
    keep: dict[str, str]   # label name -> column
    needed: list[str]      # the columns the items use
    meta: dict[str, Any]
    notes: list[str]

    @property
    def definition(self) -> str:
        """The gold label's definition (`Dataset.gold`)."""
        return self.gold.definition() if self.gold is not None else NO_GOLD

    def item(self, n: int, row: dict[str, Any], seen: set[str] | None = None, *, digest: str | None) -> DatasetItem:
        """Row `n` (0-based, within its file) as an item. `seen`: the ids met so far in this file;
        `digest`: the file's content hash (`base.file_digest`; None only with an id column)."""
        value = row.get(self.text)
        if not isinstance(value, str):
            raise DatasetError(f"{self.where}: row {n + 1}: {self.text!r} is not a string ({value!r})")
        if self.id_col is None and not digest:
            raise ValueError("a row without an id column is keyed by its file's content hash: pass digest")
        key = row_key(digest or "", n)
        if self.id_col:
            key = str(row[self.id_col])
            if seen is not None:
                if key in seen:
                    raise DatasetError(f"{self.where}: row {n + 1}: duplicate id {key!r} in column {self.id_col!r}")
                seen.add(key)
        labels: dict[str, Any] = {}
        if self.gold is not None:
            toxic = gold_label(self.gold, row, f"{self.where}: row {n + 1}")
            if toxic is not None:
                labels["toxic"] = toxic
        for label_name, col in self.keep.items():
            v = row.get(col)
            if v is not None and v != "" and not isinstance(v, (dict, list)):
                labels[label_name] = v
        return DatasetItem(key=key, text=value, labels=labels)


def row_map(path: Path, columns: list[str], *, text_col: str | None = None, id_col: str | None = None,
            label_cols: Sequence[str] | None = None, label: GoldSpec | None = None, where: str | None = None) -> RowMap:
    """The mapping for a file with these `columns` (`where` names it in messages; default the path)."""
    if not columns:
        raise DatasetError(f"{where or path}: no rows")
    text = _text_column(path, columns, text_col)
    extra = list(label_cols or [])
    require_columns(path, columns, ([id_col] if id_col else []) + [c for c in extra if c != "*"])
    gold, gold_note, layout_keep = _gold(path, columns, label, {text, id_col or text})
    keep: dict[str, str] = {}  # label name -> column
    if gold is not None and gold.column.lower() != "toxic":
        keep[gold.column] = gold.column
    keep.update(layout_keep)
    for names in (GROUP_COLUMNS, ID_COLUMNS):
        keep.update(recognized([c for c in columns if c not in (text, id_col)], names))
    others = [c for c in columns if c not in (text, id_col)] if "*" in extra else [c for c in extra if c != "*"]
    keep.update({c: c for c in others if c not in keep.values() and (gold is None or c != gold.column)})
    stored = (["toxic"] if gold is not None else []) + list(keep)
    notes = [gold_note, f"labels stored: {', '.join(stored) or 'none'}"
             + ("" if "*" in extra else "; other columns are not stored (--label-cols COLUMN ... adds them)")]
    needed = list(dict.fromkeys([text, *([id_col] if id_col else []), *([gold.column] if gold else []), *keep.values()]))
    return RowMap(where or str(path), text, id_col, gold, keep, needed,
                  {"text_col": text, "gold": gold.describe() if gold else None, "labels": stored}, notes)


def read(path: Path, *, text_col: str | None = None, id_col: str | None = None,
         label_cols: Sequence[str] | None = None, label: GoldSpec | None = None, name: str | None = None,
         encoding: str | None = None, **_: object) -> Dataset:
    columns = read_columns(path, encoding)
    mapping = row_map(path, columns, text_col=text_col, id_col=id_col, label_cols=label_cols, label=label)
    content = file_digest(path)  # the data set's identity, with or without an id column
    digest = None if mapping.id_col else content
    if mapping.gold is None and label is None:  # say which columns could be the gold label, and the flag for each
        rows = iter_rows(path, None, encoding)
        try:
            found = label_candidates([c for c in columns if c not in (mapping.text, mapping.id_col)], rows)
        finally:
            rows.close()
        if found:
            mapping.notes.insert(1, "columns that look like labels: " + "; ".join(found))

    def items() -> Iterator[DatasetItem]:
        seen: set[str] = set()  # only with an id column: row numbers cannot repeat
        for n, row in enumerate(iter_rows(path, mapping.needed if is_parquet(path) else None, encoding)):
            yield mapping.item(n, row, seen, digest=digest)

    if name is not None:  # the user's word that every version of the file is this data set (`declared_name`)
        name = declared_name(name, mapping.id_col)
        mapping.notes.append(declared_note(name, mapping.id_col or ""))
    else:  # the note says why a file got the name modlens gives
        name = plain_name(content)
        mapping.notes.append(name_note(name, path.stem))
    return Dataset(name, path, items, mapping.meta, notes=mapping.notes, size=parquet_rows(path),
                   gold=mapping.definition, source_id=digest)


def known_name(name: str) -> bool:
    """Whether `name` is a data set's or a layout's that modlens identifies itself (a catalog entry, a
    shorthand, a reader's format, TweetEval's `tweeteval-TASK`), in any case."""
    from modlens.datasets.registry import READERS, SHORTHANDS  # the registry loads this module lazily

    lower = name.strip().lower()
    return lower in {n.lower() for n in (*CATALOG, *SHORTHANDS, *READERS)} or lower.startswith("tweeteval")


def name_note(name: str, stem: str) -> str:
    """The note saying why a plain file of stem `stem` is the data set `name` (`plain_name`)."""
    if known_name(stem):
        return (f"named {name} by its content: {stem} names a data set modlens identifies by its layout or "
                "shorthand, and this file is not read as it")
    return f"named {name} by its content (the SHA-256 of its bytes), not by its file name"


def plain_name(digest: str) -> str:
    """The name (platform `dataset:NAME`) of a file a plain reader read, from its content hash
    (`base.file_digest`, however the file was read: a local path, or a stream from `pyarrow.fs` in the Ray
    reader): `file-DIGEST` (`base.content_name`). Never its stem: two different `data.csv` under one
    name would pool their rows in one data set's figures (and with an id column, key the second
    file's rows as the first's comments), and a file called davidson.csv is not Davidson's data for
    its name. The same bytes under any name get the same name, so the audit resumes."""
    return content_name(digest)


# a declared name (`--name`): it becomes the platform `dataset:NAME` and is printed in reports and file
# names, so the characters of a platform (docs/PROTOCOL.md), starting with a letter or digit
NAME_CHARS = re.compile(r"[a-z0-9][a-z0-9._-]*")
NAME_MAX = 64
NAME_FIX = "a name of lower-case letters, digits, '.', '_' and '-' that modlens does not give itself, e.g. forum-2024"


def declared_name(name: str, id_col: str | None) -> str:
    """`name` as the data set a plain file is (`modlens audit FILE --name NAME --id-col COLUMN`), checked:
    not empty, the characters of a platform (`NAME_CHARS`), not a name modlens gives a data set it
    identifies itself (`known_name`: a catalog entry, a shorthand, a reader) nor a content name
    (`file-…`, `base.content_name`), and only with an id column. Without one the rows are keyed by the
    file's content hash (`base.row_key`), so an edited file's rows would be new comments under the
    name, pooled with the old version's in its figures, and nothing would resume. Raises DatasetError."""
    if not name.strip():
        raise DatasetError("--name: empty", fix=NAME_FIX)
    if len(name) > NAME_MAX:
        raise DatasetError(f"--name {name[:20]!r}…: at most {NAME_MAX} characters", fix=NAME_FIX)
    if name.lower().startswith(CONTENT_PREFIX):
        raise DatasetError(f"--name {name!r}: {CONTENT_PREFIX}… names a data set by its content hash (what a file "
                           "without --name is called)", fix=NAME_FIX)
    if known_name(name):
        raise DatasetError(f"--name {name!r}: names a data set modlens identifies itself (by its layout, shorthand "
                           "or bytes); under it these rows would be pooled with that data set's", fix=NAME_FIX)
    if not NAME_CHARS.fullmatch(name):
        raise DatasetError(f"--name {name!r}: lower-case letters, digits, '.', '_' and '-' only, starting with a "
                           "letter or digit", fix=NAME_FIX)
    if not id_col:
        raise DatasetError("--name needs --id-col: without an id column an edited file's rows are keyed by its "
                           "content hash, so they could never resume under the name",
                           fix="add --id-col COLUMN (a column of unique ids that stay with their rows), or drop "
                               "--name: the file is then named by its content")
    return name


def declared_note(name: str, id_col: str) -> str:
    """The note saying a file is the data set `name` because the user declared it (`declared_name`)."""
    return (f"named {name} as declared (--name), its rows keyed by {id_col}: an edited file is the same data set, "
            "its audit resumes, and a key the log holds keeps the first text seen under it")
