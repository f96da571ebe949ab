"""The one place dataset readers are registered, plus shorthand names and layout sniffing.

Adding a layout = one module with `read(path, **options) -> Dataset` + one line in `READERS`.
"""
from __future__ import annotations

import importlib
from pathlib import Path

from modlens import paths
from modlens.datasets.base import Dataset, DatasetError, read_rows

READERS: dict[str, str] = {
    "noisyhate": "noisyhate",
    "hatecheck": "hatecheck",
    "davidson": "davidson",
    "sass": "sass",
    "csv": "generic",
    "jsonl": "generic",
}

# shorthand -> file under the data directory
SHORTHANDS: dict[str, str] = {
    "noisyhate": "noisyhate/dev.csv",
    "hatecheck": "hatecheck/test_suite_cases.csv",
    "davidson": "davidson/labeled_data.csv",
    "sass": "sass/sass.csv",  # fetch-only (no licence to ship it): `modlens data fetch sass`
}


def resolve(dataset: str) -> tuple[Path, str | None]:
    """A path, or a shorthand name -> (file path, implied format)."""
    path = Path(dataset).expanduser()
    if path.exists():
        return path, None
    if dataset in SHORTHANDS:
        found = paths.find_data(SHORTHANDS[dataset])
        if found is not None:
            return found, dataset
        tried = ", ".join(str(d) for d in paths.data_dirs())
        raise DatasetError(f"dataset {dataset!r} not found under {tried}; "
                           f"`modlens data fetch {dataset}` downloads it, or set {paths.DATA_ENV} to a folder holding {SHORTHANDS[dataset]}")
    raise DatasetError(f"{dataset}: no such file, and not one of the shorthands {', '.join(SHORTHANDS)}")


def sniff(path: Path) -> str:
    """Guess the layout from the columns of the file."""
    if path.is_dir():
        if (path / "test_suite_cases.csv").is_file():
            return "hatecheck"
        if (path / "labeled_data.csv").is_file():
            return "davidson"
        raise DatasetError(f"{path}: a directory, and not a known dataset folder; give a file")
    rows = read_rows(path)
    cols = {str(c).lower() for c in (rows[0] if rows else {})}
    if {"clean", "perturbed", "perturbed_word"} <= cols:
        return "noisyhate"
    if {"case_id", "test_case", "label_gold"} <= cols:
        return "hatecheck"
    if {"tweet", "class"} <= cols:
        return "davidson"
    if "category" in cols and cols & {"human", "human_score", "human score", "human toxicity"}:
        return "sass"
    return "jsonl" if path.suffix.lower() in (".jsonl", ".ndjson", ".json") else "csv"


def load(dataset: str, fmt: str | None = None, **options) -> Dataset:
    path, implied = resolve(dataset)
    fmt = fmt or implied or sniff(path)
    if fmt not in READERS:
        raise DatasetError(f"unknown dataset format {fmt!r}; known: {', '.join(READERS)}")
    module = importlib.import_module(f"modlens.datasets.{READERS[fmt]}")
    return module.read(path, **options)
