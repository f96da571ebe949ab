"""The analysis report: every section computed from the study log, as JSON (`build`) or as one
self-contained HTML page (`render_html`: plots embedded as base64 PNG, tables, a methods note
per section, the detector versions used). A section appears only when the log has its data; every
other one is listed under `skipped` with the reason, worded so a user can act on it. A section's
`analyze()` returns its result, or `Skip(reason)` when the log cannot fill it (`analysis/skip.py`);
for sections that still return None, `why_empty` gives the reason."""
from __future__ import annotations

import base64
import html
import io
import json
import math
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Sequence

from modlens import __version__
from modlens.analysis import attacks, fusion, hatecheck, human, labelled, normalization, overlap, people, robustness, sass
from modlens.analysis.data import StudyData, load
from modlens.analysis.skip import Skip

METHODS = {
    "human": "Ratings with an inconsistent anchor pair (seed 003, Table 1), ratings of gold comments, of attack texts under "
             "review (section 5) and ratings in "
             "rater tasks (15 ratings) that Table 11's rubric does not use are excluded. Krippendorff's alpha is "
             "ordinal, computed from the coincidence matrix. The majority is the mode; two-way ties follow Tables 13 "
             "and 15, other ties are dropped. One vote per rater and comment (their latest usable rating). Alpha "
             "uses only comments with two or more raters; a comment with one rater keeps that rating as its "
             "majority ('single rater').",
    "overlap": "Distinct raters per comment, over the ratings section 1 uses (after its exclusions, one per rater and "
               "comment) and over every rating; gold comments and attack texts under review left out. Minimums: 2 raters for alpha (a pairable "
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
               "a detector only texts whose seed it judged right; exact duplicates once (seed 002). Rows are recipe x "
               "target. 'After filters': successes that also pass TaeBench's quality filters (dedup, the AND ensemble "
               "of the other detectors, MiniLM meaning similarity, normalizer-edit fluency). 'Undone by "
               "normalization': share of successes the target gets right again once the text is normalized.",
    "sass": "Human label: human score > 0.5 (seed 004). Precision, recall and F1 at each detector's threshold, with "
            "95% percentile bootstrap intervals (stratified by label, 1000 resamples, seed 0); mean scores per category. "
            "A file without human scores is reported by category only.",
    "labelled": "Comments with a gold toxic label, per source (dataset or site; never pooled, datasets define 'toxic' "
                "differently) and detector version. Precision, recall, F1 and accuracy at the detector's threshold "
                "(score ≥ threshold is toxic); ROC-AUC (ties count half); PR-AUC = average precision (as scikit-learn); "
                "Brier score. Brackets: 95% percentile bootstrap intervals, stratified by gold label (1000 resamples, "
                "seed 0; fewer above 200,000 items). Best-F1 threshold: chosen on the same data, so its F1 is "
                "optimistic. Reliability: 10 equal-width score bins, share of gold positives per bin. Groups: each "
                "value of a group label (platform, target_ident, target, group). ⚠: fewer than 30 items, or fewer "
                "than 5 positives or negatives.",
    "hatecheck": "HateCheck (Röttger et al., 2021): a case is right when the detector's decision (score ≥ its "
                 "threshold) matches the gold label (hateful = toxic). Accuracy per functionality (F1–F29, the "
                 "paper's order), per target identity and overall; brackets: Wilson 95% intervals. The spell_* "
                 "cases also appear as clean/perturbed pairs in the robustness section.",
    "fusion": "DUO semantic fusion (seed 001, sections 3.4 and 4.2). Oracle: a seed sentence counts when the detector "
              "scores it toxic (score ≥ its threshold; its first score, as each case scores its seed again). "
              "Metamorphic relation: a fused case whose seed is toxic must be toxic. Error finding rate = fused "
              "cases scored below the threshold / fused cases with a toxic seed that the detector scored; Wilson 95% "
              "intervals. Baseline: share flagged of every case's seed, each half alone and the fused case. Parts "
              "the detector cannot read here (audio, video without a reader) are 'not scored locally', never "
              "errors; a text-only detector sees only the caption of a case with media (counted as media ignored).",
}
TITLES = {"human": "1. Human ratings", "overlap": "1.1 Rating overlap", "people": "2. Detectors vs people, per platform",
          "robustness": "3. Robustness to perturbation", "normalization": "4. Normalization accuracy",
          "attacks": "5. Attacks and transfer", "sass": "6. SASS-style categories",
          "labelled": "7. Detectors on labelled data", "hatecheck": "8. HateCheck by functionality",
          "fusion": "9. Semantic fusion (DUO): error finding rate"}

NO_RATINGS = ("no ratings in the log: participants rate comments in the browser extension (modlens serve), "
              "or merge their bundles (modlens merge)")


def why_empty(key: str, data: StudyData, human_section: dict[str, Any] | None) -> str:
    """Why a section whose analyze() returned None (rather than a Skip) has nothing to show."""
    if key in ("human", "overlap", "people") and not data.ratings:
        return NO_RATINGS
    if key == "overlap":
        return "every rating is of a gold comment (attention checks are not data)"
    if key == "people":
        if not human_section or not human_section.get("majority"):
            return "no comment has a majority rating (every rating excluded, or ties dropped)"
        return (f"no attribute has {people.MIN_COMMENTS} or more comments with a majority rating and a detector score: "
                "rate more comments, or score them with modlens rescore")
    if key == "robustness":
        if not data.variants:
            return ("no variants: run modlens audit with --perturb STRATEGY, or audit a dataset with human-made "
                    "variants (noisyhate, hatecheck)")
        if all(v.get("attack") for v in data.variants):
            return "only attack variants (see the attacks section): for perturbation pairs run modlens audit with --perturb"
        return "no detector scored both a comment and its variant: score them with modlens rescore"
    if key == "normalization":
        if not data.normalizations:
            return "no normalized texts: run modlens audit with --normalize"
        return ("no variant records the perturbed word's position and clean word (NoisyHate's layout): "
                "modlens audit noisyhate --normalize")
    if key == "attacks":
        return "no attack variants: run modlens audit with --attack tae|bae"
    return "the log has no data for this section"


def build(data: StudyData) -> dict[str, Any]:
    h = human.analyze(data)
    h_dict = h if isinstance(h, dict) else None
    results: dict[str, Any] = {
        "human": h, "overlap": overlap.analyze(data), "people": people.analyze(data, h_dict),
        "robustness": robustness.analyze(data), "normalization": normalization.analyze(data),
        "attacks": attacks.analyze(data), "sass": sass.analyze(data), "labelled": labelled.analyze(data),
        "hatecheck": hatecheck.analyze(data), "fusion": fusion.analyze(data),
    }
    if h_dict:
        results["human"] = {k: v for k, v in h_dict.items() if k != "majority"}  # per-comment detail: in the export
    sections, skipped = {}, {}
    for key, result in results.items():
        if isinstance(result, Skip):
            skipped[key] = result.reason
        elif not result:
            skipped[key] = why_empty(key, data, h_dict)
        else:
            sections[key] = result
    counts = {"comments": len(data.comments), "ratings": len(data.ratings), "variants": len(data.variants),
              "platforms": {p: sum(1 for c in data.comments.values() if c["platform"] == p) for p in data.platforms()}}
    return {
        "modlens_version": __version__, "generated_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "db": str(data.path), "counts": counts,
        "detectors": [{"name": d.name, "version": d.version, "toxicity_label": d.toxicity_label,
                       "threshold": d.threshold, "config": d.config} for d in data.detectors.values()],
        "audit_runs": data.runs, "label_sets": label_sets_used(data), "methods": {k: METHODS[k] for k in sections},
        "sections": sections, "skipped": skipped,
    }


def label_sets_used(data: StudyData) -> list[dict[str, Any]]:
    """Per source, the gold label set the report used and how it was chosen (docs/ANALYSIS.md#label-sets)."""
    return [{"source": src, **s} for src, s in data.label_sets.items()]


def report_from_db(path: str | Path, label_sets: Sequence[str] = ()) -> dict[str, Any]:
    """`label_sets`: the gold label sets to use (ids or definitions); default, per source, the newest."""
    return build(load(path, label_sets))


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
    boot = s.get("alpha_ci") or {}
    if boot:
        out.append(f"<p class=note>α interval: {boot['confidence']:.0%} {html.escape(boot['method'])} "
                   f"({boot['replicates']} replicates, seed {boot['seed']}: the same log gives the same interval). "
                   f"⚠: fewer than {s.get('min_paired_comments')} comments with two or more raters.</p>")
    warn_style = "background:#fff4e5;border-left:4px solid #d9822b;padding:.3em .8em;margin:.4em 0;font-size:12.5px"
    out += [f'<div class=warn style="{warn_style}">⚠ <b>{html.escape(a["name"])}</b>: {html.escape(w)}</div>'
            for a in s["attributes"] for w in a.get("warnings", [])]

    def alpha_ci(a: dict) -> str:
        ci = a.get("alpha_ci")
        return ("–" if ci is None else f"[{ci[0]:.3f}, {ci[1]:.3f}]") + (" ⚠" if a.get("warnings") else "")

    out.append(_table(["attribute", "comments", "with ≥ 2 raters (α)", "ratings", "Krippendorff α (ordinal)", "α 95% CI",
                       "agreement", "ties resolved", "ties dropped", "single rater"],
                      [[a["name"], a["n_comments"], a.get("n_comments_paired"), a["n_ratings"], a["alpha"], alpha_ci(a),
                        a["agreement_level"], a["decided_by"].get("tie rule", 0), a["decided_by"].get("tie dropped", 0),
                        a["decided_by"].get("single rater", 0)] for a in s["attributes"]]))
    if s["attributes"]:  # none when every rating was excluded
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
    warn_style = "background:#fff4e5;border-left:4px solid #d9822b;padding:.3em .8em;margin:.4em 0;font-size:12.5px"
    mins = s.get("minimums", {})
    out = [f"<p class=note>Intervals: {s.get('confidence', 0.95):.0%} delta-method (estimate ± 1.96 SE). Before each fit "
           "an exact linear-programming test checks for separation (a score threshold or a platform that splits the levels "
           "with no overlap, 'complete', or overlap only at ties, 'quasi'): the maximum-likelihood estimate then does not "
           "exist, and the Firth-type penalized fit (Jeffreys prior) is shown instead, marked ⚠. Warnings below "
           f"{mins.get('comments_per_platform', 30)} comments per platform or {mins.get('majorities_per_level', 10)} "
           "majorities per level.</p>"]
    grid = s["grid"]

    def crossing(e: dict, key: str) -> str | None:
        if e.get(key) is None:
            return None
        ci = e.get(f"{key}_ci")
        text = f"{e[key]:.3f} ± {(e.get(f'{key}_se') or 0):.3f}"
        text += f" [{ci[0]:.3f}, {ci[1]:.3f}]" if ci else ""
        return text + (" ⚠" if e.get(f"{key}_ci_note") else "")

    for det in s["detectors"]:
        out.append(f"<h3>{html.escape(det['detector'])} <small>{html.escape(det['version'])}</small></h3>")
        for attr, f in det["attributes"].items():
            problems = f.get("warnings", []) if "error" not in f else [f"not fitted: {f['error']}"]
            if "error" not in f and not f.get("reliable", True):
                problems = ["UNRELIABLE: do not cite these numbers", *problems]
            out += [f'<div class=warn style="{warn_style}">⚠ <b>{html.escape(attr)}</b>: {html.escape(w)}</div>'
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
            for p, e in f["platforms"].items():
                cross, half = crossing(e, "crossing_top"), crossing(e, "crossing_upper_half")
                half_note = e.get("crossing_upper_half_ci_note")
                notes = "; ".join(n for n in (e.get("crossing_top_ci_note"), half_note and f"upper half: {half_note}") if n)
                rows.append([attr, e["n"], p, coef_text, f"P({f['levels'][-1]}) > 0.5 above {cross}",
                             "" if half is None else f"P(≥ {f['levels'][2]}) > 0.5 above {half}", notes])
        out.append(_table(["attribute", "comments", "platform", "score coefficient", "crossing (top level) ± SE [95% CI]",
                           "crossing (upper half) ± SE [95% CI]", "interval not trustworthy because"], rows))
        attrs = [a for a, f in det["attributes"].items() if "error" not in f]
        if not attrs:
            continue
        fig, axes = plt.subplots(1, len(attrs), figsize=(3.4 * len(attrs), 2.8), squeeze=False)
        styles = ["-", "--", ":", "-."]
        for ax, attr in zip(axes[0], attrs):
            f = det["attributes"][attr]
            for i, (p, e) in enumerate(f["platforms"].items()):
                for k, lv in enumerate(f["levels"]):
                    ax.plot(grid, e["curves"][lv], styles[i % 4], color=plt.cm.viridis(k / max(1, len(f["levels"]) - 1)),
                            label=f"{lv}" if i == 0 else None)
            ax.axhline(0.5, color="grey", lw=0.5)
            ax.set_title(f"{attr} (line style = platform)" + (" ⚠ penalized" if f.get("separation") else ""), fontsize=8)
            ax.set_xlabel("detector score", fontsize=8)
            ax.legend(fontsize=6)
        out.append(_png(fig))
        out.append("<p class=note>Platforms by line style: " + ", ".join(
            f"{styles[i % 4]} {html.escape(p)}" for i, p in enumerate(det["attributes"][attrs[0]]["platforms"])) + "</p>")
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
    def filtered(r: dict) -> str:
        parts = [f"{f} {n}" for f, n in r.get("filtered_out", {}).items()]
        parts += [f"{f} not checked {n}" for f, n in r.get("not_checked", {}).items()]
        return ", ".join(parts)

    def recovered(r: dict) -> str:
        rec = r.get("recovery") or {}
        if not rec.get("n"):
            return "–" if not rec.get("unmeasured") else f"not measured ({rec['unmeasured']})"
        return f"{rec['share']:.3f} ({rec['recovered']}/{rec['n']})"

    out = [_table(["recipe", "target", "goal", "attempts", "skipped", "success (recorded)", "success (verified)",
                   "success after filters", "removed by filters", "queries / success", "words changed",
                   "undone by normalization", "judges"],
                  [[r.get("recipe", ""), r["target"] + (f" [{r['config']}]" if r.get("config") else ""), r["goal"],
                    r["attempts"], r.get("skipped"), r["success_recorded"], r["success_verified"],
                    r.get("success_after_filters"), filtered(r), r["queries_per_success"],
                    r.get("words_changed_share"), recovered(r), ", ".join(r.get("judges", []))] for r in s["rows"]])]
    q = s.get("quality") or {}
    if q:
        out.append(f'<p class="note">Quality filters: {html.escape(", ".join(q.get("filters", [])))}; similarity ≥ '
                   f'{q.get("min_similarity")}, at most {q.get("max_normalizer_edits")} extra normalizer edits'
                   + "".join(f"; {html.escape(k)} not checked: {html.escape(v)}" for k, v in q.get("unavailable", {}).items())
                   + ".</p>")
    out += [f'<p class="note">{html.escape(n)}</p>' for n in s.get("recovery_notes", [])]
    human_rows = (s.get("human") or {}).get("rows") or []
    if human_rows:
        out.append("<h3>Human check (reviewed attack texts rated like any comment)</h3>")
        out.append(_table(["recipe", "target", "goal", "items", "rated", "ratings", "ratings 'toxic'",
                           "ratings 'hard to say'", "items most raters call toxic"],
                          [[h["recipe"], h["target"], h["goal"], h["items"], h["rated"], h["ratings"],
                            h["share_ratings_toxic"], h["share_ratings_hard_to_say"], h["items_majority_toxic"]]
                           for h in human_rows]))
    out.append("<h3>Transfer (rows: attacked target; cells: share the column detector also gets wrong)</h3>")
    out.append(_table(["successful against", *s["detectors"]],
                      [[k, *[row[d]["rate"] for d in s["detectors"]]] for k, row in s["transfer"].items()]))
    notes = [n for m in s.get("matrices", []) for n in m.get("notes", [])]
    out += [f'<p class="note">{html.escape(n)}</p>' for n in notes]
    return "".join(out)


def _with_ci(value: float | None, ci: list[float] | None) -> str:
    """A number with its interval, e.g. `0.812 [0.790, 0.833]`."""
    if value is None:
        return "–"
    return f"{value:.3f}" + ("" if ci is None else f" [{ci[0]:.3f}, {ci[1]:.3f}]")


def _html_sass(s: dict) -> str:
    cats = s.get("categories") or list(s["human_mean_by_category"])
    if s.get("categories_only"):
        out = [f"<p>{s['n']} texts, categories only (the file has no human scores: no precision, recall or F1).</p>"]
    else:
        def ci(d: dict, k: str) -> str:
            return _with_ci(d[k], d.get("ci", {}).get(k))
        out = [f"<p>{s['n']} texts, {s['share_toxic']:.1%} toxic by the human label.</p>",
               _table(["detector", "precision", "recall", "F1", "n"],
                      [[d["detector"], ci(d, "precision"), ci(d, "recall"), ci(d, "f1"), d["n"]] for d in s["detectors"]])]
    human_col = [] if s.get("categories_only") else ["human"]
    out.append(_table(["category", *human_col, *[d["detector"] for d in s["detectors"]]],
                      [[c, *[s["human_mean_by_category"].get(c) for _ in human_col],
                        *[d["mean_by_category"].get(c) for d in s["detectors"]]] for c in cats]))
    return "".join(out)


def _metric_cells(cell: dict) -> list[str]:
    m = cell["metrics"]
    return [_with_ci(m[k]["value"], m[k]["ci"]) for k in ("precision", "recall", "f1", "accuracy", "roc_auc", "pr_auc")]


def _warned(cell: dict) -> str:
    return ("⚠ " + "; ".join(cell["warnings"])) if cell["warnings"] else ""


def _html_labelled(s: dict) -> str:
    plt = _plt()
    b = s["bootstrap"]
    out = [f"<p class=note>Brackets: {b['level']:.0%} intervals ({b['kind']}, {b['resamples']} resamples, fewer above "
           f"{b['fewer_above_items']} items; seed {b['seed']}). ⚠: fewer than {s['min_items']} items or "
           f"{s['min_class']} positives or negatives.</p>"]
    head = ["precision", "recall", "F1", "accuracy", "ROC-AUC", "PR-AUC"]
    for src in s["sources"]:
        dets = src["detectors"]
        used = src.get("label_set")
        gold_set = f"; gold label set {used['label_set_id']}: {html.escape(used['definition'])}" if used else ""
        out.append(f"<h3>{html.escape(src['source'])} <small>{src['n']} labelled comments, {src['positives']} "
                   f"positive{gold_set}</small></h3>")
        out.append(_table(["detector", "version", "threshold", "n", "positives", *head, "Brier",
                           "best-F1 threshold (F1)", "warnings"],
                          [[d["detector"], d["version"], d["threshold"], d["n"], d["positives"], *_metric_cells(d),
                            _with_ci(d["metrics"]["brier"]["value"], d["metrics"]["brier"]["ci"]),
                            None if d["best_f1"] is None else f"{d['best_f1']['threshold']:.3f} ({d['best_f1']['f1']:.3f})",
                            _warned(d)] for d in dets]))
        fig, ax = plt.subplots(figsize=(3.6, 3.2))
        ax.plot([0, 1], [0, 1], color="grey", lw=0.6, ls=":")
        for d in dets:
            bins = [x for x in d["reliability"] if x["n"]]
            ax.plot([x["mean_score"] for x in bins], [x["share_positive"] for x in bins], "o-", ms=3, label=d["detector"])
        ax.set_xlabel("mean score in bin", fontsize=8)
        ax.set_ylabel("share gold-positive", fontsize=8)
        ax.set_title(f"reliability, {src['source']}", fontsize=9)
        ax.legend(fontsize=7)
        out.append(_png(fig))
        for name in s["group_labels"]:
            rows = [[g["value"], d["detector"], g["n"], g["positives"], *_metric_cells(g), _warned(g)]
                    for d in dets for g in d["groups"].get(name, [])]
            if rows:
                out.append(f"<h4>by {html.escape(name)}</h4>")
                out.append(_table([name, "detector", "n", "positives", *head, "warnings"], rows))
    return "".join(out)


def _html_hatecheck(s: dict) -> str:
    dets = s["detectors"]
    names = [d["detector"] for d in dets]
    cols = names if len(set(names)) == len(names) else [d["label"] for d in dets]
    number = {f: i + 1 for i, f in enumerate(hatecheck.FUNCTIONALITIES)}

    def cells(row: dict) -> list[str]:
        return [_with_ci(c["accuracy"], c["ci"]) for c in (row["detectors"][d["label"]] for d in dets)]
    out = [f"<p>{s['n_cases']} cases; accuracy [Wilson 95% interval]. Detectors: "
           + ", ".join(f"{html.escape(d['label'])} (threshold {d['threshold']}, {d['n_scored']} scored)" for d in dets)
           + ".</p>",
           _table(["", "functionality", "description", "gold label", "n", *cols],
                  [[f"F{number[r['key']]}" if r["key"] in number else "", r["key"], r["description"], r["gold"], r["n"],
                    *cells(r)] for r in s["functionalities"]]),
           "<h3>Totals</h3>", _table(["cases", "n", *cols], [[r["key"], r["n"], *cells(r)] for r in s["totals"]])]
    if s["targets"]:
        out += ["<h3>By target identity</h3>",
                _table(["target", "n", *cols], [[r["key"], r["n"], *cells(r)] for r in s["targets"]])]
    return "".join(out)


def _html_fusion(s: dict) -> str:
    def efr(c: dict | None) -> str:
        if not c:
            return ""
        if c["n"]:
            return f"{_with_ci(c['efr'], c['ci'])} ({c['errors']}/{c['n']})"
        why = [f"{label} {c[k]}" for k, label in (("seed_not_toxic", "seed not toxic"), ("seed_unscored", "seed not scored"),
                                                  ("not_scored_locally", "not scored locally"), ("failed", "failed"),
                                                  ("not_scored_yet", "not scored yet")) if c[k]]
        return "– (" + ", ".join(why) + ")" if why else "–"

    def flagged(p: dict) -> str:
        return "–" if not p["n"] else f"{p['share']:.3f} ({p['toxic']}/{p['n']})"

    types, rows_order = s["content_types"], [*s["fusions"], fusion.ALL]
    out = [f"<p>{s['n_cases']} fused cases. EFR cells: rate [Wilson 95% interval] (errors found / cases tested).</p>"]
    for det in s["detectors"]:
        out.append(f"<h3>{html.escape(det['detector'])} <small>{html.escape(det['version'])}, threshold "
                   f"{det['threshold']}</small></h3>")
        if det["text_only"]:
            out.append("<p class=note>Text-only detector: it saw only the caption of cases with media (what a "
                       "text-only moderation stack sees), so its EFR is the text-only baseline.</p>")
        out.append(_table(["content type", "seed sentences", "scored", "toxic (kept as seeds)", "share toxic"],
                          [[r["content_type"], r["seeds"], r["scored"], r["toxic"], r["share"]] for r in det["oracle"]]))
        cell = {(r["content_type"], r["fusion"]): r for r in det["efr"]}
        out.append("<h4>Error finding rate (fusion × content type)</h4>")
        out.append(_table(["fusion", *types], [[fu, *[efr(cell.get((ct, fu))) for ct in types]] for fu in rows_order
                                               if any((ct, fu) in cell for ct in types)]))
        out.append("<h4>Baseline: share flagged toxic, over every case</h4>")
        out.append(_table(["content type", "fusion", "cases", "seed", "part A alone", "part B alone", "fused case",
                           "seed toxic", "not scored locally", "failed", "media ignored"],
                          [[b["content_type"], b["fusion"], b["cases"], *[flagged(b["parts"][p]) for p in
                                                                          ("seed", "part_a", "part_b", "case")],
                            cell[(b["content_type"], b["fusion"])]["seed_toxic"],
                            cell[(b["content_type"], b["fusion"])]["not_scored_locally"],
                            cell[(b["content_type"], b["fusion"])]["failed"],
                            cell[(b["content_type"], b["fusion"])]["media_ignored"]] for b in det["baseline"]]))
    unread = s["not_scored_locally"]
    if unread["total"]:
        out.append(f"<h3>Not scored locally ({unread['total']} parts; first {len(unread['listed'])} listed)</h3>"
                   "<p class=note>No local detector reads these media: export them for an external API.</p>")
        out.append(_table(["case", "content type", "fusion", "part", "detector", "reason"],
                          [[e["case_id"], e["content_type"], e["fusion"], e["part"], e["detector"], e["reason"]]
                           for e in unread["listed"]]))
    return "".join(out)


RENDER = {"human": _html_human, "overlap": _html_overlap, "people": _html_people, "robustness": _html_robustness,
          "normalization": _html_normalization, "attacks": _html_attacks, "sass": _html_sass,
          "labelled": _html_labelled, "hatecheck": _html_hatecheck, "fusion": _html_fusion}

CSS = """body{font:14px/1.45 system-ui,sans-serif;max-width:1100px;margin:2em auto;padding:0 1em;color:#222}
h1{font-size:1.6em}h2{border-bottom:2px solid #1f4e79;padding-bottom:.2em;margin-top:2em}
table{border-collapse:collapse;margin:.6em 0;font-size:12px}td,th{border:1px solid #ccc;padding:3px 7px;text-align:right}
td:first-child,th:first-child{text-align:left}th{background:#eef3f9}.methods{background:#f7f7f2;border-left:4px solid #b5a642;
padding:.4em .8em;font-size:12.5px}small{color:#666;font-weight:normal}img{max-width:100%}.note{font-size:12px;color:#555}"""


def _html_label_sets(sets: list[dict[str, Any]]) -> str:
    how = {"newest": "the newest of its sets", "asked": "chosen with --label-set"}
    rows = [[s["source"], s["label_set_id"], s["definition"], s["n"], s["positives"], how.get(s["chosen"], s["chosen"]),
             "; ".join(f"{o['label_set_id']}: {o['definition']} ({o['n']})" for o in s["others"]) or "–"] for s in sets]
    return ("<h2>Gold labels</h2><p class=note>Each source's gold `toxic` labels come from one label set (its "
            "definition below); <code>modlens report --label-set ID</code> chooses another.</p>"
            + _table(["source", "label set", "definition", "labels", "positive", "used", "other sets (labels)"], rows))


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
    if report.get("label_sets"):
        parts.append(_html_label_sets(report["label_sets"]))
    if not report["sections"]:
        parts.append("<p>The log has no data any section can use yet.</p>")
    for key, section in report["sections"].items():
        parts.append(f"<h2>{TITLES[key]}</h2><p class=methods><b>Method.</b> {html.escape(METHODS[key])}</p>")
        parts.append(RENDER[key](section))
    if report.get("skipped"):
        parts.append("<h2>Not in this report</h2><ul class=note>" + "".join(
            f"<li><b>{html.escape(TITLES[key].split(' ', 1)[1])}</b>: {html.escape(reason)}</li>"
            for key, reason in report["skipped"].items()) + "</ul>")
    parts.append("</body></html>")
    return "\n".join(parts)
