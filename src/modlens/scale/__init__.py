"""Audits beyond one machine (docs/SCALE.md).

- `sources.py`: folders of CSV / JSONL / Parquet files as one dataset;
- `actors.py`: what runs on Ray's workers (detector actors, variant actors, normalize tasks);
- `ray_audit.py`: `RayAuditor`, the audit's compute steps on Ray, writes on the driver;
- `parquet_out.py`: `--out-parquet DIR` shards and `modlens import DIR`.

Ray is an optional dependency (`pip install 'modlens[ray]'`); nothing here imports it at module level.
"""
