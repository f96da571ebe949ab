"""Section 2: detector scores against people's majority ratings, per platform (`analysis/people.py`)."""
from __future__ import annotations

import html
from typing import Any

from modlens.analysis import people
from modlens.analysis.sections.human import no_ratings
from modlens.analysis.data import StudyData
from modlens.analysis.references import cite
from modlens.analysis.sections.base import Section
from modlens.analysis.sections.html import WARN_STYLE, detector, plt, png, table
from modlens.analysis.skip import Skip

METHOD = (f"Ordered logistic regression (proportional odds, maximum likelihood; {cite('mccullagh')}) of each attribute's majority "
          "rating on the detector score plus platform indicators (reference: the most frequent platform). "
          "Curves give P(level | score) per platform; the crossing is the score where the top level becomes "
          "more likely than not (±: delta-method standard error).")


def analyze(data: StudyData, ratings: dict[str, Any] | Skip) -> dict[str, Any] | Skip:
    """`ratings`: the human section's result (its per-comment majorities)."""
    if not data.ratings:
        return no_ratings(data)
    if isinstance(ratings, Skip) or not ratings.get("majority"):
        return Skip("no comment has a majority rating (every rating excluded, or ties dropped)")
    result = people.analyze(data, ratings)
    if result is None:
        return Skip("no comment with a majority rating has a detector score: score them with modlens rescore")
    errors = [f"{detector(d['detector'], d['version'])} {attr}: {f['error']}"
              for d in result["detectors"] for attr, f in d["attributes"].items() if "error" in f]
    if len(errors) == sum(len(d["attributes"]) for d in result["detectors"]):  # not one model fitted
        return Skip("no model could be fitted: " + "; ".join(errors))
    return result


def render(s: dict[str, Any]) -> str:
    pyplot = plt()
    mins = s.get("minimums", {})
    out = [f"<p class=note>Intervals: {s.get('confidence', 0.95):.0%} delta-method (estimate ± 1.96 SE). Before each fit "
           "an exact linear-programming test checks for separation (a score threshold or a platform that splits the levels "
           "with no overlap, 'complete', or overlap only at ties, 'quasi'): the maximum-likelihood estimate then does not "
           "exist, and the Firth-type penalized fit (Jeffreys prior) is shown instead, marked ⚠. Warnings below "
           f"{mins.get('comments_per_platform', 30)} comments per platform or {mins.get('majorities_per_level', 10)} "
           "majorities per level.</p>"]
    grid = s["grid"]

    def crossing(e: dict[str, Any], key: str) -> str | None:
        if e.get(key) is None:
            return None
        ci = e.get(f"{key}_ci")
        se = e.get(f"{key}_se")  # None: the fit has no standard error, and the page says so
        text = f"{e[key]:.3f} " + ("(no SE)" if se is None else f"± {se:.3f}")
        text += f" [{ci[0]:.3f}, {ci[1]:.3f}]" if ci else ""
        return text + (" ⚠" if e.get(f"{key}_ci_note") else "")

    for det in s["detectors"]:
        out.append(f"<h3>{html.escape(detector(det['detector'], det['version']))}</h3>")
        for attr, f in det["attributes"].items():
            problems = f.get("warnings", []) if "error" not in f else [f"not fitted: {f['error']}"]
            if "error" not in f and not f.get("reliable", True):
                problems = ["UNRELIABLE: do not cite these numbers", *problems]
            out += [f'<div class=warn style="{WARN_STYLE}">⚠ <b>{html.escape(attr)}</b>: {html.escape(w)}</div>'
                    for w in problems]
        rows = []
        for attr, f in det["attributes"].items():
            if "error" in f:
                rows.append([attr, f["n"], f["error"], "", "", "", ""])
                continue
            coef = f["coefficients"][0]
            coef_text = f"{coef['coef']:.2f}" + (f" (p={coef['p']:.2g})" if coef["p"] is not None else "")
            if f.get("separation"):
                coef_text += f" ⚠ penalized ({f['separation']} separation)"
            if f.get("converged") is False:  # the warning above says which check failed
                coef_text += " ⚠ did not converge"
            for p, e in f["platforms"].items():
                cross, half = crossing(e, "crossing_top"), crossing(e, "crossing_upper_half")
                half_note = e.get("crossing_upper_half_ci_note")
                notes = "; ".join(n for n in (e.get("crossing_top_ci_note"), half_note and f"upper half: {half_note}") if n)
                rows.append([attr, e["n"], p, coef_text, f"P({f['levels'][-1]}) > 0.5 above {cross}",
                             "" if half is None else f"P(≥ {f['levels'][2]}) > 0.5 above {half}", notes])
        out.append(table(["attribute", "comments", "platform", "score coefficient", "crossing (top level) ± SE [95% CI]",
                           "crossing (upper half) ± SE [95% CI]", "interval not trustworthy because"], rows))
        attrs = [a for a, f in det["attributes"].items() if "error" not in f]
        if not attrs:
            continue
        fig, axes = pyplot.subplots(1, len(attrs), figsize=(3.4 * len(attrs), 2.8), squeeze=False)
        styles = ["-", "--", ":", "-."]
        for ax, attr in zip(axes[0], attrs):
            f = det["attributes"][attr]
            for i, e in enumerate(f["platforms"].values()):
                for k, lv in enumerate(f["levels"]):
                    ax.plot(grid, e["curves"][lv], styles[i % 4], color=pyplot.cm.viridis(k / max(1, len(f["levels"]) - 1)),
                            label=f"{lv}" if i == 0 else None)
            ax.axhline(0.5, color="grey", lw=0.5)
            ax.set_title(f"{attr} (line style = platform)" + (" ⚠ penalized" if f.get("separation") else ""), fontsize=8)
            ax.set_xlabel("detector score", fontsize=8)
            ax.legend(fontsize=6)
        out.append(png(fig))
        out.append("<p class=note>Platforms by line style: " + ", ".join(
            f"{styles[i % 4]} {html.escape(p)}" for i, p in enumerate(det["attributes"][attrs[0]]["platforms"])) + "</p>")
    return "".join(out)


SECTION = Section(key='people', title='2. Detectors vs people, per platform', method=METHOD, analyze=analyze, render=render, needs=("human",))
