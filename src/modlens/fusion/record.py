"""Writing generated cases into a study log (docs/DATA.md, migration 3): media bytes into the
content-addressed `MediaStore`, rows through `studylog.records.media`, and one `audit_runs` row
(dataset "fuse") holding the generation parameters and the oracle's verdicts. Idempotent: the
same settings give the same case keys and media hashes, so a rerun reuses its run row and adds
no case, no media row and no file."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable, Sequence

from modlens.fusion.case import FusedCase
from modlens.media import MediaBlob
from modlens.media.store import MediaStore
from modlens.studylog.records import media as media_records
from modlens.studylog.records.runs import find_run
from modlens.studylog.store import StudyLog

RUN_DATASET = "fuse"


@dataclass
class RecordResult:
    run_id: int
    added: int          # cases new to the log
    existing: int       # cases the log already had (same key)
    files_written: int  # media files new to the media folder

    def to_dict(self) -> dict[str, Any]:
        return {"run_id": self.run_id, "added": self.added, "existing": self.existing,
                "files_written": self.files_written}


def fuse_run(log: StudyLog, store: MediaStore, params: dict[str, Any]) -> int:
    """The run row of these parameters: the earlier one when a run had exactly these, else a new one."""
    path = str(store.root)
    with log.transaction():
        run_id = find_run(log, RUN_DATASET, path, params)
        return run_id if run_id is not None else log.start_run(RUN_DATASET, path, params)


def _media_ids(log: StudyLog, store: MediaStore, blobs: Iterable[MediaBlob], meta: dict[str, Any]) -> tuple[list[int], int]:
    ids, written = [], 0
    for blob in blobs:
        if not store.path(blob).exists():
            written += 1
        store.put(blob)
        ids.append(media_records.add_media(log, blob, path=store.relative_path(blob), meta=meta))
    return ids, written


def record_cases(log: StudyLog, cases: Sequence[FusedCase], store: MediaStore, params: dict[str, Any]) -> RecordResult:
    """Every case with its media (the fused case's and each part's), under one run row."""
    run_id = fuse_run(log, store, params)
    known = {r["case_key"] for r in log.query("SELECT case_key FROM fused_cases")}
    added = files = 0
    for case in cases:
        if case.key in known:
            continue
        media: dict[str, list[int]] = {}
        for part, blobs in (("case", case.media), ("part_a", case.part_a.media), ("part_b", case.part_b.media)):
            # the first case that brings a file describes it; later ones find it by hash
            media[part], written = _media_ids(log, store, blobs, {"generated_by": "modlens fuse", "fusion": case.fusion,
                                                                  "part": part})
            files += written
        media_records.add_fused_case(log, case, media, run_id)
        known.add(case.key)
        added += 1
    n_cases = log.query("SELECT count(*) AS n FROM fused_cases WHERE run_id = ?", (run_id,))[0]["n"]
    with log.transaction():
        log.set_run_progress(run_id, n_cases)
        log.finish_run(run_id, "finished")
    return RecordResult(run_id, added, len(cases) - added, files)
