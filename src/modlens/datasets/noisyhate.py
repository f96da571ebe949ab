"""NoisyHate (seed 000): pairs of a toxic comment and the same comment with one word perturbed
by a person. The clean sentence is the comment; the perturbed one is its variant
(strategy `human:noisyhate`). Recorded spell-checker results and annotator fractions become labels."""
from __future__ import annotations

from pathlib import Path

from modlens.datasets.base import Dataset, DatasetItem, read_rows, require_columns, word_span
from modlens.perturb.base import Variant

STRATEGY = "human:noisyhate"
LABEL_COLUMNS = ("toxicity", "google_correct", "bing_correct", "quality_mean", "types", "clean_word",
                 "perturbed_word", "position")


def read(path: Path, **_: object) -> Dataset:
    rows = read_rows(path)
    require_columns(path, rows, ["clean", "perturbed", "position", "clean_word", "perturbed_word", "types"])
    items = []
    for n, row in enumerate(rows):
        clean = row["clean"]
        try:
            position = int(row["position"])
        except (TypeError, ValueError):
            raise ValueError(f"{path}: row {n + 2}: position {row['position']!r} is not an integer") from None
        span = word_span(clean, position)
        params = {"types": row["types"].split("|") if row["types"] else [], "position": position,
                  "clean_word": row["clean_word"], "perturbed_word": row["perturbed_word"]}
        variant = Variant(text=row["perturbed"], strategy=STRATEGY, params=params, seed=0,
                          positions=[span] if span else [], source_text=clean)
        labels = {c: row[c] for c in LABEL_COLUMNS if c in row and row[c] not in (None, "")}
        labels["toxic"] = "1"  # every NoisyHate sentence is toxic (Civil Comments toxicity >= 0.5)
        items.append(DatasetItem(key=f"row-{n}", text=clean, labels=labels, variants=[variant]))
    return Dataset("noisyhate", path, items)
