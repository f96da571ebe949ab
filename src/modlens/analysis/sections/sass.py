"""Section 6: SASS-style categories (`analysis/sass.py`)."""
from __future__ import annotations

from typing import Any

from modlens.analysis import sass
from modlens.analysis.data import StudyData
from modlens.analysis.sections.base import Section
from modlens.analysis.sections.html import table, with_ci
from modlens.analysis.skip import Skip

METHOD = ("Human label: human score > 0.5 (seed 004). Precision, recall and F1 at each detector's threshold, "
          "with 95% percentile bootstrap intervals (stratified by label, 1000 resamples, seed 0); mean scores "
          "per category. A file without human scores is reported by category only.")


def analyze(data: StudyData) -> dict[str, Any] | Skip:
    return sass.analyze(data)


def render(s: dict[str, Any]) -> str:
    cats = s.get("categories") or list(s["human_mean_by_category"])
    if s.get("categories_only"):
        out = [f"<p>{s['n']} texts, categories only (the file has no human scores: no precision, recall or F1).</p>"]
    else:
        def ci(d: dict[str, Any], k: str) -> str:
            return with_ci(d[k], d.get("ci", {}).get(k))
        out = [f"<p>{s['n']} texts, {s['share_toxic']:.1%} toxic by the human label.</p>",
               table(["detector", "precision", "recall", "F1", "n"],
                      [[d["detector"], ci(d, "precision"), ci(d, "recall"), ci(d, "f1"), d["n"]] for d in s["detectors"]])]
    human_col = [] if s.get("categories_only") else ["human"]
    out.append(table(["category", *human_col, *[d["detector"] for d in s["detectors"]]],
                      [[c, *[s["human_mean_by_category"].get(c) for _ in human_col],
                        *[d["mean_by_category"].get(c) for d in s["detectors"]]] for c in cats]))
    return "".join(out)


SECTION = Section(key='sass', title='6. SASS-style categories', method=METHOD, analyze=analyze, render=render)
