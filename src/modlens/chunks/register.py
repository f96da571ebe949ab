"""Registering a chunk's items in the study log: each item one comment of its source's page,
with its labels and the variants its dataset records. One function for every caller that brings
items of its own (dataset audits, `modlens import`, the study's calibration items); the live
comments of the daemon carry page and sighting data and are written by `live/service.py`."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from modlens.datasets.base import DatasetItem
from modlens.normalize.base import edits_json
from modlens.studylog.records.labels import GOLD, add_gold_labels
from modlens.studylog.store import StudyLog
from modlens.rows import CommentRow


@dataclass(frozen=True)
class ItemSource:
    """Where items come from, as the log records them."""
    platform: str        # the comments' platform: `dataset:<name>`, `study` for calibration items
    page_id: int | None  # the page (the dataset file, the study) they belong to
    label_source: str    # `labels.source` of their labels
    label_set_id: int | None = None  # the gold label set their `toxic` labels go to (records/labels.py)


def register_items(log: StudyLog, source: ItemSource, items: Sequence[DatasetItem],
                   run_id: int | None = None) -> list[int]:
    """Comments, labels and dataset variants of `items` in one transaction; their comment_ids, in
    order. Idempotent: a key already logged keeps its first text and its id; a label of the same
    name and source gets the new value. The gold `toxic` label goes to the source's label set, where
    a value already stored stays."""
    if source.label_set_id is None and any(it.labels.get(GOLD) is not None for it in items):
        raise ValueError(f"{source.platform}: items with a gold label need the label set they belong to")
    with log.transaction():
        page_id = source.page_id
        ids = log.add_comments_many(source.platform, [CommentRow(it.key, it.text, page_id) for it in items])
        # one statement per item for its labels (the gold label is not a `labels` row)
        log.add_labels_per_comment(source.label_source, [(cid, it.labels) for it, cid in zip(items, ids)], GOLD)
        if source.label_set_id is not None:
            add_gold_labels(log, source.label_set_id, ((cid, value) for it, cid in zip(items, ids)
                                                       if (value := it.labels.get(GOLD)) is not None))
        log.add_variants_many([(cid, v) for it, cid in zip(items, ids) for v in it.variants], run_id)
        # what a reader step (html_unescape) made of the file's text, recorded like a normalizer's output
        log.add_normalizations_many([(raw, n.normalizer, n.version, it.text, edits_json(n.edits))
                                     for it in items if it.read_as for raw, n in [it.read_as]])
    return ids
