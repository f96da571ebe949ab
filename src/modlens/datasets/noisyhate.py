"""NoisyHate (Ye, Le and Lee): pairs of a toxic comment and the same comment with one word perturbed
by a person. The one loader of the file (audits, the normalization benchmark and tests read it
through `read_pairs`) and the one "restored" rule (the normalization report and the benchmark
judge with `restored`).

As an audit dataset, the clean sentence is the comment; the perturbed one is its variant
(strategy `human:noisyhate`). Recorded spell-checker results and annotator fractions become labels.
A file in this layout is the data set `noisyhate` only when its bytes are the catalog's (the shipped
dev half's SHA-256, `base.catalog_name`); any other is named by its content."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

from modlens.datasets.base import (Dataset, DatasetError, DatasetItem, catalog_name, file_digest, read_columns,
                                   read_rows, require_columns, row_key, word_span)
from modlens.datasets.gold import GoldSpec
from modlens.rows import Variant

STRATEGY = "human:noisyhate"
GOLD = "every sentence toxic (Civil Comments toxicity >= 0.5)"
LABEL_COLUMNS = ("toxicity", "google_correct", "bing_correct", "quality_mean", "types", "clean_word",
                 "perturbed_word", "position")


@dataclass
class NoisyPair:
    clean: str
    perturbed: str
    position: int          # index of the perturbed whitespace token
    clean_word: str
    perturbed_word: str
    types: list[str]
    labels: dict[str, Any] = field(default_factory=dict)  # the recorded columns that are set

    @property
    def google(self) -> bool:
        """Google's spell checker restored the word (recorded by the dataset authors)."""
        return self.labels.get("google_correct") == "1"

    @property
    def bing(self) -> bool:
        return self.labels.get("bing_correct") == "1"


def read_pairs(path: Path | str, encoding: str | None = None) -> list[NoisyPair]:
    path = Path(path)
    rows = read_rows(path, encoding)
    require_columns(path, rows, ["clean", "perturbed", "position", "clean_word", "perturbed_word", "types"])
    pairs = []
    for n, row in enumerate(rows):
        try:
            position = int(row["position"])
        except (TypeError, ValueError):
            raise DatasetError(f"{path}: row {n + 2}: position {row['position']!r} is not an integer") from None
        pairs.append(NoisyPair(row["clean"], row["perturbed"], position, row["clean_word"], row["perturbed_word"],
                               row["types"].split("|") if row["types"] else [],
                               {c: row[c] for c in LABEL_COLUMNS if c in row and row[c] not in (None, "")}))
    return pairs


def restored(tokens: Sequence[str], position: int, clean_word: str) -> bool:
    """The paper's rule: the token at `position` (of the normalizer's output split on
    whitespace), lowercased, equals the clean word lowercased. A position outside the tokens
    (negative, or past a shortened output) is not restored."""
    return 0 <= position < len(tokens) and tokens[position].lower() == clean_word.lower()


def read(path: Path, *, label: GoldSpec | None = None, encoding: str | None = None, **_: object) -> Dataset:
    if label is not None:
        raise DatasetError("NoisyHate declares its gold label itself (every sentence is toxic); --label does not apply")
    items, digest = [], file_digest(path)
    for n, pair in enumerate(read_pairs(path, encoding)):
        span = word_span(pair.clean, pair.position)
        params = {"types": pair.types, "position": pair.position,
                  "clean_word": pair.clean_word, "perturbed_word": pair.perturbed_word}
        variant = Variant(text=pair.perturbed, strategy=STRATEGY, params=params, seed=0,
                          positions=[span] if span else [], source_text=pair.clean)
        labels = {**pair.labels, "toxic": "1"}  # every NoisyHate sentence is toxic (Civil Comments toxicity >= 0.5)
        items.append(DatasetItem(key=row_key(digest, n), text=pair.clean, labels=labels, variants=[variant]))
    # Perspective's recorded scores of both sentences: `--detectors recorded` audits with them
    recorded = {"perspective": [["clean", "perspective_clean"], ["perturbed", "perspective_perturbed"]]} \
        if {"perspective_clean", "perspective_perturbed"} <= set(read_columns(Path(path), encoding)) else {}
    # NoisyHate only with the bytes the catalog pins (the shipped dev half): an edited copy is another data set
    name, why = catalog_name("noisyhate", path, digest)
    return Dataset(name, path, items, notes=[f"gold label: {GOLD}", *([why] if why else [])], recorded_scores=recorded,
                   gold=GOLD, source_id=digest)
