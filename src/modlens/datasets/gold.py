"""Gold labels and the columns worth keeping: which column says whether a text is toxic, how its
values become the `toxic` label ("1"/"0"), and which other columns are stored as labels.

`--label COLUMN` reads the column's values by the vocabulary below; `--label COLUMN=A,B` names
the toxic values (every other non-empty value is non-toxic); `--label COLUMN>=X` thresholds a
score (Civil Comments' `toxicity`; `>`, `>=`, `<` and `<=` all work: SASS's rule is `> 0.5`);
`--label none` declares no gold label. A `=` or threshold spec that makes no row toxic, or every
row, is an error naming the values the column holds (`check_matches`): it would define no contrast. A value the vocabulary
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
import operator
from collections import Counter
from dataclasses import dataclass
from typing import Any, Callable, Iterable

from modlens.datasets.base import NO_GOLD, DatasetError

# in order of preference: the first one a file has is its gold label
GOLD_COLUMNS = ("toxic", "is_toxic", "toxicity_label", "hateful", "is_hateful", "is_hate", "hate", "offensive",
                "is_offensive", "abusive", "is_abusive", "label", "class")
# per-group results (per target identity, per platform) in the report
GROUP_COLUMNS = ("target_ident", "target", "target_group", "targets", "group", "identity", "identity_group",
                 "identities", "platform", "source", "site", "subreddit", "language", "lang")
ID_COLUMNS = ("id", "comment_id", "post_id", "tweet_id", "case_id", "item_id")
TEXT_COLUMNS = ("text", "comment_text", "tweet", "sentence")

POSITIVE = ("1", "true", "t", "yes", "y", "toxic", "hateful", "hate", "hate_speech", "hate speech", "hatespeech",
            "offensive", "offensive_language", "off", "abusive", "abuse", "insult", "positive")
PLAIN_VALUES = "1/true/yes/toxic/hateful… vs 0/false/no/neither…"  # how a plain `--label COLUMN` reads values
NEGATIVE = ("0", "false", "f", "no", "n", "non-toxic", "nontoxic", "not toxic", "not_toxic", "non-hateful",
            "nonhateful", "not hateful", "not_hateful", "nothate", "not-hate", "not_hate", "not hate", "not-offensive",
            "not_offensive", "not offensive", "not", "neither", "normal", "clean", "neutral", "benign", "negative",
            "none", "ok")


# threshold operators, the two-character ones first (">=" holds ">")
OPERATORS: dict[str, Callable[[float, float], bool]] = {">=": operator.ge, "<=": operator.le, ">": operator.gt,
                                                        "<": operator.lt}


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
    threshold: float | None = None          # `COLUMN>=X` (or >, <, <=: `op`)
    op: str = ">="
    unlabelled: frozenset[str] = frozenset()  # values that mean "no gold label" (Jigsaw's test labels: -1)

    @classmethod
    def parse(cls, spec: str) -> GoldSpec:
        spec = spec.strip()
        if spec.lower() == "none":
            return cls("")
        op = next((o for o in OPERATORS if o in spec), None)
        if op is not None:
            column, _, raw = spec.partition(op)
            try:
                threshold = float(raw)
            except ValueError:
                raise DatasetError(f"--label {spec}: {raw.strip()!r} is not a number; write COLUMN{op}0.5") from None
            if not column.strip():
                raise DatasetError(f"--label {spec!r}: no column; write e.g. toxicity{op}0.5")
            return cls(column.strip(), threshold=threshold, op=op)
        column, eq, values = spec.partition("=")
        if not column.strip():
            raise DatasetError(f"--label {spec!r}: no column; write COLUMN, COLUMN=TOXIC_VALUE[,...] or COLUMN>=X "
                               "(or >, <, <=)")
        if not eq:
            return cls(column.strip())
        positive = frozenset(canonical(v) for v in values.split(",") if v.strip())
        if not positive:
            raise DatasetError(f"--label {spec}: no toxic values after '='; e.g. --label {column.strip()}=1")
        return cls(column.strip(), positive=positive)

    def describe(self) -> str:
        """`definition` as a reader's note says it."""
        return f"toxic = {self.definition()}" if self.column else "no gold label (--label none)"

    def _unlabelled(self) -> str:
        return f"; {', '.join(sorted(self.unlabelled))}: no gold label" if self.unlabelled else ""

    def definition(self) -> str:
        """What `toxic` means under this spec, as the text naming its label set."""
        if not self.column:
            return NO_GOLD
        if self.threshold is not None:
            return f"{self.column} {self.op} {self.threshold:g}"
        if self.positive is not None:
            return f"{self.column} in {{{', '.join(sorted(self.positive))}}}"
        return f"{self.column} ({PLAIN_VALUES}){self._unlabelled()}"

    def value(self, raw: Any, where: str) -> str | None:
        """"1", "0", or None when the cell is empty (or one of `unlabelled`)."""
        if raw is None or (isinstance(raw, float) and math.isnan(raw)) or str(raw).strip() == "":
            return None
        if self.unlabelled and canonical(raw) in self.unlabelled:
            return None
        if self.threshold is not None:
            try:
                return "1" if OPERATORS[self.op](float(raw), self.threshold) else "0"
            except (TypeError, ValueError):
                raise DatasetError(f"{where}: {self.column} = {raw!r} is not a number, "
                                   f"but --label {self.column}{self.op}{self.threshold:g} compares numbers") from None
        value = canonical(raw)
        if self.positive is not None:
            return "1" if value in self.positive else "0"
        if value in POSITIVE:
            return "1"
        if value in NEGATIVE:
            return "0"
        raise DatasetError(
            f"{where}: {self.column} = {raw!r} is neither a toxic value ({', '.join(POSITIVE[:6])}, …) nor a "
            f"non-toxic one ({', '.join(NEGATIVE[:6])}, …)",
            fix=f"--label {self.column}=VALUE[,VALUE...] names the toxic values (every other value is non-toxic), "
                f"--label {self.column}>=X thresholds a score, --label none stores no gold label")


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


MAX_SHOWN = 12  # distinct values an error lists


def check_matches(spec: GoldSpec, rows: Iterable[dict[str, Any]], where: str,
                  names: dict[str, str] | None = None) -> None:
    """Raise when a `COLUMN=VALUES` or threshold spec makes no row toxic, or every row: the error
    names the values the column holds (most frequent first, with their counts) and the close
    matches of the values asked for. `names`: what a reader stores for a raw value (Davidson's
    `class` 0 -> hate_speech), accepted as that value and shown beside it."""
    if not spec.column or (spec.positive is None and spec.threshold is None):
        return
    names = names or {}
    counts: Counter[str] = Counter()
    for row in rows:
        raw = row.get(spec.column)
        if raw is None or (isinstance(raw, float) and math.isnan(raw)) or str(raw).strip() == "":
            continue
        counts[canonical(raw)] += 1
    total = sum(counts.values())
    if not total:
        return  # an empty column: every row has no gold label, which the notes already say
    held = ", ".join(f"{v}{f' ({names[v]})' if v in names else ''} ×{n}" for v, n in counts.most_common(MAX_SHOWN))
    held += ", …" if len(counts) > MAX_SHOWN else ""
    if spec.threshold is not None:
        numbers = []
        for v in counts:
            try:
                numbers.append(float(v))
            except ValueError:
                return  # a non-number: `value` names the row when the reader meets it
        toxic = sum(n for v, n in counts.items() if OPERATORS[spec.op](float(v), spec.threshold))
        if 0 < toxic < total:
            return
        asked = f"{spec.column}{spec.op}{spec.threshold:g}"
        held = f"values from {min(numbers):g} to {max(numbers):g}"
        fix = "choose a threshold inside that range"
    else:
        assert spec.positive is not None
        toxic = sum(n for v, n in counts.items() if v in spec.positive or names.get(v) in spec.positive)
        if 0 < toxic < total:
            return
        asked = f"{spec.column}={','.join(sorted(spec.positive))}"
        known = [*counts, *names.values()]
        close = sorted({m for v in spec.positive for m in _close(v, known)})
        fix = ("name only the toxic values" if toxic else f"did you mean {' or '.join(close)}?" if close else
               f"name some of the values {spec.column} holds")
    what = "no row is toxic" if toxic == 0 else "every row is toxic"
    raise DatasetError(f"{where}: --label {asked}: {what} ({total} rows with a value): {spec.column} holds {held}",
                       fix=f"{fix} (--label none stores no gold label)")


def _close(value: str, known: list[str]) -> list[str]:
    import difflib

    exact = [k for k in known if value in k or k in value]  # `hate` -> hate_speech
    return exact[:3] or difflib.get_close_matches(value, known, n=3, cutoff=0.6)


# --- benchmark layouts ------------------------------------------------------------------------------
@dataclass(frozen=True)
class Layout:
    """A benchmark's own columns: recognized by `columns` (lower case, all present), its gold label
    read by `gold` (a --label spec, its column as the benchmark names it) and `keep` stored as labels."""
    name: str
    columns: tuple[str, ...]
    gold: str
    keep: tuple[str, ...] = ()
    unlabelled: tuple[str, ...] = ()


JIGSAW_LABELS = ("toxic", "severe_toxic", "obscene", "threat", "insult", "identity_hate")
# first match wins: the most specific layouts first
LAYOUTS = (
    # Jigsaw Toxic Comment Classification (Kaggle 2018): six 0/1 columns; its test labels use -1 for
    # comments that were not scored
    Layout("Jigsaw Toxic Comment Classification", JIGSAW_LABELS, "toxic", JIGSAW_LABELS[1:], ("-1",)),
    # Civil Comments (as TFDS and Hugging Face ship it): fractions of raters; toxic at >= 0.5, the
    # dataset's own convention
    Layout("Civil Comments", ("toxicity", "severe_toxicity", "identity_attack"), "toxicity>=0.5",
           ("severe_toxicity", "obscene", "threat", "insult", "identity_attack", "sexual_explicit")),
    # HatEval (SemEval-2019 Task 5): HS hate speech 0/1, TR targeted, AG aggressive
    Layout("HatEval (SemEval-2019 Task 5)", ("hs",), "HS", ("tr", "ag")),
    # OLID / OffensEval 2019: subtask_a OFF/NOT; b targeted (TIN/UNT), c the target (IND/GRP/OTH)
    Layout("OLID (OffensEval 2019)", ("subtask_a",), "subtask_a", ("subtask_b", "subtask_c")),
    # the Dynabench hate set (Vidgen et al. 2021, "Learning from the worst"): label hate/nothate
    Layout("Dynabench hate (Vidgen et al. 2021)", ("label", "type", "level", "round"), "label", ("type", "level", "round")),
)


def find_layout(columns: Iterable[str]) -> tuple[Layout, GoldSpec, dict[str, str]] | None:
    """The benchmark layout these columns have: (layout, its gold spec with the file's spelling of
    the column, {label name: column} of the columns it keeps, named as the file spells them, like
    the gold column), or None."""
    lower = {str(c).strip().lower(): str(c) for c in columns}
    for layout in LAYOUTS:
        if all(c in lower for c in layout.columns):
            spec = GoldSpec.parse(layout.gold)
            column = lower[spec.column.lower()]
            spec = GoldSpec(column, spec.positive, spec.threshold, spec.op, frozenset(layout.unlabelled))
            return layout, spec, {lower[c]: lower[c] for c in layout.keep if c in lower}
    return None


# --- columns that look like labels, for a file where nothing matched --------------------------------
LABEL_HINTS = ("label", "class", "hate", "toxic", "offens", "abus", "insult", "gold", "annot", "hs", "subtask", "tox")
MAX_LABEL_VALUES = 8   # more distinct non-numeric values than this is not a label column
SAMPLE_ROWS = 2000     # rows looked at


def label_candidates(columns: Iterable[str], rows: Iterable[dict[str, Any]]) -> list[str]:
    """For a file whose gold label was not found: its columns that look like labels, each with the
    `--label` flag that reads it ("HS (values 0, 1): --label HS"). A column qualifies by its values:
    the plain vocabulary (0/1, true/false, hate/...), a fraction in [0, 1] (thresholded at 0.5), or
    a few other values (named with `=`); columns named like labels come first."""
    columns = [str(c) for c in columns]
    values: dict[str, Counter[str]] = {c: Counter() for c in columns}
    for _, row in zip(range(SAMPLE_ROWS), rows):
        for c in columns:
            v = row.get(c)
            if v is not None and not isinstance(v, (dict, list)) and str(v).strip() != "":
                values[c][canonical(v)] += 1
    out: list[tuple[bool, str]] = []
    for c in columns:
        seen = values[c]
        if not seen:
            continue
        shown = ", ".join(sorted(seen)[:MAX_LABEL_VALUES])
        numbers = _numbers(seen)
        hinted = any(h in c.lower() for h in LABEL_HINTS)
        if all(v in POSITIVE or v in NEGATIVE for v in seen) and len(seen) >= 2:
            out.append((hinted, f"{c} (values {shown}): --label {c}"))
        elif numbers is not None and len(seen) > 2 and 0 <= min(numbers) and max(numbers) <= 1:
            out.append((hinted, f"{c} (numbers from {min(numbers):g} to {max(numbers):g}): --label '{c}>=0.5'"))
        elif numbers is None and 2 <= len(seen) <= MAX_LABEL_VALUES and max(map(len, seen)) <= 24:
            out.append((hinted, f"{c} (values {shown}): --label {c}=TOXIC_VALUE[,...]"))
    return [text for _, text in sorted(out, key=lambda e: not e[0])]


def _numbers(values: Counter[str]) -> list[float] | None:
    try:
        return [float(v) for v in values]
    except ValueError:
        return None
