"""Item sets: a fixed sample of logged comments that every rater of a study sees (the Perspective study drew
300 comments, 100 per platform, roughly balanced over Perspective's score deciles, avoiding long
comments). Live pages change and delete comments, so overlap between raters (what alpha and
majorities need) is planned here instead of left to chance.

`draw` reads the study log (comments seen in the browser, and audited dataset items, which are
comments of their dataset's platform): per platform, the comments within the word limits, put in
strata (a detector's score decile, or the value of a stored label), then taken one stratum after
the other in a seeded random order until the platform has its share, so strata are balanced
where the log allows it and the rest is filled from the strata that still have comments.

The set is a JSON file (`itemset.json` in a study folder):

    {"format": "modlens-itemset", "format_version": 1, "sha256": "...",
     "params": {detector, by, per_platform, platforms, min_words, max_words, seed, log, counts,
                [label_sets: by the gold label, the set read per source]},
     "items": [{"id": "i001", "platform": "youtube", "comment_key": "...", "text": "...",
                "stratum": "0.3-0.4", "score": 0.34}, ...]}

`sha256` covers params and items (canonical JSON), so an assignment can say which set it is for.
"""
from __future__ import annotations

import hashlib
import json
import random
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

from modlens.errors import ModlensError, check_format
from modlens.studylog.records.labels import GOLD

FORMAT = "modlens-itemset"
FORMAT_VERSION = 1
READS = range(1, FORMAT_VERSION + 1)  # every version a modlens ever wrote
FILE = "itemset.json"
CALIBRATION_PLATFORM = "study"   # gold comments, anchors and review items: never sampled
DRAW_AGAIN = "draw the item set again with `modlens sample`"


class ItemSetError(ModlensError, ValueError):
    """A draw that cannot be made or a file that is not an item set; the message says what to do."""


@dataclass(frozen=True)
class Item:
    id: str
    platform: str
    comment_key: str
    text: str
    stratum: str
    score: float | None


def _canonical(value: Any) -> bytes:
    return json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def checksum(params: dict[str, Any], items: list[dict[str, Any]]) -> str:
    return hashlib.sha256(_canonical({"params": params, "items": items})).hexdigest()


def decile(score: float) -> str:
    k = min(9, max(0, int(score * 10)))
    return f"{k / 10:.1f}-{(k + 1) / 10:.1f}"


def _detector(log: Any, spec: str) -> dict[str, Any]:
    name, _, version = spec.partition("@")
    rows = log.query("SELECT detector_id, name, version FROM detectors WHERE name = ? ORDER BY detector_id", (name,))
    if version:
        rows = [r for r in rows if r["version"] == version]
    if not rows:
        have = sorted({f"{r['name']}@{r['version']}" for r in log.query("SELECT name, version FROM detectors")})
        raise ItemSetError(f"--detector {spec!r}: the log has no scores of that detector; it has: "
                           f"{', '.join(have) or 'none'}", fix="name one of them, or score with `modlens rescore`")
    newest: dict[str, Any] = rows[-1]  # the newest version when none is named
    return newest


def _gold(log: Any, asked: Sequence[str]) -> tuple[dict[str, dict[str, Any]], dict[int, str]]:
    """The label sets gold labels are read from and the gold labels, as the report takes them."""
    from modlens.analysis.data import LabelSetError, chosen_gold

    try:
        return chosen_gold(log, asked)
    except LabelSetError as err:
        raise ItemSetError(err.message, fix=err.fix) from None


def _label_names(log: Any) -> str:
    """The labels the log holds, said for a --label it does not hold."""
    names = [r["name"] for r in log.query("SELECT DISTINCT name FROM labels ORDER BY name")]
    gold = bool(log.query("SELECT 1 FROM gold_labels WHERE value IS NOT NULL LIMIT 1"))
    held = [*names, *([f"{GOLD} (the gold label)"] if gold else [])]
    return f"it has: {', '.join(held)}" if held else "it has no labels"


def draw(db: str | Path, *, per_platform: int, detector: str | None = None, label: str | None = None,
         platforms: list[str] | None = None, min_words: int = 3, max_words: int = 60, seed: int = 0,
         label_sets: Sequence[str] = ()) -> dict[str, Any]:
    """The item set (the file's content) drawn from the log at `db`: strata by `detector`'s score
    decile, or by the value of the comments' label `label` (exactly one of the two). The gold label
    (`toxic`) is read from a label set per source, as the report reads it: the newest that holds
    labels, or the one `label_sets` names (ids or definitions); `params["label_sets"]` names them."""
    from modlens.studylog.store import StudyLog

    if (detector is None) == (label is None):
        raise ItemSetError("give exactly one of --detector (balance over its score deciles) or --label NAME "
                           "(stratify by a stored label)")
    if label_sets and label != GOLD:
        raise ItemSetError(f"--label-set chooses the set the gold label comes from: it needs --label {GOLD}")
    if per_platform < 1:
        raise ItemSetError(f"--per-platform {per_platform}: must be 1 or more")
    if min_words < 1 or max_words < min_words:
        raise ItemSetError(f"--min-words {min_words} / --max-words {max_words}: need 1 <= min <= max")
    if not Path(db).is_file():
        raise ItemSetError(f"{db}: no study log there", fix="give the log `modlens serve` or `modlens audit` wrote")
    log = StudyLog(db, readonly=True)
    gold_sets: dict[str, dict[str, Any]] = {}
    try:
        rows = log.query("SELECT c.comment_id, c.platform, c.comment_key, c.text_id, t.text FROM comments c "
                         "JOIN texts t USING (text_id) WHERE c.platform != ? ORDER BY c.comment_id",
                         (CALIBRATION_PLATFORM,))
        det = _detector(log, detector) if detector else None
        if det is not None:
            scores = {r["text_id"]: r["toxicity"] for r in log.query(
                "SELECT text_id, toxicity FROM scores WHERE detector_id = ? AND error IS NULL", (det["detector_id"],))}
        else:
            scores = {}
            if label == GOLD:  # not a `labels` row: gold labels live in versioned sets
                gold_sets, labels = _gold(log, label_sets)
            else:
                labels = {r["comment_id"]: r["value"] for r in log.query(
                    "SELECT comment_id, value FROM labels WHERE name = ? ORDER BY source", (label,))}
            if not labels:
                raise ItemSetError(f"--label {label!r}: no comment of the log has that label; "
                                   f"{_label_names(log)}", fix="name one of them, or draw by --detector")
    finally:
        log.close()
    have = sorted({r["platform"] for r in rows})
    wanted = sorted(set(platforms)) if platforms else have
    missing = [p for p in wanted if p not in have]
    if missing:
        raise ItemSetError(f"--platform {missing[0]!r}: the log has no comments there; it has: {', '.join(have) or 'none'}")
    strata: dict[str, dict[str, list[dict[str, Any]]]] = {p: {} for p in wanted}
    seen_texts: set[str] = set()
    for r in rows:
        if r["platform"] not in strata or r["text"] in seen_texts:
            continue
        if not min_words <= len(r["text"].split()) <= max_words:
            continue
        if det is not None:
            score = scores.get(r["text_id"])
            if score is None:
                continue
            stratum = decile(float(score))
        else:
            value = labels.get(r["comment_id"])
            if value is None:
                continue
            score, stratum = None, str(value)
        seen_texts.add(r["text"])
        strata[r["platform"]].setdefault(stratum, []).append({**r, "score": score, "stratum": stratum})
    items: list[dict[str, Any]] = []
    counts: dict[str, dict[str, int]] = {}
    for p in wanted:
        pools = {s: sorted(c, key=lambda r: r["comment_id"]) for s, c in sorted(strata[p].items())}
        for s, pool in pools.items():  # one seeded order per platform and stratum: adding another platform changes none
            random.Random(f"modlens-itemset\0{seed}\0{p}\0{s}").shuffle(pool)
        taken: list[dict[str, Any]] = []
        while len(taken) < per_platform and any(pools.values()):
            for s in list(pools):
                if pools[s] and len(taken) < per_platform:
                    taken.append(pools[s].pop())
        if len(taken) < per_platform:
            raise ItemSetError(f"platform {p!r}: only {len(taken)} comments within {min_words}-{max_words} words"
                               f"{' with a ' + detector + ' score' if detector else ' with label ' + repr(label)}, "
                               f"{per_platform} wanted",
                               fix="lower --per-platform, widen the word limits, or capture more comments")
        counts[p] = {s: sum(t["stratum"] == s for t in taken) for s in sorted(strata[p])}
        items += sorted(taken, key=lambda t: (t["stratum"], t["comment_key"]))
    out_items = [{"id": f"i{n:03d}", "platform": t["platform"], "comment_key": t["comment_key"], "text": t["text"],
                  "stratum": t["stratum"], "score": t["score"]} for n, t in enumerate(items, 1)]
    params: dict[str, Any] = {
        "detector": None if det is None else {"name": det["name"], "version": det["version"]},
        "by": "deciles" if det is not None else f"label:{label}", "per_platform": per_platform,
        "platforms": wanted, "min_words": min_words, "max_words": max_words, "seed": seed,
        "log": Path(db).name, "counts": counts,
    }
    if gold_sets:  # which definition of the gold label the strata are
        params["label_sets"] = {src: {"label_set_id": s["label_set_id"], "definition": s["definition"]}
                                for src, s in gold_sets.items()}
    return {"format": FORMAT, "format_version": FORMAT_VERSION, "sha256": checksum(params, out_items),
            "params": params, "items": out_items}


def write(data: dict[str, Any], path: str | Path) -> Path:
    """Atomically: a write that fails (a full disk) leaves the item set that was there whole, and no
    half file that `read` would refuse or a study would be assigned from."""
    from modlens.pairing import write_atomically

    path = Path(path)
    if path.is_dir():
        path = path / FILE
    write_atomically(path, (json.dumps(data, indent=1, ensure_ascii=False) + "\n").encode("utf-8"), 0o644)
    return path


def read(path: str | Path) -> dict[str, Any]:
    """An item-set file, checked (format, ids, checksum)."""
    path = Path(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ItemSetError(f"{path}: no item set there", fix=f"`modlens sample --out {path}` draws one") from None
    except ValueError as err:
        raise ItemSetError(f"{path}: not JSON ({err})") from None
    return validate(data, path)


def validate(raw: Any, path: str | Path, *, fix: str | None = None) -> dict[str, Any]:
    """`raw` checked as an item set (format, ids, checksum); `path` names it in messages (a file,
    or the study pack that carried it). `fix`: the caller's fix for every problem but a newer
    format_version, which always says to upgrade modlens (None: draw the set again; a pack's
    reader says to ask the researcher, as a participant cannot draw it)."""
    data = check_format(raw, name=str(path), what="modlens item set", fmt=FORMAT, reads=READS,
                        fix=fix or DRAW_AGAIN, error=ItemSetError)
    items = data.get("items")
    if not isinstance(items, list) or not items:
        raise ItemSetError(f"{path}: items: empty or not a list", fix=fix)
    ids = [i.get("id") for i in items if isinstance(i, dict)]
    if len(ids) != len(items) or len(set(ids)) != len(ids):
        raise ItemSetError(f"{path}: items: every item needs its own id", fix=fix)
    for i in items:
        for key in ("platform", "comment_key", "text"):
            if not isinstance(i.get(key), str) or not i[key]:
                raise ItemSetError(f"{path}: item {i['id']!r}: {key} missing", fix=fix)
    if data.get("sha256") != checksum(data.get("params", {}), items):
        raise ItemSetError(f"{path}: checksum mismatch: the file was edited after `modlens sample` wrote it",
                           fix=fix or DRAW_AGAIN + "; an edited set would no longer say how it was drawn")
    return data
