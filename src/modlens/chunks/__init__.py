"""The chunk pipeline: one way a batch of items becomes rows, whoever feeds it and wherever it runs.

A chunk goes through the same steps everywhere (`pipeline.ChunkPipeline`): generate variants →
normalize → score what the sink lacks → register the items (comments, labels, dataset variants) and
record the results, in one transaction. What differs between the daemon, a local audit, a Ray
audit, `--out-parquet` and `modlens import` is a parameter, never a copy:

- where compute runs: a `Compute` (`compute.LocalCompute` over the `Engine`; `scale.ray_audit.RayCompute`
  over Ray actors);
- where rows go: a `Sink` (`sinks.LogSink`, the study log; `parquet.ParquetSink`, shard files that
  `parquet.import_parquet` later feeds to a `LogSink`);
- where input comes from: any iterable of chunks (a dataset file, a Ray dataset, Parquet shards).

One error policy (`steps`): a normalizer or generator that fails for one text costs that text's
output only and is recorded as a `step_errors` row; a detector that fails is a score row with
`error`. The run goes on.
"""
from modlens.chunks.chunk import Chunk, Failed, StepError
from modlens.chunks.compute import Compute, LocalCompute
from modlens.chunks.pipeline import ChunkPipeline
from modlens.chunks.register import ItemSource, register_items
from modlens.chunks.sinks import LogSink, Sink, record_results

__all__ = ["Chunk", "ChunkPipeline", "Compute", "Failed", "ItemSource", "LocalCompute", "LogSink", "Sink",
           "StepError", "record_results", "register_items"]
