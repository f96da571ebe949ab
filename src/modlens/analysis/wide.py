"""The wide per-row table `modlens export` writes (`studylog/tables.py`, `wide_table`): one row
per comment with its gold label, one score column per detector version and each one's in-sample
mark. Gold comes from the label set the report uses for the comment's source, the in-sample marks
from the same per-row check as the report's labelled-data section (`labelled.in_sample`), and the
detectors go by the report's short names, so a row here and a figure there agree."""
from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import Any, Iterator, Sequence

from modlens.analysis import labelled
from modlens.analysis.data import StudyData, load
from modlens.analysis.sections.html import short_names
from modlens.studylog.store import StudyLog
from modlens.studylog.tables import ExportTable, wide_table


def _in_sample(data: StudyData) -> dict[tuple[int, int], bool]:
    """(comment_id, detector_id) -> in-sample or not, where known row by row."""
    declared = labelled.declarations(data)
    by_source: dict[str, list[int]] = defaultdict(list)
    for cid, c in data.comments.items():
        by_source[c["platform"]].append(cid)
    out: dict[tuple[int, int], bool] = {}
    for source, cids in by_source.items():
        for det in data.detectors.values():
            rec = declared.get((source, det.label))
            if rec is None:
                continue
            _, flags = labelled.in_sample(data, rec, cids)
            if flags is not None:
                # a text with no words has no key to look up: no mark either way
                out.update({(cid, det.detector_id): f for cid, f in zip(cids, flags) if f is not None})
    return out


def build(data: StudyData) -> tuple[ExportTable, Iterator[tuple[Any, ...]], dict[str, dict[str, Any]]]:
    """The table (its columns named for this log's detectors), its rows in comment order, and
    short name -> {name, version, detector_id} for the manifest."""
    dets = list(data.detectors.values())
    names = short_names((d.name, d.version) for d in dets)
    short = [names[(d.name, d.version)] for d in dets]
    table = wide_table(short)
    marks = _in_sample(data)

    def rows() -> Iterator[tuple[Any, ...]]:
        for cid in sorted(data.comments):
            c = data.comments[cid]
            gold = labelled.gold(data.labels.get(cid, {}))
            label_set = data.label_sets.get(c["platform"]) if gold is not None else None
            row: list[Any] = [cid, c["platform"], c["key"], c["text_id"], data.texts.get(c["text_id"], ""), gold,
                              None if label_set is None else label_set["label_set_id"]]
            for d in dets:
                row += [data.score(c["text_id"], d.detector_id), marks.get((cid, d.detector_id))]
            yield tuple(row)
    return table, rows(), {s: {"name": d.name, "version": d.version, "detector_id": d.detector_id}
                           for s, d in zip(short, dets)}


def from_db(db: str | Path, label_sets: Sequence[str] = (), log: StudyLog | None = None) -> tuple[
        ExportTable, Iterator[tuple[Any, ...]], dict[str, dict[str, Any]]]:
    """`log`: the export's open log, read in its snapshot (else `db` is opened and read on its own)."""
    return build(load(db, label_sets, log))
