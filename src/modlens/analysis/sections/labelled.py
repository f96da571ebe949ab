"""Section 7: detectors on gold-labelled comments (`analysis/labelled.py`)."""
from __future__ import annotations

import html
from typing import Any

from modlens.analysis import labelled
from modlens.analysis.data import StudyData
from modlens.analysis.references import cite
from modlens.analysis.sections.base import Section
from modlens.analysis.sections import svg
from modlens.analysis.sections.html import detector, table, with_boot_ci, with_ci
from modlens.analysis.skip import Skip

METHOD = (f"Comments with a gold toxic label, per source (dataset or site; never pooled, datasets define 'toxic' "
          "differently) and detector version. Precision, recall, F1 and accuracy at the detector's threshold "
          "(score ≥ threshold is toxic); ROC-AUC (ties count half); PR-AUC = average precision (as "
          f"scikit-learn); Brier score. Brackets: 95% percentile bootstrap intervals ({cite('efron')}), stratified by gold label "
          "(1000 resamples, seed 0; fewer above 200,000 items; over those that define the figure, with 'k of n resamples' "
          "when fewer do). Best-F1 threshold: chosen on the same data, so "
          "its F1 is optimistic. Reliability: 10 equal-width score bins, share of gold positives per bin. "
          "Groups: each value of a group label (platform, target_ident, target, group). A detector's figures are "
          "over the comments it scored; ⚠ says how many of the source's it failed on or never scored. ⚠: fewer than 30 items, "
          "or fewer than 5 positives or negatives, or a degenerate figure (a best-F1 threshold that calls every "
          f"item toxic, an F1 of 0, a threshold at which every prediction is one class). Per gold class: recall with Wilson "
          f"95% intervals ({cite('wilson')}). Training data: what each "
          "detector declares it was trained on, as its audit recorded it, checked against the rows: a detector's "
          "figures are marked in-sample when every row is among its fit texts (looked up by hash; a dataset's name "
          "decides nothing), partly in-sample (with the count) when some are, and not at all when none is ('none found "
          "among its fit texts (checked by hash)'); 'in-sample unknown' with the sources it declares when its fit texts cannot "
          "be had; where only some rows are, the column of rows not found among its fit texts gives the same figures on the others. Figures are rows and detectors columns, four to a table.")


def analyze(data: StudyData) -> dict[str, Any] | Skip:
    return labelled.analyze(data)


def _warned(cell: dict[str, Any]) -> str:
    found = [*_left_out(cell), *cell["warnings"], *cell.get("degenerate", [])]
    return ("⚠ " + "; ".join(found)) if found else ""


def _left_out(cell: dict[str, Any]) -> list[str]:
    """That a detector's figures are over fewer rows than its source's labelled comments, and why."""
    gone = cell.get("left_out") or {}
    failed, not_scored = gone.get("failed", 0), gone.get("not_scored", 0)
    if not failed + not_scored:
        return []
    why = ", ".join(f"{n} {what}" for n, what in ((failed, "failed"), (not_scored, "not scored")) if n)
    return [f"scored {cell['n']} of the {cell['n'] + failed + not_scored} labelled comments ({why}): its figures "
            f"are over those {cell['n']}"]


def _metric_cells(cell: dict[str, Any]) -> list[str]:
    m = cell["metrics"]
    return [with_boot_ci(m[k]) for k in ("precision", "recall", "f1", "accuracy", "roc_auc", "pr_auc")]


def in_sample_mark(d: dict[str, Any]) -> str:
    """What a detector's figures on a source are, from its rows (`labelled.in_sample`): in-sample
    (every row among its fit texts), partly (with the count), unknown (it declares training data
    whose texts cannot be checked here), or nothing (out of sample or undeclared)."""
    t, n = d["training"], d["n"]
    if t["level"] == "rows" and t["in_sample"] == n:
        return "in-sample"
    if t["level"] == "rows" and t["in_sample"]:
        return f"partly in-sample ({t['in_sample']:,} of {n:,} rows)"
    if t["level"] == "unknown":
        return "in-sample unknown"
    return ""


FIGURES = ("threshold", "n", "positives", "precision", "recall", "F1", "accuracy", "ROC-AUC", "PR-AUC",
           "Brier", "best-F1 threshold (F1)", "training data", "warnings")
COLUMNS_PER_TABLE = 4  # detectors side by side in one table: more are split, so every column shows on a page


def _column(cell: dict[str, Any], d: dict[str, Any], training: str, best: str | None) -> list[Any]:
    """One column of the figures table: `cell`'s figures (the detector's, or those of its rows not found among its fit texts)."""
    brier = cell["metrics"]["brier"]
    return [d["threshold"], cell["n"], cell["positives"], *_metric_cells(cell),
            with_boot_ci(brier), best, training, _warned(cell)]


def _columns(d: dict[str, Any]) -> list[tuple[str, list[Any]]]:
    """A detector's column, headed by its name and in-sample mark, and, when only some rows are
    in-sample, the same figures on the other rows beside it."""
    mark = in_sample_mark(d)
    best = None if d["best_f1"] is None else f"{d['best_f1']['threshold']:.3f} ({d['best_f1']['f1']:.3f})"
    name = detector(d["detector"], d["version"])
    out = [(name + (f" ({mark})" if mark else ""), _column(d, d, str(d["training"]["note"]), best))]
    o = d.get("out_of_sample")
    if o:
        out.append((f"↳ {name}, rows not found among its fit texts",
                    _column(o, d, f"the {o['n']:,} rows not among its fit texts", None)))
    return out


def _figures_tables(dets: list[dict[str, Any]]) -> str:
    """Figures as rows and detectors as columns (transposed: a dozen figures with intervals do not
    fit a page's width side by side), at most `COLUMNS_PER_TABLE` columns per table."""
    cols = [c for d in dets for c in _columns(d)]
    return "".join(table(["", *(name for name, _ in part)],
                         [[label, *(values[i] for _, values in part)] for i, label in enumerate(FIGURES)])
                   for part in (cols[k:k + COLUMNS_PER_TABLE] for k in range(0, len(cols), COLUMNS_PER_TABLE)))


def _class_table(dets: list[dict[str, Any]]) -> str:
    """Multi-class gold: class × predicted toxic/not per detector at its threshold, per-class recall."""
    rows = [[detector(d["detector"], d["version"]), c["class"], {"1": "toxic", "0": "not toxic"}.get(c["gold"], c["gold"]), c["n"], c["toxic"],
             c["not_toxic"], with_ci(c["recall"], c["recall_ci"]) if c["recall"] is not None else
             f"– (flags {c['share_toxic']:.1%}: false positives)"]
            for d in dets if d.get("classes") for c in d["classes"]["rows"]]
    if not rows:
        return ""
    label = next(d["classes"]["label"] for d in dets if d.get("classes"))
    return (f"<h4>by gold class <small>({html.escape(label)}), at each detector's threshold</small></h4>"
            + table(["detector", label, "gold", "n", "predicted toxic", "predicted not toxic",
                     "recall [Wilson 95%]"], rows))


def _plots(source: str, dets: list[dict[str, Any]]) -> str:
    """ROC and PR curves and the reliability curve (all detectors), score histograms per detector."""
    names = [detector(d["detector"], d["version"]) for d in dets]
    with_curves = [(n, d["curves"]) for n, d in zip(names, dets) if d.get("curves")]
    charts = []
    if with_curves:
        charts.append(svg.line_chart([(n, c["roc"]) for n, c in with_curves], f"ROC, {source}",
                                     "false-positive rate", "recall", diagonal="up"))
        charts.append(svg.line_chart([(n, c["pr"]) for n, c in with_curves], f"precision-recall, {source}",
                                     "recall", "precision"))
    charts.append(svg.line_chart([(n, [(b["mean_score"], b["share_positive"]) for b in d["reliability"] if b["n"]])
                                  for n, d in zip(names, dets)], f"reliability, {source}", "mean score in bin",
                                 "share gold-positive", diagonal="up", markers=True))
    for n, d in zip(names, dets):
        h = d.get("histogram")
        if h:
            charts.append(svg.histogram(h["edges"], [(g["name"], g["counts"]) for g in h["groups"]],
                                        f"scores by gold class, {n}", "score"))
    return svg.figures(*charts)


def render(s: dict[str, Any]) -> str:
    b = s["bootstrap"]
    out = [f"<p class=note>Brackets: {b['level']:.0%} intervals ({b['kind']}, {b['resamples']} resamples, fewer above "
           f"{b['fewer_above_items']} items; seed {b['seed']}), each over the resamples that define its figure (a resample "
           "with no item called toxic has no precision): 'k of n resamples' beside an interval over fewer. ⚠: fewer than {s['min_items']} items or "
           f"{s['min_class']} positives or negatives.</p>"]
    head = ["precision", "recall", "F1", "accuracy", "ROC-AUC", "PR-AUC"]
    for src in s["sources"]:
        dets = src["detectors"]
        used = src.get("label_set")
        gold_set = f"; gold label set {used['label_set_id']}: {html.escape(used['definition'])}" if used else ""
        out.append(f"<h3>{html.escape(src['source'])} <small>{src['n']} labelled comments, {src['positives']} "
                   f"positive{gold_set}</small></h3>")
        if src.get("not_scored"):
            k = sum(src["not_scored"].values())
            out.append(f"<p class=note>{k} labelled comment{'s' * (k != 1)} with a blank text not scored ("
                       + ", ".join(f"{html.escape(why)}: {n}" for why, n in src["not_scored"].items())
                       + "): left out of every figure.</p>")
        if used:
            out.append(f"<p class=note>Gold: a comment is toxic when {html.escape(used['definition'])} "
                       f"(label set {used['label_set_id']}).</p>")
        out.append(_figures_tables(dets))
        out.append(_class_table(dets))
        out.append(_plots(src["source"], dets))
        for name in s["group_labels"]:
            rows = [[g["value"], detector(d["detector"], d["version"]), g["n"], g["positives"], *_metric_cells(g), _warned(g)]
                    for d in dets for g in d["groups"].get(name, [])]
            if rows:
                out.append(f"<h4>by {html.escape(name)}</h4>")
                out.append(table([name, "detector", "n", "positives", *head, "warnings"], rows))
    return "".join(out)


SECTION = Section(key='labelled', title='7. Detectors on labelled data', method=METHOD, analyze=analyze, render=render)
