"""Every row small audits write, as exported (`modlens export`, JSONL), for tests that hold an
audit's rows fixed across changes to the chunk pipeline: `tests/fixtures/audit_rows/golden.json`
holds each table's row count and sha256 as the pipeline wrote them before it was
batched for speed (2026-11-27: a chunk's texts scored per detector call, labels inserted per chunk)
(`python tests/audit_rows.py --digest OUT.json`; without `--digest`, the rows themselves, to diff).
Since plain files are named by their content (docs/DATASETS.md), the comments file is the data set
`file-cc0f9b7df6baed68`, not `comments`: that name is the only difference from the rows the pipeline
wrote before (Davidson's rows unchanged), so the golden digests were recomputed for it. The
`studies` row holds the default consent text, recomputed when that text was corrected (2026-12-06:
it names page addresses and titles and says no author handle or name is logged). `audit_runs` was
recomputed when runs keyed by ids began to record the digest of the bytes they read (`file_digest`:
the Davidson runs; with it left out, the old digest). `variants` was recomputed when a variant whose
words the heuristic ranked (`params.ranking` "heuristic": every variant here) stopped naming the target
as the detector that guided it (`target_detector` null; with it put back, the old digest).

Ids are kept (texts, comments and variants must get the same ids in the same order); what
depends on the clock or the machine is dropped: timestamps, latencies, absolute paths."""
from __future__ import annotations

import csv
import hashlib
import json
import random
import sys
import tempfile
from pathlib import Path
from typing import Any

from modlens.audit import run_audit
from modlens.detectors.base import Detector
from modlens.paths import shipped_data
from modlens.studylog.export import export

VOLATILE = {"latency_ms", "created_at", "first_seen", "seen_at", "started_at", "finished_at", "exported_at",
            "first_used", "path", "db", "url", "page_url"}


class LengthDetector(Detector):
    """Deterministic and free: longer texts look more toxic; texts with 'zz' fail (error rows)."""
    name, version, labels, toxicity_label = "length", "rows-1", ("toxicity", "insult"), "toxicity"

    def score(self, texts: Any) -> list[Any]:
        return [None if "zz" in t else {"toxicity": min(1.0, len(t) / 120), "insult": (len(t) % 7) / 7}
                for t in texts]


def _comments(path: Path) -> Path:
    """Comments with repeats (the same text under two keys, within and across chunks) and a label column."""
    rng = random.Random(41)
    words = "you are an idiot great post &amp; thanks stupid zz nice hate love this trash fool".split()
    with open(path, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["id", "text", "toxic"])
        for i in range(90):
            text = " ".join(rng.choice(words) for _ in range(rng.randint(2, 9)))
            w.writerow([f"c{i}", text if i % 11 else "the same text again", rng.randint(0, 1)])
    return path


def audit_rows(work: Path) -> dict[str, Any]:
    """The exported rows of three audits into one log: Davidson's first 700 tweets (HTML entities
    decoded as read), then again with a resume, and a comments file with normalization, generated
    variants and score errors, in small chunks."""
    db = work / "log.sqlite"
    davidson = shipped_data() / "davidson" / "labeled_data.csv"
    det = {"length": LengthDetector()}
    run_audit(str(davidson), db=db, limit=500, detector_objects=det, progress=False, chunk_size=128)
    run_audit(str(davidson), db=db, limit=700, detector_objects=det, progress=False, chunk_size=128)
    run_audit(str(_comments(work / "comments.csv")), db=db, detector_objects=det, progress=False, chunk_size=16,
              normalize=True, perturb=["homoglyph", "repeat_char"])
    export(db, work / "out", fmt="jsonl")
    tables: dict[str, Any] = {}
    for f in sorted((work / "out").glob("*.jsonl")):
        rows = [json.loads(line) for line in f.read_text(encoding="utf-8").splitlines() if line]
        tables[f.stem] = [{k: v for k, v in r.items() if k not in VOLATILE} for r in rows]
    return tables


def canonical(rows: list[dict[str, Any]]) -> str:
    return "".join(json.dumps(r, sort_keys=True, ensure_ascii=False) + "\n" for r in rows)


def digests(tables: dict[str, Any]) -> dict[str, Any]:
    """{table: {"rows": n, "sha256": of its canonical rows}}."""
    return {name: {"rows": len(rows), "sha256": hashlib.sha256(canonical(rows).encode()).hexdigest()}
            for name, rows in tables.items()}


if __name__ == "__main__":
    # Without an OUT path, sys.argv[-1] would be this script itself, overwritten with rows.
    if len(sys.argv) < 2 or sys.argv[-1] == "--digest":
        sys.exit("usage: python tests/audit_rows.py [--digest] OUT.json")
    with tempfile.TemporaryDirectory() as tmp:
        got = audit_rows(Path(tmp))
    out = digests(got) if "--digest" in sys.argv else got
    Path(sys.argv[-1]).write_text(json.dumps(out, sort_keys=True, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
