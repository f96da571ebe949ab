"""Section 3: accuracy on clean/perturbed pairs (`analysis/robustness.py`)."""
from __future__ import annotations

import html
from typing import Any

from modlens.analysis import robustness
from modlens.analysis.data import StudyData
from modlens.analysis.sections.base import Section
from modlens.analysis.sections.html import detector, plt, png, table
from modlens.analysis.skip import Skip

METHOD = ("Pairs of a labelled comment and one of its variants (Ye, Le and Lee 2025, Table 4). Accuracy at threshold t: "
          "share of texts whose decision (score ≥ t) matches the gold label. ΔAUC: area under the clean "
          "accuracy-vs-threshold curve minus the perturbed one. ΔACC: perturbed minus clean accuracy at the "
          "detector's threshold. 'normalized': the perturbed text after the normalizer. Decision flip rate: share of "
          "pairs (labelled or not) whose decision at the threshold the perturbation changed. ⚠: fewer than "
          f"{robustness.MIN_PAIRS} pairs.")


def analyze(data: StudyData) -> dict[str, Any] | Skip:
    result = robustness.analyze(data)
    if result:
        return result
    if not data.variants:
        return Skip("no variants: run modlens audit with --perturb STRATEGY, or audit a dataset with human-made "
                    "variants (noisyhate, hatecheck)")
    if all(v.get("attack") for v in data.variants):
        return Skip("only attack variants (see the attacks section): for perturbation pairs run modlens audit with "
                    "--perturb")
    return Skip("no detector scored both a comment and its variant: score them with modlens rescore")


def _warned(row: dict[str, Any]) -> str:
    found = row.get("warnings") or []  # a report's JSON from before the warnings has none
    return ("⚠ " + "; ".join(found)) if found else ""


def render(s: dict[str, Any]) -> str:
    pyplot = plt()
    out = []
    t = s["thresholds"]
    for det in s["detectors"]:
        out.append(f"<h3>{html.escape(detector(det['detector'], det['version']))} <small>threshold {det['threshold']}</small></h3>")
        rows = []
        for r in det["rows"]:
            rows.append([r["platform"], r["type"], r["n_pairs"], r["acc_clean"], r["acc_perturbed"], r["delta_acc"], r["delta_auc"],
                         r["roc_auc_clean"], r["roc_auc_perturbed"], _warned(r)])
            for nz, n in r["normalized"].items():
                rows.append([r["platform"], f"{r['type']} + {nz}", n["n_pairs"], n["acc_clean"], n["acc_perturbed"],
                             n["delta_acc"], n["delta_auc"], None, None, _warned(n)])
        out.append(table(["platform", "type", "pairs", "ACC clean", "ACC perturbed", "ΔACC", "ΔAUC", "ROC AUC clean",
                           "ROC AUC perturbed", "warnings"], rows))
        flips = det.get("flip_rate") or {}
        if flips:
            out.append("<h4>decision flip rate <small>(every pair, labelled or not: its decision at the threshold "
                       "changed by the perturbation)</small></h4>")
            out.append(table(["platform", "pairs", "flip rate", "warnings"],
                             [[p, det["n_flip_pairs"][p], rate, _warned({"warnings": robustness.few_pairs(
                                 det["n_flip_pairs"][p])})] for p, rate in flips.items()]))
        alls = [r for r in det["rows"] if r["type"] == "all"]
        if alls:
            fig, axes = pyplot.subplots(1, len(alls), figsize=(4 * len(alls), 2.8), squeeze=False)
            for ax, r in zip(axes[0], alls):
                ax.plot(t, r["curve_clean"], label="clean")
                ax.plot(t, r["curve_perturbed"], label="perturbed")
                for n in r["normalized"].values():
                    ax.plot(t, n["curve_perturbed"], "--", label="perturbed, normalized")
                ax.set_title(r["platform"], fontsize=9)
                ax.set_xlabel("threshold", fontsize=8)
                ax.set_ylabel("accuracy", fontsize=8)
                ax.legend(fontsize=7)
            out.append(png(fig))
    return "".join(out)


SECTION = Section(key='robustness', title='3. Robustness to perturbation', method=METHOD, analyze=analyze, render=render)
