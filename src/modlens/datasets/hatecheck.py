"""HateCheck: functional test cases with gold labels. Every case is a comment; a `spell_*` case
(character swap, deletion, leet, spaces) is also recorded as a variant of its clean original
(`ref_case_id`, strategy `human:hatecheck`), which makes a clean/perturbed set with benign cases too.
Cases are keyed by their `case_id`: HateCheck's own stable ids."""
from __future__ import annotations

from pathlib import Path

from modlens.datasets.base import Dataset, DatasetItem, catalog_name, read_rows, require_columns
from modlens.datasets.gold import GoldSpec, gold_label
from modlens.rows import Variant

STRATEGY = "human:hatecheck"
GOLD = "label_gold in {hateful}"


def _id(value: object) -> str:
    """HateCheck ids come as '12' or '12.0' depending on the writer."""
    s = str(value).strip()
    return s[:-2] if s.endswith(".0") else s


def read(path: Path, *, label: GoldSpec | None = None, encoding: str | None = None, **_: object) -> Dataset:
    """Read whole: a `spell_*` case refers to its original by id, anywhere in the file."""
    if path.is_dir():
        path = path / "test_suite_cases.csv"
    rows = read_rows(path, encoding)
    require_columns(path, rows, ["case_id", "test_case", "label_gold", "functionality"]
                    + ([label.column] if label is not None and label.column else []))
    items: dict[str, DatasetItem] = {}
    for n, row in enumerate(rows):
        case = _id(row["case_id"])
        labels = {"label_gold": row["label_gold"], "functionality": row["functionality"],
                  "toxic": "1" if row["label_gold"].strip() == "hateful" else "0"}
        if label is not None:
            toxic = gold_label(label, row, f"{path}: row {n + 2}") if label.column else None
            del labels["toxic"]
            if toxic is not None:
                labels["toxic"] = str(toxic)
        for col in ("target_ident", "ref_case_id"):
            if row.get(col) not in (None, ""):
                labels[col] = _id(row[col]) if col == "ref_case_id" else row[col]
        items[case] = DatasetItem(key=f"case-{case}", text=row["test_case"].strip(), labels=labels)
    for case, item in items.items():
        func, ref = item.labels["functionality"], item.labels.get("ref_case_id")
        if func.startswith("spell_") and ref in items:
            src = items[ref]
            src.variants.append(Variant(text=item.text, strategy=STRATEGY, seed=0, source_text=src.text,
                                        params={"types": [func], "case_id": case}))
    gold = label.describe() if label is not None else "toxic = label_gold is hateful"
    name, why = catalog_name("hatecheck", path)
    return Dataset(name, path, list(items.values()),
                   notes=[f"gold label: {gold}; functionality and target_ident stored for the per-functionality table",
                          *([why] if why else [])],
                   gold=label.definition() if label is not None else GOLD)
