"""The analysis report: every section computed from the study log, as JSON (`build`) or as one
self-contained HTML page (`render_html`: plots embedded as base64 PNG, tables, a methods note
per section, the detector versions used). A section appears only when the log has its data."""
from __future__ import annotations

import base64
import html
import io
import json
import math
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from modlens import __version__
from modlens.analysis import attacks, human, normalization, overlap, people, robustness, sass
from modlens.analysis.data import StudyData, load

METHODS = {
    "human": "Ratings with an inconsistent anchor pair (seed 003, Table 1), ratings of gold comments and ratings in "
             "rater tasks (15 ratings) that Table 11's rubric does not use are excluded. Krippendorff's alpha is "
             "ordinal, computed from the coincidence matrix. The majority is the mode; two-way ties follow Tables 13 "
             "and 15, other ties are dropped. One vote per rater and comment (their latest usable rating). Alpha "
             "uses only comments with two or more raters; a comment with one rater keeps that rating as its "
             "majority ('single rater').",
    "overlap": "Distinct raters per comment, over the ratings section 1 uses (after its exclusions, one per rater and "
               "comment) and over every rating; gold comments left out. Minimums: 2 raters for alpha (a pairable "
               "value), 3 for a majority that is neither one person's answer nor a two-way tie settled by a rule. "
               "Rater pairs: pairs of raters who rated at least k of the same comments.",
    "people": "Ordered logistic regression (proportional odds, maximum likelihood) of each attribute's majority rating "
              "on the detector score plus platform indicators (reference: the most frequent platform). Curves give "
              "P(level | score) per platform; the crossing is the score where the top level becomes more likely than "
              "not (±: delta-method standard error).",
    "robustness": "Pairs of a labelled comment and one of its variants (seed 000, Table 4). Accuracy at threshold t: "
                  "share of texts whose decision (score ≥ t) matches the gold label. ΔAUC: area under the clean "
                  "accuracy-vs-threshold curve minus the perturbed one. ΔACC: perturbed minus clean accuracy at the "
                  "detector's threshold. 'normalized': the perturbed text after the normalizer.",
    "normalization": "Token at the perturbed position of the normalizer's output, lowercased, equals the clean word "
                     "(seed 000, Table 3). Google and Bing are the dataset authors' recorded results.",
    "attacks": "Attack success rate: false-negative rate of the target on TAEs (false-positive rate on BAEs), skipped "
               "attempts excluded; 'verified' recomputes it from the target's logged score. Transfer: share of "
               "successful adversarial texts that each detector also gets wrong at its own threshold, counting for "
               "a detector only texts whose seed it judged right; exact duplicates once (seed 002).",
    "sass": "Human label: human score > 0.5 (seed 004). Precision, recall and F1 at each detector's threshold; mean "
            "scores per category.",
}
TITLES = {"human": "1. Human ratings", "overlap": "1.1 Rating overlap", "people": "2. Detectors vs people, per platform",
          "robustness": "3. Robustness to perturbation", "normalization": "4. Normalization accuracy",
          "attacks": "5. Attacks and transfer", "sass": "6. SASS-style categories"}


def build(data: StudyData) -> dict[str, Any]:
    h = human.analyze(data)
    sections = {
        "human": h, "overlap": overlap.analyze(data), "people": people.analyze(data, h), "robustness": robustness.analyze(data),
        "normalization": normalization.analyze(data), "attacks": attacks.analyze(data), "sass": sass.analyze(data),
    }
    if h:
        h = dict(h)
        h.pop("majority")  # per-comment detail: in the export, not the report
        sections["human"] = h
    counts = {"comments": len(data.comments), "ratings": len(data.ratings), "variants": len(data.variants),
              "platforms": {p: sum(1 for c in data.comments.values() if c["platform"] == p) for p in data.platforms()}}
    return {
        "modlens_version": __version__, "generated_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "db": str(data.path), "counts": counts,
        "detectors": [{"name": d.name, "version": d.version, "toxicity_label": d.toxicity_label,
                       "threshold": d.threshold, "config": d.config} for d in data.detectors.values()],
        "audit_runs": data.runs, "methods": {k: METHODS[k] for k, v in sections.items() if v},
        "sections": {k: v for k, v in sections.items() if v},
    }


def report_from_db(path: str | Path) -> dict[str, Any]:
    return build(load(path))


def to_json(report: dict[str, Any]) -> str:
    def clean(o):
        if isinstance(o, float) and not math.isfinite(o):
            return None
        if isinstance(o, dict):
            return {str(k): clean(v) for k, v in o.items()}
        if isinstance(o, (list, tuple)):
            return [clean(v) for v in o]
        return o
    return json.dumps(clean(report), indent=2, default=str)


# --- HTML ---------------------------------------------------------------------------------------

def _fmt(v: Any, digits: int = 3) -> str:
    if v is None:
        return "–"
    if isinstance(v, float):
        return f"{v:.{digits}f}"
    return html.escape(str(v))


def _table(header: list[str], rows: list[list[Any]]) -> str:
    head = "".join(f"<th>{html.escape(h)}</th>" for h in header)
    body = "".join("<tr>" + "".join(f"<td>{_fmt(c)}</td>" for c in r) + "</tr>" for r in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _png(fig) -> str:
    import matplotlib.pyplot as plt

    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=90, bbox_inches="tight")
    plt.close(fig)
    return f'<img alt="plot" src="data:image/png;base64,{base64.b64encode(buf.getvalue()).decode()}">'


def _plt():
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt


def _html_human(s: dict) -> str:
    plt = _plt()
    out = [f"<p>{s['n_ratings']} ratings by {s['n_raters']} raters; {s['n_valid']} used. Excluded: "
           + (", ".join(f"{html.escape(k)}: {v}" for k, v in s["excluded"].items()) or "none") + ".</p>"]
    out.append(_table(["attribute", "comments", "with ≥ 2 raters (α)", "ratings", "Krippendorff α (ordinal)",
                       "agreement", "ties resolved", "ties dropped", "single rater"],
                      [[a["name"], a["n_comments"], a.get("n_comments_paired"), a["n_ratings"], a["alpha"],
                        a["agreement_level"], a["decided_by"].get("tie rule", 0), a["decided_by"].get("tie dropped", 0),
                        a["decided_by"].get("single rater", 0)] for a in s["attributes"]]))
    fig, axes = plt.subplots(1, len(s["attributes"]), figsize=(3.2 * len(s["attributes"]), 2.6))
    axes = axes if len(s["attributes"]) > 1 else [axes]
    for ax, a in zip(axes, s["attributes"]):
        n_r, n_m = max(1, sum(a["distribution"].values())), max(1, sum(a["majority"].values()))
        ax.bar(range(len(a["levels"])), [a["distribution"][l] / n_r for l in a["levels"]], color="#7a9cc6", label="share of ratings")
        ax.bar(range(len(a["levels"])), [a["majority"][l] / n_m for l in a["levels"]], color="#1f4e79", width=0.4,
               label="share of majorities")
        ax.set_xticks(range(len(a["levels"])), [l.replace(" ", "\n") for l in a["levels"]], fontsize=7)
        ax.set_title(a["name"], fontsize=9)
    axes[0].legend(fontsize=7)
    out.append(_png(fig))
    out.append("<h3>Raters (anchor consistency, Table 11 rubric per task of 15)</h3>")
    out.append(_table(["rater", "ratings", "anchor consistency", "gold wrong", "gold inconsistent", "tasks not used",
                       "ratings excluded"],
                      [[r["rater_id"], r["n_ratings"], r["anchor_consistency"], r["n_gold_wrong"], r["n_gold_inconsistent"],
                        sum(t != "approve, use" for t in r["tasks"]), r["excluded_rating_ids"]] for r in s["raters"]]))
    return "".join(out)


def _html_overlap(s: dict) -> str:
    pairs = s["rater_pairs"]
    out = [f"<p>{s['n_comments']} rated comments (gold left out), {s['n_raters']} raters with usable ratings "
           f"({s['n_raters_all_ratings']} with any); {s['n_comments_every_rating_excluded']} comments lost every rating "
           "to the exclusions.</p>"]
    for title, key in (("Comments by number of raters (ratings used)", "comments_by_raters"),
                       ("Comments by number of raters (every rating)", "comments_by_raters_all_ratings")):
        out.append(f"<h3>{title}</h3>")
        out.append(_table(["platform", *(f"{b} rater{'s' * (b != '1')}" for b in overlap.BUCKETS)],
                          [[p, *row.values()] for p, row in s[key].items()]))
    out.append(f"<p>Rater pairs: {pairs['n_pairs']}; sharing at least "
               + ", ".join(f"{k} comment{'s' * (k != '1')}: {n}" for k, n in pairs["sharing_at_least"].items())
               + (f". Raters sharing no comment: {html.escape(', '.join(pairs['raters_sharing_nothing']))}."
                  if pairs["raters_sharing_nothing"] else ".") + "</p>")
    mins = s["min_raters"]
    out.append(f"<h3>Comments below the minimum (alpha: {mins['alpha']} raters, majority: {mins['majority']})</h3>"
               f"<p>{s['below_minimum']['alpha']} below alpha's, {s['below_minimum']['majority']} below the majority's; "
               f"listed: {len(s['comments_below_minimum'])} of {s['comments_below_minimum_total']}.</p>")
    out.append(_table(["comment id", "platform", "key", "raters (used)", "raters (any rating)", "lacks"],
                      [[e["comment_id"], e["platform"], e["key"], e["n_raters"], e["n_raters_all_ratings"],
                        ", ".join(e["lacks"])] for e in s["comments_below_minimum"]]))
    return "".join(out)


def _html_people(s: dict) -> str:
    plt = _plt()
    out = []
    grid = s["grid"]
    for det in s["detectors"]:
        out.append(f"<h3>{html.escape(det['detector'])} <small>{html.escape(det['version'])}</small></h3>")
        rows = []
        for attr, f in det["attributes"].items():
            if "error" in f:
                rows.append([attr, f["n"], f["error"], "", "", ""])
                continue
            coef = f["coefficients"][0]
            for p, e in f["platforms"].items():
                cross = None if e["crossing_top"] is None else f"{e['crossing_top']:.3f} ± {(e['crossing_top_se'] or 0):.3f}"
                half = e.get("crossing_upper_half")
                half = None if half is None else f"{half:.3f} ± {(e.get('crossing_upper_half_se') or 0):.3f}"
                rows.append([attr, e["n"], p, f"{coef['coef']:.2f} (p={coef['p']:.2g})" if coef["p"] is not None else coef["coef"],
                             f"P({f['levels'][-1]}) > 0.5 above {cross}",
                             "" if half is None else f"P(≥ {f['levels'][2]}) > 0.5 above {half}"])
        out.append(_table(["attribute", "comments", "platform", "score coefficient", "crossing (top level)",
                           "crossing (upper half)"], rows))
        attrs = [a for a, f in det["attributes"].items() if "error" not in f]
        fig, axes = plt.subplots(1, len(attrs), figsize=(3.4 * len(attrs), 2.8), squeeze=False)
        styles = ["-", "--", ":", "-."]
        for ax, attr in zip(axes[0], attrs):
            f = det["attributes"][attr]
            for i, (p, e) in enumerate(f["platforms"].items()):
                for k, lv in enumerate(f["levels"]):
                    ax.plot(grid, e["curves"][lv], styles[i % 4], color=plt.cm.viridis(k / max(1, len(f["levels"]) - 1)),
                            label=f"{lv}" if i == 0 else None)
            ax.axhline(0.5, color="grey", lw=0.5)
            ax.set_title(f"{attr} (line style = platform)", fontsize=8)
            ax.set_xlabel("detector score", fontsize=8)
            ax.legend(fontsize=6)
        out.append(_png(fig))
        out.append("<p class=note>Platforms by line style: " + ", ".join(
            f"{styles[i % 4]} {html.escape(p)}" for i, p in enumerate(det["attributes"][attrs[0]]["platforms"])) + "</p>" if attrs else "")
    return "".join(out)


def _html_robustness(s: dict) -> str:
    plt = _plt()
    out = []
    t = s["thresholds"]
    for det in s["detectors"]:
        out.append(f"<h3>{html.escape(det['detector'])} <small>{html.escape(det['version'])}, threshold {det['threshold']}</small></h3>")
        rows = []
        for r in det["rows"]:
            rows.append([r["platform"], r["type"], r["n_pairs"], r["acc_clean"], r["acc_perturbed"], r["delta_acc"], r["delta_auc"],
                         r["roc_auc_clean"], r["roc_auc_perturbed"]])
            for nz, n in r["normalized"].items():
                rows.append([r["platform"], f"{r['type']} + {nz}", n["n_pairs"], n["acc_clean"], n["acc_perturbed"],
                             n["delta_acc"], n["delta_auc"], None, None])
        out.append(_table(["platform", "type", "pairs", "ACC clean", "ACC perturbed", "ΔACC", "ΔAUC", "ROC AUC clean",
                           "ROC AUC perturbed"], rows))
        alls = [r for r in det["rows"] if r["type"] == "all"]
        if alls:
            fig, axes = plt.subplots(1, len(alls), figsize=(4 * len(alls), 2.8), squeeze=False)
            for ax, r in zip(axes[0], alls):
                ax.plot(t, r["curve_clean"], label="clean")
                ax.plot(t, r["curve_perturbed"], label="perturbed")
                for nz, n in r["normalized"].items():
                    ax.plot(t, n["curve_perturbed"], "--", label=f"perturbed, normalized")
                ax.set_title(r["platform"], fontsize=9)
                ax.set_xlabel("threshold", fontsize=8)
                ax.set_ylabel("accuracy", fontsize=8)
                ax.legend(fontsize=7)
            out.append(_png(fig))
    return "".join(out)


def _html_normalization(s: dict) -> str:
    return _table(["system", *s["types"]], [[sys, *[None if t not in per else f"{per[t]['accuracy']:.3f} (n={per[t]['n']})"
                                                    for t in s["types"]]] for sys, per in s["systems"].items()])


def _html_attacks(s: dict) -> str:
    out = [_table(["target", "goal", "attempts", "skipped", "success (recorded)", "success (verified)", "queries / success",
                   "judges", "strategies"],
                  [[r["target"] + (f" [{r['config']}]" if r.get("config") else ""), r["goal"], r["attempts"],
                    r.get("skipped"), r["success_recorded"], r["success_verified"], r["queries_per_success"],
                    ", ".join(r.get("judges", [])), ", ".join(r["strategies"])] for r in s["rows"]])]
    out.append("<h3>Transfer (rows: attacked target; cells: share the column detector also gets wrong)</h3>")
    out.append(_table(["successful against", *s["detectors"]],
                      [[k, *[row[d]["rate"] for d in s["detectors"]]] for k, row in s["transfer"].items()]))
    notes = [n for m in s.get("matrices", []) for n in m.get("notes", [])]
    out += [f'<p class="note">{html.escape(n)}</p>' for n in notes]
    return "".join(out)


def _html_sass(s: dict) -> str:
    cats = list(s["human_mean_by_category"])
    out = [f"<p>{s['n']} texts, {s['share_toxic']:.1%} toxic by the human label.</p>",
           _table(["detector", "precision", "recall", "F1", "n"],
                  [[d["detector"], d["precision"], d["recall"], d["f1"], d["n"]] for d in s["detectors"]]),
           _table(["category", "human", *[d["detector"] for d in s["detectors"]]],
                  [[c, s["human_mean_by_category"][c], *[d["mean_by_category"].get(c) for d in s["detectors"]]] for c in cats])]
    return "".join(out)


RENDER = {"human": _html_human, "overlap": _html_overlap, "people": _html_people, "robustness": _html_robustness,
          "normalization": _html_normalization, "attacks": _html_attacks, "sass": _html_sass}

CSS = """body{font:14px/1.45 system-ui,sans-serif;max-width:1100px;margin:2em auto;padding:0 1em;color:#222}
h1{font-size:1.6em}h2{border-bottom:2px solid #1f4e79;padding-bottom:.2em;margin-top:2em}
table{border-collapse:collapse;margin:.6em 0;font-size:12px}td,th{border:1px solid #ccc;padding:3px 7px;text-align:right}
td:first-child,th:first-child{text-align:left}th{background:#eef3f9}.methods{background:#f7f7f2;border-left:4px solid #b5a642;
padding:.4em .8em;font-size:12.5px}small{color:#666;font-weight:normal}img{max-width:100%}.note{font-size:12px;color:#555}"""


def render_html(report: dict[str, Any]) -> str:
    parts = [f"<!doctype html><html><head><meta charset=utf-8><title>modlens report</title><style>{CSS}</style></head><body>",
             "<h1>modlens report</h1>",
             f"<p class=note>{html.escape(report['db'])} · generated {report['generated_at']} · modlens {report['modlens_version']}</p>",
             f"<p>{report['counts']['comments']} comments on "
             + ", ".join(f"{html.escape(p)} ({n})" for p, n in report["counts"]["platforms"].items())
             + f"; {report['counts']['ratings']} ratings; {report['counts']['variants']} variants.</p>",
             "<h2>Detectors</h2>",
             _table(["name", "version", "toxicity label", "threshold", "configuration"],
                    [[d["name"], d["version"], d["toxicity_label"], d["threshold"], json.dumps(d["config"])[:120]]
                     for d in report["detectors"]])]
    if not report["sections"]:
        parts.append("<p>The log has no data any section can use yet.</p>")
    for key, section in report["sections"].items():
        parts.append(f"<h2>{TITLES[key]}</h2><p class=methods><b>Method.</b> {html.escape(METHODS[key])}</p>")
        parts.append(RENDER[key](section))
    parts.append("</body></html>")
    return "\n".join(parts)
