"""SASS categories (`analysis/sass.py`)."""
from __future__ import annotations

import html
from decimal import Decimal
from typing import Any

from modlens.analysis import sass, sass_paper
from modlens.analysis.data import StudyData
from modlens.analysis.references import cite
from modlens.analysis.sections import svg
from modlens.analysis.sections.base import Section
from modlens.analysis.sections.html import detector, source_heading, table, unscored_note, with_boot_ci
from modlens.analysis.skip import Skip

METHOD = (f"SASS ({cite('sass')}). Gold: the human score > 0.5, the paper's binarization (or the label set "
          "chosen). Precision, recall and F1 at each detector's threshold (score ≥ threshold is toxic), overall, per "
          "category in the paper's order (its Table 5) and per half (filtered: written to score < 0.5 on Perspective; "
          f"unfiltered: not tested on it), with 95% percentile bootstrap intervals ({cite('efron')}; stratified by gold label, 1000 "
          "resamples, seed 0; each over the resamples that define its figure, with 'k of n resamples' beside an interval over "
          "fewer). Within a category the gold is mostly one class: recall is the share of its toxic texts "
          "flagged; for Neutral and False Positive (non-toxic) the share flagged is the false-positive rate. "
          "Perspective: the score recorded in the file (toxicity_score / perspective_avg_toxicity) when no "
          "`perspective` detector scored the texts; GPT-3's recorded answers (final_experiment_results.csv) likewise. "
          "The paper's Tables 3 and 5 stand beside the log's figures: a figure that, rounded to the digits the paper "
          "prints, is not the paper's is marked ⚠ with its difference, and the notes say why. Without gold the "
          "texts are reported by category only. Per source, never pooled: only the SASS release (dataset:sass, the "
          "catalog's bytes) is compared with the paper; a file in SASS's layout with other bytes (an edited copy, another "
          "study's texts: file-DIGEST) gets the same figures in a block of its own, without the paper's.")


def analyze(data: StudyData) -> dict[str, Any] | Skip:
    return sass.analyze(data)


def _m(cell: dict[str, Any] | None, k: str) -> str:
    if not cell:
        return "–"
    return with_boot_ci(cell["metrics"][k])


def _categories(s: dict[str, Any]) -> str:
    out = []
    for d in s["detectors"]:
        rows = []
        for c in d["by_category"]:
            splits = [c["splits"].get(k) for k in s["splits"]]
            rows.append([c["category"], c["n"], c["positives"], _m(c, "recall"), _m(c, "precision"), _m(c, "f1"),
                         f"{c['flagged'] / c['n']:.1%}",
                         *[_m(x, "recall") if x else "–" for x in splits]])
        out.append(f"<h4>{html.escape(detector(d['detector'], d['version']))} <small>threshold "
                   f"{d['threshold']}</small></h4>")
        out.append(table(["category", "n", "toxic (gold)", "recall", "precision", "F1", "flagged",
                          *[f"recall, {k}" for k in s["splits"]]], rows))
    return "".join(out)


def _vs(cell: dict[str, Any], unit: str = "") -> str:
    """Our figure (paper's figure), and the difference when they differ."""
    if cell["ours"] is None:
        return f"– (paper {cell['printed']}{unit})"
    digits = max(0, -Decimal(cell["printed"]).as_tuple().exponent)  # type: ignore[operator]
    out = f"{cell['ours']:.{digits + 1}f}{unit} (paper {cell['printed']}{unit})"
    return f"{out} ⚠ {cell['diff']:+.{digits + 1}f}" if cell["differs"] else out


def _paper(p: dict[str, Any]) -> str:
    names = {**sass_paper.SYSTEMS, sass_paper.HUMAN: "human"}
    out = ["<h3>The paper's Table 3: binary classification against the human gold</h3>",
           table(["system", "detector", "n", "precision", "recall", "F1"],
                 [[r["paper_name"], detector(r["detector"], r["version"]), r["n"],
                   *[_vs(r["cells"][m]) for m in sass_paper.TABLE_3_METRICS]] for r in p["table3"]]),
           "<h3>The paper's Table 5: mean score per category (%), with each system's F1 in the category</h3>"]
    cols, systems = p["table5"]["columns"], [c for c in p["table5"]["columns"] if c != sass_paper.HUMAN]
    out.append(table(["category", "n", *[names[c] for c in cols], *[f"F1, {names[c]}" for c in systems]],
                     [[r["category"], r["n"], *[_vs(r["cells"][c], "%") for c in cols],
                       *[r["f1"].get(c) for c in systems]] for r in p["table5"]["rows"]]))
    if p["notes"]:
        out.append("<p class=note>Why figures differ from the paper:</p><ul class=note>"
                   + "".join(f"<li>{html.escape(n)}</li>" for n in p["notes"]) + "</ul>")
    return "".join(out)


def _name(s: dict[str, Any]) -> str:
    """What a block's charts call its data: SASS for the release only."""
    return "SASS" if s["release"] else f"{s['source'].removeprefix('dataset:')} (SASS's layout)"


def render(section: dict[str, Any]) -> str:
    """Each source in a block of its own, the release first; only the release beside the paper."""
    return "".join(source_heading(s, "The SASS release", "SASS's layout, not the SASS release") + _render_source(s)
                   for s in section["sources"]) + unscored_note(section, "texts")


def _render_source(s: dict[str, Any]) -> str:
    cats = s.get("categories") or list(s["human_mean_by_category"])
    names = [detector(d["detector"], d["version"]) for d in s["detectors"]]
    if s.get("categories_only"):
        out = [f"<p>{s['n']} texts, categories only (no gold label: the file has no human scores; audit "
               "norm_human_toxicity_scores.csv, or give --label): no precision, recall or F1.</p>"]
    else:
        def ci(d: dict[str, Any], k: str) -> str:
            return with_boot_ci({"value": d[k], "ci": d.get("ci", {}).get(k), "resamples": d.get("resamples"),
                                 "ci_resamples": d.get("ci_resamples", {}).get(k)})
        out = [f"<p>{s['n_gold']} texts with a gold label, {s['share_toxic']:.1%} toxic.</p>",
               table(["detector", "precision", "recall", "F1", "n",
                      *[f"F1, {k}" for k in s["splits"]]],
                     [[detector(d["detector"], d["version"]), ci(d, "precision"), ci(d, "recall"), ci(d, "f1"), d["n"],
                       *[_m(d["by_split"].get(k), "f1") for k in s["splits"]]] for d in s["detectors"]])]
        out.append(svg.figures(svg.bar_chart(
            cats, [(n, [next((c["flagged"] / c["n"] for c in d["by_category"] if c["category"] == cat), None)
                        for cat in cats]) for n, d in zip(names, s["detectors"])],
            f"{_name(s)}: share flagged per category", "share of the category's texts flagged toxic")))
        if s.get("paper"):
            out.append(_paper(s["paper"]))
        out.append("<h3>Per category</h3>" + _categories(s))
    human_col = ["human"] if s["human_mean_by_category"] else []
    out.append("<h3>Mean score per category</h3>")
    out.append(table(["category", *human_col, *names],
                     [[c, *[s["human_mean_by_category"].get(c) for _ in human_col],
                       *[d["mean_by_category"].get(c) for d in s["detectors"]]] for c in cats]))
    if s.get("categories_only"):
        out.append(svg.figures(svg.bar_chart(
            cats, [(n, [d["mean_by_category"].get(c) for c in cats]) for n, d in zip(names, s["detectors"])],
            f"{_name(s)}: mean score per category", "mean detector score")))
    return "".join(out)


SECTION = Section(key='sass', title='SASS categories', method=METHOD, analyze=analyze, render=render)
