"""HateXplain (Mathew et al. 2021): `dataset.json`, one JSON object keyed by post id, each post
with `post_tokens` (the post as tokens: the text is them joined by spaces), `annotators` (three,
each with a `label`, hatespeech / offensive / normal, and the `target` groups named) and
`rationales`. Read whole (the released file is 12 MB).

Gold: the majority label, the paper's rule (two of three annotators; three different labels is
"undecided", with no gold label), stored as `class`; `toxic` is 1 for hatespeech or offensive, as
for Davidson's classes (`--label class=hatespeech` makes it hate speech only). `target`: the
groups at least two annotators named, joined by ", " ("None" when the majority named none).
Posts are keyed by their post id, so the data set's name must tell files apart: two files in this
layout (a subset with edited texts, your own posts, two releases) share post ids, and under one name
the second file's posts would be the first's comments (its texts never logged, its labels stored on
the first file's). The name is `hatexplain` only for the release's bytes (`base.catalog_name`): the
catalog pins the released dataset.json by its git blob id in the authors' repository (the file
itself could not be read where this was written; its repository's tree could), and `modlens data
fetch hatexplain` checks a download against it. Every other file in this layout is named by its
content, `file-DIGEST`, with a note."""
from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

from modlens.datasets.base import Dataset, DatasetError, DatasetItem, catalog_name
from modlens.datasets.gold import GoldSpec, gold_label

FILE = "dataset.json"
SNIFF_BYTES = 1 << 16
TOXIC_CLASSES = ("hatespeech", "offensive")
GOLD = "class in {hatespeech, offensive}"
UNDECIDED = "undecided"


def looks_like(path: Path) -> bool:
    """A HateXplain file (or a folder holding its dataset.json): JSON whose start names both keys."""
    if path.is_dir():
        path = path / FILE
    if path.suffix.lower() != ".json" or not path.is_file():
        return False
    with open(path, "rb") as fh:
        head = fh.read(SNIFF_BYTES)
    return b'"post_tokens"' in head and b'"annotators"' in head


def majority(values: list[str]) -> str:
    """The value more than half the annotators gave, else `UNDECIDED`."""
    top = Counter(values).most_common(1)
    return top[0][0] if top and top[0][1] * 2 > len(values) else UNDECIDED


def _post(where: str, post: Any) -> tuple[str, str, str]:
    """(text, majority class, majority targets) of one post."""
    try:
        tokens, annotators = post["post_tokens"], post["annotators"]
        labels = [str(a["label"]).strip().lower() for a in annotators]
        targets = Counter(str(t) for a in annotators for t in set(a.get("target") or ()))
    except (KeyError, TypeError) as err:
        raise DatasetError(f"{where}: not a HateXplain post (missing {err})") from None
    named = sorted(t for t, k in targets.items() if k * 2 > len(annotators))
    return " ".join(map(str, tokens)), majority(labels), ", ".join(t for t in named if t != "None") or "None"


def read(path: Path, *, label: GoldSpec | None = None, encoding: str | None = None, **_: object) -> Dataset:
    if path.is_dir():
        path = path / FILE
    try:
        posts = json.loads(path.read_text(encoding=encoding or "utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as err:
        raise DatasetError(f"{path}: not a JSON file ({err})") from None
    if not isinstance(posts, dict) or not posts:
        raise DatasetError(f"{path}: expected HateXplain's one object of posts keyed by post id")
    if label is not None and label.column not in ("", "class"):
        raise DatasetError(f"--label {label.column}: HateXplain's gold is the annotators' majority `class`",
                           fix="--label class=hatespeech (hate speech only), or --label none")
    items = []
    for post_id, post in posts.items():
        text, cls, target = _post(f"{path}: post {post_id}", post)
        labels = {"class": cls, "target": target}
        if label is None:
            if cls != UNDECIDED:
                labels["toxic"] = "1" if cls in TOXIC_CLASSES else "0"
        elif label.column and cls != UNDECIDED:
            toxic = gold_label(label, labels, f"{path}: post {post_id}")
            if toxic is not None:
                labels["toxic"] = str(toxic)
        items.append(DatasetItem(key=str(post_id), text=text, labels=labels))
    undecided = sum(it.labels["class"] == UNDECIDED for it in items)
    gold = label.describe() if label is not None else "toxic = majority class is hatespeech or offensive"
    name, why = catalog_name("hatexplain", path)
    return Dataset(name, path, items,
                   notes=[f"gold label: {gold}; {undecided} of {len(items)} posts have no majority (undecided): no gold label",
                          *([why] if why else [])],
                   gold=label.definition() if label is not None else GOLD)
