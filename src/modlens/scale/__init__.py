"""Audits beyond one machine (docs/SCALE.md).

- `sources.py`: folders of CSV / JSONL / Parquet files as one dataset;
- `actors.py`: what runs on Ray's workers (detector actors, variant actors, normalize tasks);
- `ray_audit.py`: `RayCompute`, the chunk pipeline's compute on Ray (writes stay on the driver);

The chunk pipeline itself (`--out-parquet` shards and `modlens import` included) is `modlens.chunks`.

Ray is an optional dependency (`pip install 'modlens[ray]'`); nothing here imports it at module level.
"""
