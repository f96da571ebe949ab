"""The one place dataset readers are registered, plus shorthand names and layout sniffing.

Adding a layout = one module with `read(path, **options) -> Dataset` + one line in `READERS`.
"""
from __future__ import annotations

import importlib
import os
from pathlib import Path

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
}


def data_dirs() -> list[Path]:
    """Where shorthand names are looked up: $MODLENS_DATA, then ../shared/data from the working
    directory and from the repository."""
    dirs = []
    if os.environ.get("MODLENS_DATA"):
        dirs.append(Path(os.environ["MODLENS_DATA"]))
    dirs.append(Path.cwd().parent / "shared" / "data")
    dirs.append(Path(__file__).resolve().parents[3].parent / "shared" / "data")
    return dirs


def resolve(dataset: str) -> tuple[Path, str | None]:
    """A path, or a shorthand name -> (file path, implied format)."""
    path = Path(dataset).expanduser()
    if path.exists():
        return path, None
    if dataset in SHORTHANDS:
        for root in data_dirs():
            candidate = root / SHORTHANDS[dataset]
            if candidate.is_file():
                return candidate, dataset
        tried = ", ".join(str(d) for d in data_dirs())
        raise DatasetError(f"dataset {dataset!r} not found under {tried}; set MODLENS_DATA to the data folder")
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
