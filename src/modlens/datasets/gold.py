"""Gold labels and the columns worth keeping: which column says whether a text is toxic, how its
values become the `toxic` label ("1"/"0"), and which other columns are stored as labels.

`--label COLUMN` reads the column's values by the vocabulary below; `--label COLUMN=A,B` names
the toxic values (every other non-empty value is non-toxic); `--label COLUMN>=X` thresholds a
score (Civil Comments' `toxicity`); `--label none` declares no gold label. A value the vocabulary
does not know is an error naming the row, never a guess. An empty value is "no gold label" for
that row.

Each gold label is stored under a label set named by its source and its definition, the text
`GoldSpec.definition` (or a reader's own constant below) gives: "toxicity >= 0.5",
"class in {hate_speech, offensive_language}", "none". A definition is part of the data: the same
text always means the same rule, so the same file under the same definition lands in the same set.

Only recognized columns are kept by default (the gold column, group columns, ids): keeping every
column would turn Civil Comments' ~40 score columns into ~80 million label rows.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Iterable

from modlens.datasets.base import NO_GOLD, DatasetError

# in order of preference: the first one a file has is its gold label
GOLD_COLUMNS = ("toxic", "is_toxic", "toxicity_label", "hateful", "is_hateful", "is_hate", "hate", "offensive",
                "is_offensive", "abusive", "is_abusive", "label", "class")
# per-group results (per target identity, per platform) in the report
GROUP_COLUMNS = ("target_ident", "target", "target_group", "targets", "group", "identity", "identity_group",
                 "identities", "platform", "source", "site", "subreddit", "language", "lang")
ID_COLUMNS = ("id", "comment_id", "post_id", "tweet_id", "case_id", "item_id")
TEXT_COLUMNS = ("text", "comment_text", "tweet", "sentence")

POSITIVE = ("1", "true", "t", "yes", "y", "toxic", "hateful", "hate", "hate_speech", "hate speech", "offensive",
            "offensive_language", "abusive", "abuse", "insult", "positive")
PLAIN_VALUES = "1/true/yes/toxic/hateful… vs 0/false/no/neither…"  # how a plain `--label COLUMN` reads values
NEGATIVE = ("0", "false", "f", "no", "n", "non-toxic", "nontoxic", "not toxic", "not_toxic", "non-hateful",
            "nonhateful", "not hateful", "not_hateful", "neither", "normal", "clean", "neutral", "benign", "negative",
            "none", "ok")


def canonical(raw: Any) -> str:
    """A cell as text, the same for every format: 1.0 (Parquet, JSON) reads as "1", True as "true"."""
    if isinstance(raw, bool):
        return "true" if raw else "false"
    if isinstance(raw, float) and math.isfinite(raw) and raw.is_integer():
        return str(int(raw))
    return str(raw).strip().lower()


@dataclass(frozen=True)
class GoldSpec:
    column: str                             # "" = the file has no gold label (`--label none`)
    positive: frozenset[str] | None = None  # `COLUMN=A,B`: the toxic values
    threshold: float | None = None          # `COLUMN>=X`

    @classmethod
    def parse(cls, spec: str) -> GoldSpec:
        spec = spec.strip()
        if spec.lower() == "none":
            return cls("")
        if ">=" in spec:
            column, _, raw = spec.partition(">=")
            try:
                threshold = float(raw)
            except ValueError:
                raise DatasetError(f"--label {spec}: {raw!r} is not a number; write COLUMN>=0.5") from None
            return cls(column.strip(), threshold=threshold)
        column, eq, values = spec.partition("=")
        if not column.strip():
            raise DatasetError(f"--label {spec!r}: no column; write COLUMN, COLUMN=TOXIC_VALUE[,...] or COLUMN>=X")
        if not eq:
            return cls(column.strip())
        positive = frozenset(canonical(v) for v in values.split(",") if v.strip())
        if not positive:
            raise DatasetError(f"--label {spec}: no toxic values after '='; e.g. --label {column.strip()}=1")
        return cls(column.strip(), positive=positive)

    def describe(self) -> str:
        if not self.column:
            return "no gold label (--label none)"
        if self.threshold is not None:
            return f"toxic = {self.column} >= {self.threshold:g}"
        if self.positive is not None:
            return f"toxic = {self.column} in {{{', '.join(sorted(self.positive))}}}"
        return f"toxic = {self.column} ({PLAIN_VALUES})"

    def definition(self) -> str:
        """What `toxic` means under this spec, as the text naming its label set."""
        if not self.column:
            return NO_GOLD
        if self.threshold is not None:
            return f"{self.column} >= {self.threshold:g}"
        if self.positive is not None:
            return f"{self.column} in {{{', '.join(sorted(self.positive))}}}"
        return f"{self.column} ({PLAIN_VALUES})"

    def value(self, raw: Any, where: str) -> str | None:
        """"1", "0", or None when the cell is empty."""
        if raw is None or (isinstance(raw, float) and math.isnan(raw)) or str(raw).strip() == "":
            return None
        if self.threshold is not None:
            try:
                return "1" if float(raw) >= self.threshold else "0"
            except (TypeError, ValueError):
                raise DatasetError(f"{where}: {self.column} = {raw!r} is not a number, "
                                   f"but --label {self.column}>={self.threshold:g} compares numbers") from None
        value = canonical(raw)
        if self.positive is not None:
            return "1" if value in self.positive else "0"
        if value in POSITIVE:
            return "1"
        if value in NEGATIVE:
            return "0"
        raise DatasetError(
            f"{where}: {self.column} = {raw!r} is neither a toxic value ({', '.join(POSITIVE[:6])}, …) nor a "
            f"non-toxic one ({', '.join(NEGATIVE[:6])}, …); fix: --label {self.column}=VALUE[,VALUE...] names the "
            f"toxic values (every other value is non-toxic), --label {self.column}>=X thresholds a score, "
            "--label none stores no gold label")


def gold_label(spec: GoldSpec, row: dict[str, Any], where: str) -> str | int | None:
    """The `toxic` label of a row. A 0/1 integer read as itself stays as it is: the log stores it
    as "0"/"1" too."""
    raw = row.get(spec.column)
    value = spec.value(raw, where)
    plain = spec.positive is None and spec.threshold is None
    if plain and value is not None and type(raw) is int and str(raw) == value:
        return raw
    return value


def find_column(columns: Iterable[str], names: Iterable[str]) -> str | None:
    """The first of `names` the file has (case-insensitive), as the file spells it."""
    lower = {str(c).strip().lower(): str(c) for c in columns}
    return next((lower[n] for n in names if n in lower), None)


def recognized(columns: Iterable[str], names: Iterable[str]) -> dict[str, str]:
    """label name (lower case, as in `names`) -> the file's column, for every one of `names` present,
    in the file's order."""
    wanted = set(names)
    return {str(c).strip().lower(): str(c) for c in columns if str(c).strip().lower() in wanted}
