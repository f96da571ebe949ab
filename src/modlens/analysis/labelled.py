"""Labelled data: how each detector does on the comments that carry a gold `toxic`
label, the table a researcher cites (HELM / Detoxify style).

Per source (the comment's platform: `dataset:NAME` for an audit, the site for live comments;
sources are never pooled, since datasets define "toxic" differently) and per detector version:
n, positives, precision, recall, F1 and accuracy at the detector's threshold, ROC-AUC, PR-AUC
(average precision) and the Brier score, each with a 95% stratified percentile bootstrap interval
(`metrics.bootstrap`, seeded); the best-F1 threshold (chosen in-sample, so optimistic);
a reliability curve (10 equal-width bins). The same metrics per value of each group label
(`GROUP_LABELS`). Cells with fewer than `MIN_ITEMS` items or `MIN_CLASS` positives or negatives
carry a warning. A detector's figures are over the comments it scored: those it failed on (a score
row with an error) or never scored are counted (`left_out`) and said beside its figures, since the
other detectors' figures may be over more rows. Comments only: clean/perturbed pairs are the robustness section's. Each source
names the gold label set (id, definition) its labels come from (`StudyData.label_sets`).

Training overlap: per source and detector, what the audit recorded of the detector's
training data (`modlens.trainingdata`, the run's params["training"]), from the rows: the logged
texts are looked up in the hash set of its fit texts (the in-sample rows are counted and, when only
some are in-sample, the same metrics are given on the rows not found among its fit texts); without a hash set,
in-sample or not is unknown (said with the sources it declares); or undeclared. A dataset's name
never decides it. Degenerate
figures are flagged: a best-F1 threshold that makes every item positive, or at least
`DEGENERATE_FLAGGED_SHARE` of them (or an F1 of 0), and a
threshold at which the detector predicts one class only.

Multi-class gold: when the comments carry a `class` label (Davidson's hate_speech /
offensive_language / neither), each detector also gets the confusion table of class × predicted
toxic or not at its threshold, with per-class recall (the share of a toxic class flagged; for a
non-toxic class the share flagged is its false-positive rate). For the plots: ROC and PR curves
(`curves`, at most `CURVE_POINTS` points) and score histograms per gold class (per `class` value
when there is one, else toxic / not toxic; `HIST_BINS` bins over [0, 1]).

Blank texts (empty or whitespace only: `datasets.base.blank_reason`) are not comments to judge:
the audit logs them unscored, and here they are counted per source and reason (`not_scored`) and
left out of every figure, n and positives included.
"""
from __future__ import annotations

from collections import Counter, defaultdict
from typing import Any

import json

from modlens.analysis import metrics
from modlens.analysis.data import DetectorRow, StudyData
from modlens.datasets.base import blank_reason
from modlens import trainingdata as train_data
from modlens.analysis.skip import Skip

GROUP_LABELS = ("platform", "target_ident", "target", "group")  # labels whose values split the results
MIN_ITEMS = 30
MIN_CLASS = 5
# a best-F1 threshold flagging at least this share of the items is (near) the trivial all-positive
# classifier: e.g. SASS's 0.046 flagging 243 of 250 texts at 72% positives
DEGENERATE_FLAGGED_SHARE = 0.95
RELIABILITY_BINS = 10
POSITIVE_VALUES = ("1", "true", "yes", "toxic")
CLASS_LABEL = "class"  # a multi-class gold label kept beside the binary `toxic` (Davidson)
CLASS_ORDER = ("hate_speech", "offensive_language", "neither")  # Davidson's order; other values after, sorted
CURVE_POINTS = 200
HIST_BINS = 20

NO_LABELS = ("no gold labels: pass --label COLUMN[=POSITIVE_VALUES] to modlens audit, or audit a dataset "
             "that has them (hatecheck, davidson, noisyhate)")


def gold(labels: dict[str, str]) -> int | None:
    """The comment's gold label (1 toxic, 0 not) from its `toxic` label; None without one."""
    value = labels.get("toxic")
    if value is None or str(value).strip() == "":
        return None
    return 1 if str(value).strip().lower() in POSITIVE_VALUES else 0


def count_warnings(n: int, positives: int) -> list[str]:
    """Why a cell's numbers are shaky: too few items, positives or negatives."""
    out = []
    if n < MIN_ITEMS:
        out.append(f"only {n} items (< {MIN_ITEMS})")
    if positives < MIN_CLASS:
        out.append(f"only {positives} positives (< {MIN_CLASS})")
    if n - positives < MIN_CLASS:
        out.append(f"only {n - positives} negatives (< {MIN_CLASS})")
    return out


def with_intervals(scores: list[float], golds: list[int], threshold: float) -> dict[str, Any]:
    """n, positives, the headline metrics each as {value, ci, resamples, ci_resamples} (the
    resamples drawn, and those the interval rests on: `metrics.bootstrap`), and count warnings."""
    point = metrics.classification_metrics(scores, golds, threshold)
    boot = metrics.bootstrap(scores, golds, threshold)
    positives = sum(golds)
    return {"n": len(golds), "positives": positives,
            "metrics": {k: {"value": point[k], **boot[k]} for k in metrics.HEADLINE},
            "warnings": count_warnings(len(golds), positives)}


def degenerate(scores: list[float], golds: list[int], threshold: float, best: dict[str, float] | None) -> list[str]:
    """Why a cell's threshold figures say nothing about the detector: its best-F1 threshold is the
    trivial classifier, or its own threshold predicts one class only."""
    out = []
    n, positives = len(scores), sum(golds)
    if best is not None:
        best_flagged = sum(s >= best["threshold"] for s in scores)
        if best_flagged == n:
            out.append(f"best-F1 threshold {best['threshold']:.3g} calls every item toxic: its F1 {best['f1']:.3f} is "
                       f"the trivial all-positive classifier's ({positives} of {n} positive)")
        elif best_flagged >= DEGENERATE_FLAGGED_SHARE * n:
            out.append(f"best-F1 threshold {best['threshold']:.3g} calls {best_flagged} of {n} items toxic: its F1 "
                       f"{best['f1']:.3f} is close to the trivial all-positive classifier's "
                       f"{2 * positives / (positives + n):.3f} ({positives} of {n} positive)")
        elif best["f1"] == 0:
            out.append("best F1 is 0: no threshold beats calling every item non-toxic")
    flagged = sum(s >= threshold for s in scores)
    if flagged == n:
        out.append(f"every item scores ≥ the threshold {threshold:g}: predictions are all toxic")
    elif flagged == 0:
        out.append(f"no item scores ≥ the threshold {threshold:g}: predictions are all non-toxic")
    return out


def curves(scores: list[float], golds: list[int]) -> dict[str, list[list[float]]] | None:
    """ROC ([false-positive rate, recall]) and PR ([recall, precision]) points, one per distinct
    score from the highest down (thinned to about `CURVE_POINTS`); None with one class only."""
    pos = sum(golds)
    neg = len(golds) - pos
    if not pos or not neg:
        return None
    pairs = sorted(zip(scores, golds), key=lambda p: -p[0])
    roc, pr = [[0.0, 0.0]], []
    tp = fp = 0
    for i, (s, g) in enumerate(pairs):
        tp, fp = tp + g, fp + (1 - g)
        if i + 1 < len(pairs) and pairs[i + 1][0] == s:
            continue  # tied scores enter together
        roc.append([fp / neg, tp / pos])
        pr.append([tp / pos, tp / (tp + fp)])

    def thin(pts: list[list[float]]) -> list[list[float]]:
        step = max(1, len(pts) // CURVE_POINTS)
        return [[round(x, 4), round(y, 4)] for x, y in (pts[::step] + ([pts[-1]] if (len(pts) - 1) % step else []))]
    return {"roc": thin(roc), "pr": thin(pr)}


def histograms(scores: list[float], groups: list[str]) -> dict[str, Any]:
    """Score counts in `HIST_BINS` equal bins over [0, 1] per group (scores outside are clipped)."""
    counts: dict[str, list[int]] = {}
    for s, g in zip(scores, groups):
        k = min(HIST_BINS - 1, max(0, int(s * HIST_BINS)))
        counts.setdefault(g, [0] * HIST_BINS)[k] += 1
    return {"edges": [k / HIST_BINS for k in range(HIST_BINS + 1)],
            "groups": [{"name": g, "counts": counts[g]} for g in class_order(set(counts))]}


def class_order(values: set[str]) -> list[str]:
    return [c for c in (*CLASS_ORDER, "toxic", "not toxic") if c in values] + sorted(
        values - {*CLASS_ORDER, "toxic", "not toxic"})


def classes(data: StudyData, rows: list[tuple[int, float, int]], threshold: float) -> dict[str, Any] | None:
    """The confusion table of a multi-class gold label × predicted toxic/not, with per-class recall;
    None when the comments carry no `class` label of two or more values."""
    by: dict[str, list[tuple[float, int]]] = defaultdict(list)
    for cid, s, g in rows:
        value = data.labels.get(cid, {}).get(CLASS_LABEL)
        if value not in (None, ""):
            by[str(value)].append((s, g))
    if len(by) < 2:
        return None
    out = []
    for value in class_order(set(by)):
        vals = by[value]
        flagged = sum(s >= threshold for s, _ in vals)
        golds = {g for _, g in vals}
        gold_of = "1" if golds == {1} else "0" if golds == {0} else "mixed"
        out.append({"class": value, "gold": gold_of, "n": len(vals), "toxic": flagged, "not_toxic": len(vals) - flagged,
                    "share_toxic": flagged / len(vals), "recall": flagged / len(vals) if gold_of == "1" else None,
                    "recall_ci": metrics.wilson_interval(flagged, len(vals)) if gold_of == "1" else None})
    return {"label": CLASS_LABEL, "n": sum(len(v) for v in by.values()), "rows": out}


def declarations(data: StudyData) -> dict[tuple[str, str], dict[str, Any]]:
    """(source, detector@version) -> the training declaration an audit of that source recorded
    (the latest run's)."""
    out: dict[tuple[str, str], dict[str, Any]] = {}
    for run in data.runs:
        try:
            params = json.loads(run.get("params_json") or "{}")
        except (TypeError, json.JSONDecodeError):
            continue
        for rec in (params.get("training") or {}).values():
            if isinstance(rec, dict) and rec.get("detector"):
                out[(f"dataset:{run['dataset']}", rec["detector"])] = rec
    return out


def in_sample(data: StudyData, rec: dict[str, Any] | None,
              cids: list[int]) -> tuple[dict[str, Any], list[bool | None] | None]:
    """The overlap of these comments with a detector's training data, from the rows
    (`trainingdata.overlap_rows`: their texts looked up in the hash set of fit texts the audit recorded;
    the name the audit gave the file decides nothing): a summary whose `in_sample` is
    an int (None: not knowable), and per comment whether it is in-sample (None when not known row
    by row; a row's None: its text has no words to look up)."""
    n = len(cids)
    if rec is None:
        return {"level": "undeclared", "in_sample": None, "checked": "unknown",
                "note": "training data undeclared (or not recorded by an audit of this source): in-sample or not "
                        "is unknown"}, None
    training, why = train_data.recorded_training(rec)
    texts = [data.texts.get(data.comments[c]["text_id"], "") for c in cids]
    found, flags = train_data.overlap_rows(training, texts)
    base = {"datasets": list(training.datasets), "source": training.source, **found}
    if found["checked"] == "hash":
        n_in = found["in_sample"]
        note = (f"{n_in:,} of {n:,} rows are among its fit texts (by hash)" if n_in else
                f"none found among its fit texts (checked by hash): 0 of {n:,} rows")
        if found.get("no_words"):
            note += (f"; {found['no_words']:,} rows have no words to look up: in-sample or not unknown, left out of "
                     "the figures on rows not found")
        return {**base, "note": note}, flags
    return {**base, "note": train_data.unknown_note(training, why)}, None


def _detector(data: StudyData, det: DetectorRow, items: list[tuple[int, int]],
              declared: dict[str, Any] | None = None) -> dict[str, Any] | None:
    rows = []
    left_out = {"failed": 0, "not_scored": 0}  # the source's labelled comments its figures are not over
    for cid, g in items:
        key = (data.comments[cid]["text_id"], det.detector_id)
        s = data.scores.get(key)
        if s is not None:
            rows.append((cid, s, g))
        else:
            left_out["failed" if key in data.scores else "not_scored"] += 1  # a score row with an error: failed
    if not rows:
        return None
    scores, golds = [s for _, s, _ in rows], [g for _, _, g in rows]
    best = metrics.best_f1_threshold(scores, golds)
    overlap, flags = in_sample(data, declared, [cid for cid, _, _ in rows])
    out = {"detector": det.name, "version": det.version, "threshold": det.threshold,
           **with_intervals(scores, golds, det.threshold), "left_out": left_out,
           "best_f1": best, "degenerate": degenerate(scores, golds, det.threshold, best),
           "training": overlap, "out_of_sample": None,
           "reliability": metrics.reliability_curve(scores, golds, RELIABILITY_BINS), "groups": {},
           "classes": classes(data, rows, det.threshold), "curves": curves(scores, golds)}
    kinds = [data.labels.get(cid, {}).get(CLASS_LABEL) for cid, _, _ in rows] if out["classes"] else []
    out["histogram"] = histograms(scores, [str(k) if k not in (None, "") else ("toxic" if g else "not toxic")
                                           for k, (_, _, g) in zip(kinds or [None] * len(rows), rows)])
    if flags is not None:
        # the rows looked up and not found (a row with no words has no key: not known either way); their
        # own figures whenever they are not every row: some found, or none found but some with no words
        rest = [(s, g) for (_, s, g), inside in zip(rows, flags) if inside is False]
        if 0 < len(rest) < len(flags):
            out["out_of_sample"] = with_intervals([s for s, _ in rest], [g for _, g in rest], det.threshold)
    for name in GROUP_LABELS:
        by_value: dict[str, list[tuple[float, int]]] = defaultdict(list)
        for cid, s, g in rows:
            value = data.labels.get(cid, {}).get(name)
            if value not in (None, ""):
                by_value[str(value)].append((s, g))
        if by_value:
            out["groups"][name] = [
                {"value": value, **with_intervals([s for s, _ in vals], [g for _, g in vals], det.threshold)}
                for value, vals in sorted(by_value.items())]
    return out


def analyze(data: StudyData) -> dict[str, Any] | Skip:
    by_source: dict[str, list[tuple[int, int]]] = defaultdict(list)
    blank: dict[str, Counter[str]] = defaultdict(Counter)  # per source: blank texts, per reason
    for cid, labels in data.labels.items():
        g = gold(labels)
        if g is not None and cid in data.comments:
            source = data.comments[cid]["platform"]
            why = blank_reason(str(data.texts.get(data.comments[cid]["text_id"], "")))
            if why is not None:  # nothing to judge: never scored (an older log's score is not used either)
                blank[source][why] += 1
            else:
                by_source[source].append((cid, g))
    if not by_source:
        return Skip(NO_LABELS if not blank else "every labelled comment's text is blank (not scored)")
    sources = []
    declared = declarations(data)
    for source, items in sorted(by_source.items()):
        dets = [d for d in (_detector(data, det, items, declared.get((source, det.label)))
                            for det in data.detectors.values()) if d is not None]
        if dets:
            used = data.label_sets.get(source)  # the gold label set these labels come from
            sources.append({"source": source, "n": len(items), "positives": sum(g for _, g in items),
                            "not_scored": dict(sorted(blank[source].items())),
                            "label_set": None if used is None else {k: used[k] for k in ("label_set_id", "definition")},
                            "detectors": dets})
    if not sources:
        n = sum(len(v) for v in by_source.values())
        return Skip(f"no detector scored the {n} labelled comments: score them with modlens rescore --detectors KEY")
    return {"group_labels": list(GROUP_LABELS), "min_items": MIN_ITEMS, "min_class": MIN_CLASS,
            "bootstrap": {"resamples": metrics.BOOTSTRAP_RESAMPLES, "fewer_above_items": metrics.resamples_cap_items(),
                          "seed": metrics.BOOTSTRAP_SEED,
                          "level": metrics.CI_LEVEL, "kind": "percentile, stratified by gold label"},
            "sources": sources}
