"""Export formats, one small module each, registered here.

A format module defines `EXTENSION` and `write(path, table, rows) -> int`, where `rows` is an
iterable of tuples in `table.columns` order, already typed (None for NULL), and the return
value is the number of rows written. An installed package adds one through the
`modlens.exporters` entry point (see CONTRIBUTING.md)."""
from __future__ import annotations

from types import ModuleType

from modlens.names import MODULES, Registry

# format name -> module in modlens.studylog.exporters
FORMATS: dict[str, str] = {
    "csv": "csv",
    "jsonl": "jsonl",
    "parquet": "parquet",
}
REGISTRY: Registry[ModuleType] = Registry("export format", __name__, FORMATS, group="modlens.exporters",
                                           needs=("write",), kind=MODULES)


# the format's module; an unknown name raises UnknownName (a ValueError) with the close matches
get = REGISTRY.load
