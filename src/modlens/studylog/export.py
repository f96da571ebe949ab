"""Export the study log as tidy tables plus the data dictionary.

Reads through a read-only connection inside one read transaction, so the export is a
consistent snapshot across tables and never blocks (nor is blocked by) a running writer.
Each file is written under a temporary name and all are renamed only once the read is known to
be whole (a log read without locks is checked then: `LogConnection.check_unchanged`) and no final
name is a folder: an export refused or failed before then leaves the output folder as it was (the
folders it made removed). The renames that follow are not one step, so a crash or a failure among
them can leave new tables beside old ones: the earlier export's manifest.json is removed before
the first rename and the new one renamed last, so a folder holds a manifest.json only once every
file it names is this export's.
"""
from __future__ import annotations

import contextlib
import json
import os
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Sequence

from modlens.errors import ModlensError
from modlens.names import close_matches
from modlens.studylog import exporters
from modlens.studylog.dictionary import render_markdown
from modlens.studylog.schema import SCHEMA_VERSION
from modlens.studylog.tables import EXPORT_TABLES, EXPORTS, WIDE_NAME, ExportTable
from modlens.studylog.codec import now_iso
from modlens.studylog.store import StudyLog

DICTIONARY_FILE = "DATA.md"
MANIFEST_FILE = "manifest.json"

_CASTS = {"int": int, "float": float, "str": str, "bool": bool}


def _typed(table: ExportTable, rows: Iterable[tuple[Any, ...]]) -> Iterator[tuple[Any, ...]]:
    casts = [_CASTS[c.type] for c in table.columns]
    for row in rows:
        yield tuple(None if v is None else cast(v) for cast, v in zip(casts, row))


def _temp(final: Path, pending: list[tuple[Path, Path]]) -> Path:
    """The temporary name `final` is written under, kept in `pending` for `export` to rename or remove."""
    tmp = final.with_name(final.name + ".tmp")
    pending.append((tmp, final))
    return tmp


def _missing(folder: Path) -> list[Path]:
    """The folders `folder.mkdir(parents=True)` would make, deepest first."""
    missing = []
    while not folder.exists() and folder != folder.parent:
        missing.append(folder)
        folder = folder.parent
    return missing


def _check_finals(out: Path, pending: list[tuple[Path, Path]]) -> None:
    """Before the first rename: a final name that is a folder would stop the renames part way (a link is
    replaced, not followed), so the export is refused while the output folder is still as it was."""
    folders = [final.name for _, final in pending if final.is_dir() and not final.is_symlink()]
    if folders:
        raise ModlensError(f"{out}: {', '.join(folders)} {'is a folder' if len(folders) == 1 else 'are folders'}, "
                           "where this export writes a file; nothing was written",
                           fix="move it out of the way, or export to another folder (--out)")


def _write(writer: Any, out: Path, table: ExportTable, rows: Iterable[tuple[Any, ...]],
           pending: list[tuple[Path, Path]]) -> tuple[Path, int]:
    """One table's file, written under a temporary name (renamed by `export` once the read passed its check)."""
    final = out / f"{table.name}{writer.EXTENSION}"
    return final, writer.write(_temp(final, pending), table, rows)


def check_tables(tables: Sequence[str]) -> None:
    """ValueError naming the first unknown table and the close matches (or every exportable one)."""
    known = [*EXPORTS, WIDE_NAME]  # the wide table is built above this layer (cli/export.py) but asked for here too
    for name in tables:
        if name not in EXPORTS:
            close = close_matches(name, known)
            fix = f"did you mean {' or '.join(close)}?" if close else f"exportable: {', '.join(known)}"
            raise ValueError(f"unknown table {name!r}; {fix}")


# a table built above the storage layer (the wide per-row table: `analysis/wide.py`): its description,
# its rows (typed as its columns say) and what the manifest adds about it
Derived = tuple[ExportTable, Iterable[tuple[Any, ...]], dict[str, Any]]


def export(db: str | Path, out_dir: str | Path, fmt: str = "csv", tables: Sequence[str] | None = None,
           derived: Sequence[Callable[[StudyLog], Derived]] = ()) -> dict[str, Any]:
    """Write the chosen tables (default: all, every SQLite table among them) to `out_dir`, then the
    `derived` ones, in the same format; returns the manifest. Each `derived` builds its table from the
    open log inside the same read transaction, so it and the tables are one snapshot."""
    writer = exporters.get(fmt)
    check_tables(tables or ())
    chosen = [EXPORTS[t] for t in tables] if tables is not None else list(EXPORT_TABLES)
    out = Path(out_dir)
    manifest: dict[str, Any] = {"db": str(Path(db).resolve()), "format": fmt, "schema_version": SCHEMA_VERSION,
                                "exported_at": now_iso(), "tables": {}}
    pending: list[tuple[Path, Path]] = []  # (temporary name, final name), in the order they are renamed
    made: list[Path] = []  # the folders this export made, deepest first
    try:
        with StudyLog(db, readonly=True) as log, log.snapshot():
            made = _missing(out)
            out.mkdir(parents=True, exist_ok=True)  # only once the log opened: a bad --db leaves nothing behind
            for table in chosen:
                cursor = log.conn.execute(table.sql)
                names = [d[0] for d in cursor.description]
                if names != [c.name for c in table.columns]:  # the description and its query must agree
                    raise RuntimeError(f"export {table.name}: query columns {names} differ from studylog/tables.py")
                final, n = _write(writer, out, table, _typed(table, cursor), pending)
                manifest["tables"][table.name] = {"file": final.name, "rows": n}
            for build in derived:
                table, rows, about = build(log)
                final, n = _write(writer, out, table, _typed(table, rows), pending)
                manifest["tables"][table.name] = {"file": final.name, "rows": n, **about}
        # the read passed its checks (the snapshot's end, the close): only now does any file of it take its name
        _temp(out / DICTIONARY_FILE, pending).write_text(
            "# modlens study log: data dictionary\n\n" + render_markdown(), encoding="utf-8")
        _temp(out / MANIFEST_FILE, pending).write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
        _check_finals(out, pending)
        # from here the folder holds a mix of two exports until the last rename: only the manifest says one is whole
        (out / MANIFEST_FILE).unlink(missing_ok=True)
        for tmp, final in pending:
            os.replace(tmp, final)
    except BaseException:
        for tmp, _ in pending:
            tmp.unlink(missing_ok=True)
        for folder in made:
            with contextlib.suppress(OSError):  # a folder this export made, left empty (not once a file took its name)
                folder.rmdir()
        raise
    return manifest
