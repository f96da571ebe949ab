"""The data dictionary: every exported table and every SQLite table of the study log, with the
type and meaning of each column and the current schema as SQL, rendered from the one table
description in `studylog/tables.py`.

`modlens export` writes it next to the exported files, and the generated block of docs/DATA.md
must equal `render_markdown()` (a test checks it, so the documentation cannot drift).
"""
from __future__ import annotations

import sys
from pathlib import Path

from modlens.docblock import write_block

from modlens.studylog.schema import create_script
from modlens.studylog.tables import EXPORT_TABLES, TABLES, WIDE_COLUMNS, WIDE_DOC, WIDE_NAME, WIDE_PER_DETECTOR, Table



def _constraints(table: Table, column: str) -> str:
    c = table.column(column)
    parts = ["primary key"] if column in table.primary_key and len(table.primary_key) == 1 else []
    if c.not_null:
        parts.append("not null")
    if c.default is not None:
        parts.append(f"default {c.default}")
    if c.references:
        target, _, rest = c.references.partition("(")
        parts.append(f"→ `{target}.{rest.rstrip(')')}`")
    return ", ".join(parts)


def _keys(table: Table) -> str:
    keys = []
    if len(table.primary_key) > 1:
        keys.append(f"primary key ({', '.join(table.primary_key)})")
    keys += [f"unique ({', '.join(u)})" for u in table.unique]
    keys += [f"index `{i.name}` ({', '.join(i.columns)})" for i in table.indexes]
    return ("Keys: " + "; ".join(keys) + ("; without rowid" if table.without_rowid else "") + ".") if keys else ""


def render_markdown() -> str:
    """The dictionary as Markdown (the generated block of docs/DATA.md, and DATA.md in exports)."""
    out = ["## Exported tables", "",
           "Empty cells (CSV) / null (JSONL, Parquet) mean NULL. Columns ending in `_json` hold JSON text. "
           "Every SQLite table is exported, under its own name.", ""]
    for t in EXPORT_TABLES:
        out += [f"### `{t.name}`", "", t.doc, ""]
        if t.omits:
            out += [" ".join(f"`{t.carries}.{c}` is not exported: {why}." for c, why in t.omits.items()), ""]
        out += ["| column | type | meaning |", "|---|---|---|"]
        out += [f"| `{c.name}` | {c.type} | {c.doc} |" for c in t.columns]
        out.append("")
    out += [f"### `{WIDE_NAME}`", "", WIDE_DOC, "", "| column | type | meaning |", "|---|---|---|"]
    out += [f"| `{c.name}` | {c.type} | {c.doc} |" for c in WIDE_COLUMNS]
    out += [f"| `{name.format(detector='DETECTOR')}` | {type_} | {doc} One per detector version. |"
            for name, type_, doc in WIDE_PER_DETECTOR]
    out.append("")
    out += ["## SQLite tables", ""]
    for table in TABLES:
        out += [f"### `{table.name}`", "", table.doc, ""]
        keys = _keys(table)
        if keys:
            out += [keys, ""]
        out += ["| column | type | constraints | meaning |", "|---|---|---|---|"]
        out += [f"| `{c.name}` | {c.type} | {_constraints(table, c.name)} | {c.doc} |" for c in table.columns]
        out.append("")
    out += ["## Schema as SQL", "",
            "A fresh log's schema, generated from the table declarations above (`studylog/schema.py`'s "
            "`create_script`); a log of an older schema version, upgraded, holds the same.", "",
            "```sql", create_script().rstrip(), "```", ""]
    return "\n".join(out).rstrip() + "\n"


if __name__ == "__main__":  # python -m modlens.studylog.dictionary [--write]: print, or update docs/DATA.md
    if sys.argv[1:] == ["--write"]:
        write_block(Path(__file__).resolve().parents[3] / "docs" / "DATA.md", render_markdown())
    else:
        print(render_markdown(), end="")
