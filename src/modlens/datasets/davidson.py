"""Davidson et al. 2017 tweets: `class` 0 hate speech, 1 offensive, 2 neither. `toxic` is 1 for
hate or offensive (the Perspective definition of toxicity covers both); `--label class=0` (or
`class=hate_speech`: the stored names are accepted too) makes it hate speech only. Streamed row by row. Tweets are keyed by the file's index column (its unnamed
first column, or `id`); a file without one by its content hash and row number (`base.row_key`).

The tweets come from the Twitter API with their HTML entities (`&amp;`, `&#8220;`, `&#128557;`):
the `html_unescape` step decodes them as the file is read (`html_unescape=False` keeps them), and
the audit records each change as a normalization of the file's text."""
from __future__ import annotations

from pathlib import Path
from typing import Any, Iterator

from modlens.datasets.base import (Dataset, DatasetError, DatasetItem, catalog_name, file_digest, iter_rows, read_columns,
                                   require_columns, row_key)
from modlens.datasets.gold import GoldSpec, gold_label
from modlens.normalize.steps import html_unescape as entities

CLASSES = {"0": "hate_speech", "1": "offensive_language", "2": "neither"}
VALUE_NAMES = {"class": CLASSES}  # what the log stores for a raw value: `--label class=` takes either
DEFAULT_GOLD = "toxic = class in {0, 1} (hate speech or offensive)"
GOLD = "class in {hate_speech, offensive_language}"  # the default label set's definition


def read(path: Path, *, label: GoldSpec | None = None, encoding: str | None = None,
         html_unescape: bool | None = None, **_: object) -> Dataset:
    if path.is_dir():
        path = path / "labeled_data.csv"
    columns = read_columns(path, encoding)
    require_columns(path, columns, ["tweet", "class"])
    if label is not None and label.column:
        require_columns(path, columns, [label.column])

    digest = None if "" in columns or "id" in columns else file_digest(path)
    unescape = html_unescape is not False  # on unless turned off: tweets carry HTML entities

    def items() -> Iterator[DatasetItem]:
        for n, row in enumerate(iter_rows(path, encoding=encoding)):
            own = row.get("") or row.get("id")
            cls = str(row["class"]).strip()
            if cls not in CLASSES:
                raise DatasetError(f"{path}: row {n + 2}: class {cls!r} is not 0, 1 or 2")
            labels: dict[str, Any] = {"class": CLASSES[cls], "toxic": "0" if cls == "2" else "1"}
            if label is not None:
                toxic = gold_label(label, row, f"{path}: row {n + 2}") if label.column else None
                if label.column == "class" and label.positive is not None and CLASSES[cls] in label.positive:
                    toxic = "1"  # named by the class name the log stores
                labels.pop("toxic")
                if toxic is not None:
                    labels["toxic"] = toxic
            for col in ("count", "hate_speech", "offensive_language", "neither"):
                if row.get(col) not in (None, ""):
                    labels[f"votes_{col}" if col != "count" else "raters"] = row[col]
            key = f"tweet-{own}" if own not in (None, "") else row_key(digest or file_digest(path), n)
            text, read_as = row["tweet"], None
            if unescape:
                decoded = entities.unescape(text)
                if decoded.edits:
                    text, read_as = decoded.text, (row["tweet"], decoded)
            yield DatasetItem(key=key, text=text, labels=labels, read_as=read_as)

    gold = label.describe() if label is not None else DEFAULT_GOLD
    notes = [f"gold label: {gold}"]
    notes.append("HTML entities decoded (&amp; -> &, &#128557; -> the emoji): step html_unescape, recorded as a "
                 "normalization; --no-html-unescape keeps them" if unescape else "HTML entities kept (--no-html-unescape)")
    name, why = catalog_name("davidson", path, digest)
    notes += [why] if why else []
    return Dataset(name, path, items, notes=notes, text_steps=[entities.NAME] if unescape else [],
                   gold=label.definition() if label is not None else GOLD, source_id=digest)
