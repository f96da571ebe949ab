"""`modlens fuse --export DIR`: the cases as a folder an external moderation API can be run over:
`cases.jsonl` (one line per case: its seed, keywords, template, fusion, caption, media files and
hashes, each part, the parameters, and the expected verdict: "toxic" when the oracle's detectors
found the seed toxic, null when no oracle checked it), the media under
`media/<sha[:2]>/<sha><ext>` (the study's layout), and `manifest.json` (counts, and which
modalities the local detectors read). A case with audio or video that no local detector reads is
marked `needs_external_scorer`: it was generated for a cloud API, not scored here."""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

from modlens.fusion.case import FusedCase
from modlens.media import MediaBlob
from modlens.media.store import MediaStore

MANIFEST = "cases.jsonl"
SUMMARY = "manifest.json"


@dataclass
class ExportResult:
    folder: Path
    cases: int
    files: int
    needs_external_scorer: int

    def to_dict(self) -> dict[str, Any]:
        return {"folder": str(self.folder), "cases": self.cases, "files": self.files,
                "needs_external_scorer": self.needs_external_scorer}


def _files(store: MediaStore, blobs: Iterable[MediaBlob]) -> list[dict[str, Any]]:
    out = []
    for blob in blobs:
        store.put(blob)
        out.append({"file": f"media/{store.relative_path(blob)}", "sha256": blob.sha256, "mime": blob.mime,
                    "kind": blob.kind, "n_bytes": len(blob.data)})
    return out


def case_record(case: FusedCase, store: MediaStore, readable: set[str],
                toxic_by: Sequence[str] | None = None) -> dict[str, Any]:
    """`toxic_by`: the oracle's detectors that found the seed toxic; None when no oracle ran."""
    unread = sorted({m.kind for m in case.media} - readable)
    return {"case_key": case.key, "content_type": case.content_type, "template": case.template,
            "fusion": case.fusion, "seed_text": case.seed_text, "keyword_a": case.keyword_a, "middle": case.middle,
            "keyword_b": case.keyword_b, "caption": case.caption, "modalities": list(case.modalities),
            "media": _files(store, case.media),
            "parts": {"seed": {"text": case.seed_text, "media": []},
                      "part_a": {"text": case.part_a.text, "media": _files(store, case.part_a.media)},
                      "part_b": {"text": case.part_b.text, "media": _files(store, case.part_b.media)}},
            "expected": "toxic" if toxic_by else None, "oracle_toxic_by": None if toxic_by is None else list(toxic_by),
            "needs_external_scorer": bool(unread), "unread_media": unread,
            "params": case.params, "seed": case.seed}


def export_cases(cases: Sequence[FusedCase], folder: str | Path, *, readable: Iterable[str] = ("text",),
                 run: dict[str, Any] | None = None,
                 verdicts: Mapping[str, Sequence[str]] | None = None) -> ExportResult:
    """Write the cases to `folder` (created; an earlier export there is replaced case by case).
    `readable`: the modalities the local detectors read (text; image with OCR or an image model).
    `verdicts`: seed text -> the oracle's detectors that found it toxic (`OracleResult.verdicts`);
    None when the oracle was off: then no case is said to be expected toxic."""
    out = Path(folder)
    out.mkdir(parents=True, exist_ok=True)
    store = MediaStore(out / "media")
    modalities = set(readable)
    external = toxic = 0
    named: set[str] = set()  # the files these cases name (an earlier export's may lie beside them)
    tmp = out / f".{MANIFEST}.tmp"
    with tmp.open("w", encoding="utf-8") as fh:
        for case in cases:
            record = case_record(case, store, modalities,
                                 None if verdicts is None else verdicts.get(case.seed_text, []))
            external += record["needs_external_scorer"]
            toxic += record["expected"] == "toxic"
            named.update(m["file"] for m in record["media"] + record["parts"]["part_a"]["media"]
                         + record["parts"]["part_b"]["media"])
            fh.write(json.dumps(record, ensure_ascii=False, sort_keys=True) + "\n")
    tmp.replace(out / MANIFEST)
    files = len(named)
    expected = ("not checked (--no-oracle): no detector vouched for the seeds, so no case carries an expected verdict"
                if verdicts is None else "toxic for every case whose seed the oracle's detectors found toxic "
                                         "(oracle_toxic_by)")
    summary = {"cases": len(cases), "files": files, "local_modalities": sorted(modalities),
               "needs_external_scorer": external, "expected_toxic": toxic, "expected": expected,
               "run": run or {}}
    (out / SUMMARY).write_text(json.dumps(summary, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return ExportResult(out, len(cases), files, external)
