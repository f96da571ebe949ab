"""What the oracle tests share: NoisyHate's dev half audited with Perspective's recorded scores
(the `cached` detector), and the file's own rows to recompute figures from."""
from __future__ import annotations

import csv
from pathlib import Path

from modlens.cli import main


def audit_noisyhate_recorded(data_dir: Path, tmp_path: Path) -> tuple[Path, list[dict[str, str]]]:
    """(the study log, the CSV's rows as read by the csv module, not by modlens)."""
    nh = data_dir / "noisyhate" / "dev.csv"
    db = tmp_path / "nh.sqlite"
    spec = f"cached:{nh}:clean=perspective_clean,perturbed=perspective_perturbed:perspective"
    assert main(["audit", str(nh), "--db", str(db), "--quiet", "--detectors", spec]) == 0
    with open(nh, encoding="utf-8", newline="") as fh:
        return db, list(csv.DictReader(fh))
