"""Datasets as the audits read them: a file or shorthand (`datasets.registry.load`), or a folder
of CSV / TSV / JSONL / Parquet files (a sharded export, a Parquet dataset written by Spark or
Ray) read file by file in name order with the same readers, so built-in layouts still apply. A folder
is named by its content (`base.folder_name`), never by the folder's name."""
from __future__ import annotations

from pathlib import Path
from typing import Any, Iterator

from modlens.datasets import registry
from modlens.datasets.base import (Dataset, DatasetError, DatasetItem, file_digest, folder_digest, folder_name,
                                   named_by_content)

SUFFIXES = (".csv", ".tsv", ".jsonl", ".ndjson", ".parquet", ".pq")


def folder_files(path: Path) -> list[Path]:
    """The data files under a folder (recursively, hidden and `_`-prefixed files such as
    `_SUCCESS` skipped), in name order."""
    return sorted(p for p in path.rglob("*") if p.is_file() and p.suffix.lower() in SUFFIXES
                  and not any(part.startswith((".", "_")) for part in p.relative_to(path).parts))


def _is_known_folder(path: Path) -> bool:
    try:
        registry.detect(path)
        return True
    except ValueError:
        return False


def location(data: Dataset) -> tuple[str, str]:
    """(path, url) of the dataset as the audit run and its page record it: the resolved local path,
    or the URI it was read from (`s3://…`)."""
    uri = getattr(data, "uri", None)
    if isinstance(uri, str):
        return uri, uri
    return str(data.path.resolve()), data.path.resolve().as_uri()


def copied(dataset: str, listing: Any, fmt: str | None, **options: Any) -> Dataset:
    """A URI of a built-in layout (`ray_read.Blocked`): its files copied to a temporary folder, then
    read by the local readers; the run and the page still name the URI."""
    from modlens.scale import ray_read

    target = ray_read.copy_local(dataset, listing)
    data = load_dataset(str(target), fmt, **options)
    folder = target.parent if listing.single else target
    data.notes.insert(0, f"copied {dataset} to {folder} (a built-in layout: read by its own reader)")
    data.uri = dataset  # type: ignore[attr-defined]
    return data


def file_note(part: Dataset, note: str) -> str | None:
    """A reader's note on one file of a folder: a file named by its content is logged under the folder's
    name, not its own, so the note naming it goes (None), but for the reason after it (a file in a
    catalog data set's layout that is not its bytes). A declared name (--name) is the folder's too."""
    prefix = f"named {part.name} by its content"
    if not named_by_content(part.name) or not note.startswith(prefix):
        return note
    why = note[len(prefix):]
    return why[2:] if why.startswith(": ") else None


def folder_notes(rels: list[str], parts: list[Dataset], named: str) -> list[str]:
    """What the readers said of a folder's files, as the folder's notes: a note every file has once, one
    only some have with those files named (a gold label or label column one file has and another has
    not); each file's note naming it by its content is replaced by the one naming the folder."""
    said = [[n for n in (file_note(p, note) for note in p.notes[1:]) if n is not None]  # [0]: "read FILE as …"
            for p in parts]
    notes = [n for n in said[0] if all(n in s for s in said)]
    for note in dict.fromkeys(n for s in said for n in s if n not in notes):
        holders = [rel for rel, s in zip(rels, said) if note in s]
        more = f" and {len(holders) - 3} more" if len(holders) > 3 else ""
        notes.append(f"{', '.join(holders[:3])}{more}: {note}")
    if named_by_content(named):
        notes.append(f"named {named} by its content (its files' paths and SHA-256), not by the folder's name")
    return notes


def load_dataset(dataset: str, fmt: str | None = None, engine: str = "local", **options: Any) -> Dataset:
    """`registry.load`, plus folders of data files: one dataset whose items are keyed
    `RELATIVE/FILE:KEY` (KEY as the file's reader keys it, e.g. `row-0`). With `engine="ray"`, a
    URI or a folder is read by Ray Data (`scale.ray_read`: the same items and keys). A `file://`
    URI is its local path for the local engine; other URIs need Ray."""
    from modlens.scale import ray_read

    folder = Path(dataset).expanduser()
    if engine == "ray" and (ray_read.is_uri(dataset) or (folder.is_dir() and not _is_known_folder(folder))):
        read = ray_read.load(dataset, fmt, **options)
        if isinstance(read, ray_read.Blocked):
            return copied(dataset, read.listing, fmt, **options)
        if read is not None:
            return read
    if ray_read.is_uri(dataset):
        local = ray_read.local_path(dataset)
        if local is None:
            raise DatasetError(f"{dataset}: a URI is read by Ray Data", fix="add --engine ray (pip install 'modlens[ray]')")
        dataset = str(local)
    path = Path(dataset).expanduser()
    if not path.is_dir() or _is_known_folder(path):
        return registry.load(dataset, fmt, **options)
    files = folder_files(path)
    if not files:
        raise ValueError(f"{path}: a folder with no CSV, TSV, JSONL or Parquet files")
    parts = [registry.load(str(f), fmt, **options) for f in files]
    sizes = [p.size for p in parts]

    def items() -> Iterator[DatasetItem]:
        for f, part in zip(files, parts):
            rel = f.relative_to(path).as_posix()
            for it in part.iter_items():
                yield DatasetItem(f"{rel}:{it.key}", it.text, it.labels, it.variants)

    first = parts[0]
    formats = sorted({p.format for p in parts})
    rels = [f.relative_to(path).as_posix() for f in files]
    # the files' content hashes, as each part's reader or the registry read them (`Dataset.digest`)
    digests = [p.digest or file_digest(f) for f, p in zip(files, parts)]
    named = folder_name((rel, p.name, d) for rel, p, d in zip(rels, parts, digests))
    notes = [f"read folder {path.name}: {len(files)} file(s) as {', '.join(formats)}", *folder_notes(rels, parts, named)]
    data = Dataset(named, path, items, first.meta, notes=notes,
                   size=sum(s for s in sizes if s is not None) if all(s is not None for s in sizes) else None,
                   gold=" | ".join(dict.fromkeys(p.gold for p in parts)))  # one definition unless the layouts differ
    data.digest = folder_digest(zip(rels, digests))  # the bytes read, keyed by ids or not: the run records it
    data.format = formats[0] if len(formats) == 1 else "mixed"
    return data
