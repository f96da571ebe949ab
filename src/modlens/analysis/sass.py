"""SASS categories (Piedras, Rosenblatt and Wilkins 2022): per detector at its threshold, precision,
recall and F1 against the gold label (the human score > 0.5 by default, or the label set chosen),
overall, per category in the paper's order (its Table 5) and split into the filtered and
unfiltered halves when the file says which is which, each with 95% stratified bootstrap intervals
(`labelled.with_intervals`). Within a category the gold is mostly one class, so recall (the share of
its toxic texts flagged) is the figure the paper argues with; a category of non-toxic texts has no
recall, and its share flagged is the false-positive rate.

The released data comes as several files: `norm_human_toxicity_scores.csv` (human scores) and
`toxicity_benchmark_scores.csv` (Perspective's recorded scores) hold the same texts, and
`final_experiment_results.csv` all of it plus GPT-3's answers. Scores live per text, so a detector
audited on one file scores the other's texts too; a system's recorded score (the labels
`perspective_recorded`, `gpt-3-zero-shot_recorded`, …, per text, from any SASS file) becomes that
system's column when no detector of the system (`perspective`, `perspective-toxicity_score`, …)
scored the texts. With gold, the paper's Tables 3 and 5 are set beside the figures
(`sass_paper.compare`). Without any gold label the section is "categories only": mean score
per category, no precision, recall or F1.

Per source, never pooled: a comment's data set is its platform (`dataset:NAME`), and only the
release (`dataset:sass`: the catalog names a file `sass` only with the released bytes) is SASS. A
file in SASS's layout with other bytes (an edited copy, another study's texts: `dataset:file-DIGEST`)
gets its own block with the same figures, its own recorded scores included, and no comparison with
the paper (`release` false, `paper` None). Shown, not left out: a researcher who wrote a study in
SASS's layout (a translation, a replication with new texts) chose it for these per-category figures
and wants them; what they must not get is their rows counted as SASS's or set beside figures the
paper measured on other texts. The release comes first; each block says its source."""
from __future__ import annotations

from collections import defaultdict
from statistics import mean
from typing import Any

from modlens.analysis import labelled, per_source, sass_paper
from modlens.analysis.data import StudyData
from modlens.analysis.metrics import bootstrap, precision_recall_f1
from modlens.analysis.skip import Skip
from modlens.datasets.sass import SYSTEMS, recorded_label

PLATFORM = "dataset:sass"
NO_ITEMS = "no SASS texts (labels category + human_score): audit a SASS file with --format sass"
# the paper's Table 5 order; the file's spelling is kept, matched case-insensitively
CATEGORY_ORDER = ("Blackmail", "Classism", "Exclusionary", "Gaslighting", "Misogyny", "Sarcasm",
                  "Sexual Harassment", "Stereotyping", "Neutral", "False Positive")
SPELLINGS = {"sex. harass.": "Sexual Harassment", "sexual_harassment": "Sexual Harassment",
             "false_positive": "False Positive"}
RECORDED_VERSION = "recorded in the file"
NOT_RELEASE = ("{n} comments from {source} have SASS-style labels but are not the SASS release (the catalog's bytes): "
               "their own figures, not compared with the paper")


def category(raw: str) -> str:
    """The paper's name of a category ("Sex. Harass." -> "Sexual Harassment"); others as written."""
    s = raw.strip()
    by_lower = {c.lower(): c for c in CATEGORY_ORDER}
    return SPELLINGS.get(s.lower()) or by_lower.get(s.lower(), s)


def ordered(categories: set[str]) -> list[str]:
    known = [c for c in CATEGORY_ORDER if c in categories]
    return known + sorted(categories - set(CATEGORY_ORDER))


def _metrics(scored: list[tuple[dict[str, str], float, int]], threshold: float) -> dict[str, Any]:
    scores, golds = [s for _, s, _ in scored], [g for _, _, g in scored]
    out = labelled.with_intervals(scores, golds, threshold)
    out["flagged"] = sum(s >= threshold for s in scores)
    out["mean_score"] = mean(scores)
    return out


def _splits(scored: list[tuple[dict[str, str], float, int]], threshold: float) -> dict[str, Any]:
    by: dict[str, list[tuple[dict[str, str], float, int]]] = defaultdict(list)
    for row in scored:
        if row[0].get("filtered"):
            by[row[0]["filtered"]].append(row)
    return {k: _metrics(v, threshold) for k, v in sorted(by.items())}


def _block(data: StudyData, source: str, items: list[tuple[int, dict[str, str]]]) -> dict[str, Any] | None:
    """One source's figures (None when no detector scored its texts); `items`: its SASS-layout comments."""
    gold_items = [(cid, lab, g) for cid, lab in items if (g := labelled.gold(lab)) is not None]
    rated = bool(gold_items)
    # the figures use the gold-labelled texts when there are any (another file's copy of a text,
    # without gold, would count it twice), else every text of the source
    used = [(cid, lab, g) for cid, lab, g in gold_items] if rated else [(cid, lab, 0) for cid, lab in items]
    recorded: dict[str, dict[int, float]] = defaultdict(dict)  # system -> text_id -> score, from the source's files
    for cid, lab in items:
        for system in SYSTEMS:
            if lab.get(recorded_label(system)):
                recorded[system][data.comments[cid]["text_id"]] = float(lab[recorded_label(system)])
    human_by_cat: dict[str, list[float]] = defaultdict(list)
    for _, lab, _ in used:
        if "human_score" in lab:
            human_by_cat[category(lab["category"])].append(float(lab["human_score"]))
    cats = ordered({category(lab["category"]) for _, lab, _ in used})
    columns: list[tuple[str, str, float, Any]] = [
        (det.name, det.version, det.threshold, lambda tid, d=det.detector_id: data.score(tid, d))
        for det in data.detectors.values()]
    for system, by_text in recorded.items():  # a system's recorded scores, unless one of its detectors scored the texts
        if not any(sass_paper.system_of(name) == system and any(get(data.comments[cid]["text_id"]) is not None
                                                               for cid, _, _ in used) for name, _, _, get in columns):
            columns.append((system, RECORDED_VERSION, 0.5, by_text.get))
    detectors = []
    for name, version, threshold, get in columns:
        scored = [(lab, s, g) for cid, lab, g in used if (s := get(data.comments[cid]["text_id"])) is not None]
        if not scored:
            continue
        by_cat: dict[str, list[tuple[dict[str, str], float, int]]] = defaultdict(list)
        for row in scored:
            by_cat[category(row[0]["category"])].append(row)
        entry: dict[str, Any] = {"detector": name, "version": version, "threshold": threshold, "n": len(scored),
                                 "mean_by_category": {c: mean(s for _, s, _ in by_cat[c]) for c in cats if by_cat[c]}}
        if rated:
            golds = [g for _, _, g in scored]
            entry.update(precision_recall_f1([s >= threshold for _, s, _ in scored], golds))
            boot = bootstrap([s for _, s, _ in scored], golds, threshold)
            entry["ci"] = {k: boot[k]["ci"] for k in ("precision", "recall", "f1")}
            # the resamples drawn, and per figure those its interval rests on (the ones defining it)
            entry["resamples"] = boot["f1"]["resamples"]
            entry["ci_resamples"] = {k: boot[k]["ci_resamples"] for k in ("precision", "recall", "f1")}
            entry["by_split"] = _splits(scored, threshold)
            entry["by_category"] = [{"category": c, **_metrics(by_cat[c], threshold),
                                     "splits": _splits(by_cat[c], threshold)} for c in cats if by_cat[c]]
        detectors.append(entry)
    if not detectors:
        return None
    release = source == PLATFORM
    out = {"source": source, "release": release, "n": len(items), "n_gold": len(gold_items),
           "categories_only": not rated, "share_toxic": mean(g for _, _, g in used) if rated else None,
           "human_mean_by_category": {c: mean(human_by_cat[c]) for c in cats if human_by_cat[c]},
           "categories": cats, "splits": sorted({lab["filtered"] for _, lab, _ in used if lab.get("filtered")}),
           "detectors": detectors}
    out["paper"] = sass_paper.compare(out) if rated and release else None
    if not release:
        out["note"] = NOT_RELEASE.format(n=len(items), source=source)
    return out


def analyze(data: StudyData) -> dict[str, Any] | Skip:
    """{"sources": [one block per source, the release first], "unscored": sources no detector scored}."""
    by_source: dict[str, list[tuple[int, dict[str, str]]]] = defaultdict(list)
    for cid, lab in data.labels.items():
        if cid in data.comments and "category" in lab:
            source = data.comments[cid]["platform"]  # the comment's data set
            if "human_score" in lab or source == PLATFORM:
                by_source[source].append((cid, lab))
    return per_source.section(by_source, PLATFORM, lambda source, rows: _block(data, source, rows),
                              none=NO_ITEMS, what="SASS texts")
