"""TweetEval (Barbieri et al. 2020): one task per folder, each split as two line-aligned files,
`{split}_text.txt` (a tweet a line, user names replaced by `@user`) and `{split}_labels.txt` (an
integer a line), with `mapping.txt` naming each integer (hate: 0 not-hate, 1 hate; offensive: 0
not-offensive, 1 offensive). Either file, or a task folder (its test split), is read.

`toxic` is 1 where the mapped name is a toxic value of the plain vocabulary (`gold.POSITIVE`:
hate, offensive) and 0 where it is a non-toxic one (not-hate, not-offensive); a task whose names
are neither (sentiment, emotion, irony...) gets no gold label, and so does a split whose labels
mapping.txt does not name (a split copied without it: a bare 1 is `hate` in one task, `irony` in
another). `--label label=NAME[,NAME]` picks the
toxic names itself, `--label none` stores none. The mapped name is stored as the label `label`.
The data set is `tweeteval-TASK` only for TweetEval's released files (the catalog pins the hate and
offensive tasks' SHA-256, `release_name`), TASK the pinned file's task, never the folder's name: any
other split in this layout (a user's own `hate/` folder, an edited copy) is named by its text file's
content hash, `file-DIGEST`, with a note. Rows are keyed by the text file's content hash and line
number (`base.row_key`)."""
from __future__ import annotations

from pathlib import Path

from modlens.datasets.base import (NO_GOLD, Dataset, DatasetError, DatasetItem, catalog_files, catalog_name,
                                   content_name, file_digest, row_key)
from modlens.datasets.gold import NEGATIVE, POSITIVE, GoldSpec, canonical, gold_label

TEXT_SUFFIX, LABELS_SUFFIX = "_text.txt", "_labels.txt"
MAPPING = "mapping.txt"
DEFAULT_SPLIT = "test"
CATALOG_NAME = "tweeteval"  # the catalog entry whose pins say which files are the release


def pair(path: Path) -> tuple[Path, Path] | None:
    """(text file, labels file) of the TweetEval split `path` names (either file, or a task folder
    holding a test split); None when `path` is not one. The labels file may be missing."""
    if path.is_dir():
        path = path / f"{DEFAULT_SPLIT}{TEXT_SUFFIX}"
    name = path.name
    if name.endswith(TEXT_SUFFIX):
        stem = name[:-len(TEXT_SUFFIX)]
    elif name.endswith(LABELS_SUFFIX):
        stem = name[:-len(LABELS_SUFFIX)]
    else:
        return None
    text, labels = path.with_name(stem + TEXT_SUFFIX), path.with_name(stem + LABELS_SUFFIX)
    return (text, labels) if text.is_file() else None


def _lines(path: Path, encoding: str | None) -> list[str]:
    """The file's lines without their line ends (a final line end adds no line); only \\n and \\r\\n
    end a line: a tweet may hold U+2028 or a form feed."""
    try:
        raw = path.read_text(encoding=encoding or "utf-8")
    except UnicodeDecodeError as err:
        raise DatasetError(f"{path}: not {encoding or 'utf-8'} text (byte 0x{err.object[err.start]:02x})",
                           fix="--encoding ENCODING") from None
    lines = raw.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return [line[:-1] if line.endswith("\r") else line for line in lines]


# TweetEval's sentiment task names its labels negative, neutral and positive: a sentiment, though the
# plain vocabulary reads `positive` as toxic and `negative` as not (a generic binary benchmark's words)
SENTIMENT = frozenset({"negative", "neutral", "positive"})


def _is_number(value: str) -> bool:
    try:
        float(value)
    except ValueError:
        return False
    return True


def _mapping(folder: Path, encoding: str | None) -> dict[str, str]:
    """label integer -> its name, from mapping.txt (tab-separated); empty without one."""
    f = folder / MAPPING
    if not f.is_file():
        return {}
    out = {}
    for line in _lines(f, encoding):
        number, _, name = line.partition("\t")
        if number.strip():
            out[number.strip()] = name.strip() or number.strip()
    return out


def release_name(text_path: Path, labels_path: Path, digest: str) -> tuple[str, str | None]:
    """(name, note) of a split: `tweeteval-TASK` when its text file, its labels file and the task's
    mapping.txt are the released files of one task and split (the catalog's SHA-256; TASK is the pinned
    file's, whatever the folder is called); else the text file's content name, `file-DIGEST`, with a
    note saying why (`base.catalog_name`). The labels and the mapping count too: the release's
    comments are keyed by its text file's hash, so an edited label or mapping under its name would be
    stored on the release's own comments."""
    for released in catalog_files(CATALOG_NAME, text_path):
        task, _, file = released.rpartition("/")
        split = file.removesuffix(TEXT_SUFFIX)
        companions = ((labels_path, f"{task}/{split}{LABELS_SUFFIX}"), (text_path.parent / MAPPING, f"{task}/{MAPPING}"))
        differ = [p.name for p, want in companions if not p.is_file() or want not in catalog_files(CATALOG_NAME, p)]
        if not differ:
            return f"{CATALOG_NAME}-{task}", None
        named = content_name(digest)
        return named, (f"named {named} by its content: {text_path.name} is TweetEval's {task} {split} split, but "
                       f"{' and '.join(differ)} beside it {'is' if len(differ) == 1 else 'are'} not the release's "
                       "(missing, or not the catalog's SHA-256), so it is neither pooled with it nor cited as it")
    return catalog_name(CATALOG_NAME, text_path, digest)


def read(path: Path, *, label: GoldSpec | None = None, encoding: str | None = None, **_: object) -> Dataset:
    found = pair(path)
    if found is None:
        raise DatasetError(f"{path}: not a TweetEval split (a *{TEXT_SUFFIX} file beside its *{LABELS_SUFFIX})",
                           fix="give the split's text file, e.g. datasets/hate/test_text.txt")
    text_path, labels_path = found
    if label is not None and label.column not in ("", "label"):
        raise DatasetError(f"--label {label.column}: a TweetEval split has one label column, `label`",
                           fix="--label label=NAME[,NAME] (the names of mapping.txt), or --label none")
    texts = _lines(text_path, encoding)
    values = _lines(labels_path, encoding) if labels_path.is_file() else None
    if values is not None and len(values) != len(texts):
        raise DatasetError(f"{labels_path}: {len(values)} labels for the {len(texts)} tweets of {text_path.name}",
                           fix="give the labels file of the same split")
    names = _mapping(text_path.parent, encoding)
    mapped = {canonical(names.get(v.strip(), v.strip())) for v in values or ()}
    # only mapping.txt says what an integer means (1 is `hate` in one task, `irony` in another): an
    # integer it does not name is no toxic or non-toxic value; a label written as a name ("hate") is its own
    unnamed = sorted({v.strip() for v in values or () if v.strip() not in names and _is_number(v.strip())})
    plain = (bool(mapped) and not unnamed and not mapped & SENTIMENT
             and all(m in POSITIVE or m in NEGATIVE for m in mapped))
    spec = label if label is not None else (GoldSpec("label") if plain else None)
    digest = file_digest(text_path)
    items = []
    for n, text in enumerate(texts):
        labels: dict[str, str] = {}
        if values is not None:
            name = names.get(values[n].strip(), values[n].strip())
            labels["label"] = name
            if spec is not None and spec.column:
                toxic = gold_label(spec, {"label": name}, f"{labels_path}: line {n + 1}")
                if toxic is not None:
                    labels["toxic"] = str(toxic)
        items.append(DatasetItem(key=row_key(digest, n), text=text, labels=labels))
    name, why = release_name(text_path, labels_path, digest)
    if values is None:
        note = f"no gold label: {labels_path.name} not found beside {text_path.name}"
    elif spec is None and unnamed:
        missing = (f"{MAPPING} not found beside {text_path.name}" if not (text_path.parent / MAPPING).is_file() else
                   f"{MAPPING} beside {text_path.name} names no label" if not names else
                   f"{MAPPING} does not name label {', '.join(unnamed[:5])}")
        note = (f"no gold label: {missing}, so nothing says which label integer is toxic; "
                "--label label=N[,N] names the toxic ones")
    elif spec is None or not spec.column:
        note = ("no gold label (--label none)" if spec is not None else
                f"no gold label: the names of {MAPPING} ({', '.join(sorted(mapped))}) say neither toxic nor not; "
                "--label label=NAME[,NAME] names the toxic ones")
    else:
        note = f"gold label: {spec.describe()}, from {labels_path.name}" + (f" and {MAPPING}" if names else "")
    return Dataset(name, text_path, items, notes=[note, *([why] if why else [])],
                   gold=spec.definition() if spec is not None else NO_GOLD, source_id=digest)
