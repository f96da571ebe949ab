"""Apache Parquet via pyarrow, typed from the table description (studylog/tables.py), written in row groups so a
large log never has to fit in memory at once."""
from __future__ import annotations

from itertools import islice
from pathlib import Path
from typing import Any, Iterable

from modlens.studylog.tables import ExportTable

EXTENSION = ".parquet"
ROW_GROUP = 50_000


def write(path: Path, table: ExportTable, rows: Iterable[tuple[Any, ...]]) -> int:
    import pyarrow as pa
    import pyarrow.parquet as pq

    types = {"int": pa.int64(), "float": pa.float64(), "str": pa.string(), "bool": pa.bool_()}
    schema = pa.schema([(c.name, types[c.type]) for c in table.columns])
    n = 0
    it = iter(rows)
    with pq.ParquetWriter(path, schema) as writer:
        while True:
            chunk = list(islice(it, ROW_GROUP))
            if not chunk and n:
                break
            columns: list[tuple[Any, ...]] = list(zip(*chunk)) if chunk else [() for _ in table.columns]
            writer.write_table(pa.Table.from_arrays([pa.array(col, type=f.type) for col, f in zip(columns, schema)],
                                                    schema=schema))
            n += len(chunk)
            if not chunk:
                break
    return n
