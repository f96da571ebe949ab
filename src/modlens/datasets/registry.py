"""The one place dataset readers are registered, plus shorthand names and layout sniffing.

Adding a layout = one module with `read(path, **options) -> Dataset` + one line in `READERS`; an
installed package adds one through the `modlens.readers` entry point (see CONTRIBUTING.md).
"""
from __future__ import annotations

import inspect
from pathlib import Path
from types import ModuleType
from typing import Any

from modlens import paths
from modlens.datasets import hatexplain, sass, tweeteval
from modlens.datasets.base import (Dataset, DatasetError, DatasetNotFound, check_rows, file_digest, is_jsonl, is_parquet,
                                   iter_rows, read_columns, text_format)
from modlens.datasets.gold import TEXT_COLUMNS, GoldSpec, check_matches, find_column
from modlens.names import close_matches
from modlens.names import MODULES, PluginError, Registry, UnknownName

READERS: dict[str, str] = {
    "noisyhate": "noisyhate",
    "hatecheck": "hatecheck",
    "davidson": "davidson",
    "sass": "sass",
    "tweeteval": "tweeteval",
    "hatexplain": "hatexplain",
    "csv": "generic",
    "jsonl": "generic",
    "parquet": "generic",
}
# the layouts `--format` takes: the built-ins above, then installed plug-ins (sniffing knows only built-ins)
READER_REGISTRY: Registry[ModuleType] = Registry("dataset format", "modlens.datasets", READERS, group="modlens.readers",
                                                 needs=("read",), kind=MODULES)

SHORTHANDS = paths.SHORTHANDS  # shorthand -> file under the data directory


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
        raise DatasetNotFound(f"dataset {dataset!r} not found under {tried}",
                              fix=f"`modlens data fetch {dataset}` downloads it, or set {paths.DATA_ENV} to a folder "
                                  f"holding {SHORTHANDS[dataset]}")
    close = close_matches(dataset, SHORTHANDS)
    fix = (f"did you mean {' or '.join(close)}?" if close else
           f"check the path, or name a shorthand: {', '.join(SHORTHANDS)}")
    raise DatasetNotFound(f"{dataset}: no such file, and not one of the shorthands", fix=fix)


# built-in layouts and the columns that identify them (lower case); the first match wins
SIGNATURES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("noisyhate", ("clean", "perturbed", "perturbed_word")),
    ("hatecheck", ("case_id", "test_case", "label_gold")),
    ("davidson", ("tweet", "class")),
)


def _sass_evidence(columns: list[str]) -> list[str]:
    """The columns that make a file SASS: a text and a category column plus a human score, rater
    columns, the filtered/unfiltered `tag` or Perspective's recorded score (the released TSV
    without human scores has no other sign)."""
    text, category = sass.find_column(columns, "text"), sass.find_column(columns, "category")
    if not text or not category:
        return []
    signs = [c for c in (sass.human_column(columns), sass.find_column(columns, "perspective"),
                         find_column(columns, ("tag",))) if c]
    signs += [c for c in columns if c.lower().startswith(sass.RATER_PREFIXES)][:2]
    return [*signs, category] if signs else []


# layouts that are not one table with a header: their readers check the files themselves
OWN_FILES = ("tweeteval", "hatexplain")


def own_files(path: Path) -> tuple[str, str] | None:
    """(format, why) for a layout of `OWN_FILES` (TweetEval's text and label files, HateXplain's
    JSON), else None."""
    found = tweeteval.pair(path)
    if found is not None:
        text, labels = found
        return "tweeteval", f"{text.name}{' with ' + labels.name if labels.is_file() else ''}"
    if hatexplain.looks_like(path):
        return "hatexplain", "a JSON object of posts with post_tokens and annotators"
    return None


def detect(path: Path, encoding: str | None = None) -> tuple[str, str]:
    """(format, why): the layout guessed from the file's columns (its header only)."""
    own = own_files(path)
    if own is not None:
        return own
    if path.is_dir():
        for fmt, name in (("hatecheck", "test_suite_cases.csv"), ("davidson", "labeled_data.csv")):
            if (path / name).is_file():
                return fmt, f"a folder holding {name}"
        raise DatasetError(f"{path}: a directory, and not a known dataset folder; give a file")
    columns = [str(c) for c in read_columns(path, encoding)]
    lower = {c.strip().lower(): c for c in columns}
    for fmt, needed in SIGNATURES:
        if all(n in lower for n in needed):
            return fmt, f"columns {', '.join(lower[n] for n in needed)}"
    evidence = _sass_evidence(columns)
    if evidence:
        scored = sass.human_column(columns) or any(c.lower().startswith(sass.RATER_PREFIXES) for c in columns)
        return "sass", f"columns {', '.join(evidence)}" + ("" if scored else "; no human scores: categories only")
    fmt = "parquet" if is_parquet(path) else "jsonl" if is_jsonl(path) else "csv"
    text = find_column(columns, TEXT_COLUMNS)
    why = f"text column {text}" if text else "no built-in layout's columns"
    return fmt, f"{why}; columns: {', '.join(columns[:12])}{', …' if len(columns) > 12 else ''}"


def sniff(path: Path) -> str:
    """Guess the layout from the columns of the file."""
    return detect(path)[0]


def load(dataset: str, fmt: str | None = None, *, label: str | GoldSpec | None = None, **options: Any) -> Dataset:
    """Read a dataset; `label` is a `--label` spec (see `gold`). The returned dataset's first note
    says which layout was read and why."""
    path, implied = resolve(dataset)
    encoding = options.get("encoding")
    own = own_files(path) if not fmt and not implied else None
    if path.is_file() and own is None and fmt not in OWN_FILES:  # a folder's reader picks its file
        check_rows(path, encoding)
    if fmt:
        why = "--format"
    elif implied:
        fmt, why = implied, f"shorthand {dataset}"
    else:
        fmt, why = own if own is not None else detect(path, encoding)  # `detect` would look for `own` again
    try:
        module = READER_REGISTRY.load(fmt)
    except (UnknownName, PluginError) as err:
        raise DatasetError(err.message, err.fix) from None
    if options.get("name") is not None and "name" not in inspect.signature(module.read).parameters:
        raise DatasetError(f"--name: the {fmt} reader names its data set itself (by its bytes: the catalog's name "
                           "for the released files, else file-DIGEST)",
                           fix="drop --name" if fmt in OWN_FILES else
                           "drop --name, or read the file as a plain table (--format csv --name NAME --id-col COLUMN)")
    if options.get("id_col") and "id_col" not in inspect.signature(module.read).parameters:
        raise DatasetError(f"--id-col: the {fmt} reader keys its rows itself and takes no id column",
                           fix="drop --id-col" if fmt in OWN_FILES else
                           "drop --id-col, or read the file as a plain table (--format csv --id-col COLUMN)")
    spec = GoldSpec.parse(label) if isinstance(label, str) else label
    data: Dataset = module.read(path, label=spec, **options)
    if data.digest is None and data.path.is_file():  # keyed by ids: the bytes read are recorded all the same
        data.digest = file_digest(data.path)
    if fmt in OWN_FILES:
        data.format = fmt
        data.notes.insert(0, f"read {path.name} as {fmt} ({why})")
        return data
    if spec is not None and data.path.is_file():  # a `=`/threshold spec must split the rows (see gold)
        check_matches(spec, iter_rows(data.path, [spec.column] if is_parquet(data.path) else None, encoding),
                      f"{data.path.name}", getattr(module, "VALUE_NAMES", {}).get(spec.column))
    data.format = fmt
    data.notes.insert(0, f"read {path.name} as {fmt} ({why})")
    if implied is None and dataset in SHORTHANDS:  # the path wins; its layout, not its name, says what it is
        data.notes.insert(1, f"{dataset}: the path {path} is read, not the shorthand's data set; it is named "
                             f"{data.name} by what read it")
    if data.path.is_file() and not is_parquet(data.path):
        data.notes[1:1] = text_format(data.path, encoding).notes  # a BOM, another encoding or delimiter
    return data
