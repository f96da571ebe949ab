"""Section 1: human ratings (`analysis/human.py`)."""
from __future__ import annotations

import html
from typing import Any

from modlens.analysis import human
from modlens.analysis.data import StudyData
from modlens.analysis.references import cite
from modlens.analysis.sections.base import Section
from modlens.analysis.sections.html import WARN_STYLE, counts, fewer, plt, png, table
from modlens.analysis.skip import Skip

METHOD = (f"Ratings with an inconsistent anchor pair (Muralikumar, Yang and McDonald 2023, Table 1), ratings of "
          "gold and anchor comments (the study's calibration), of attack texts under review (the attacks section) and ratings in rater tasks (15 "
          "ratings) that Table 11's rubric does not use are excluded. Krippendorff's alpha is ordinal, computed from the coincidence matrix "
          f"({cite('krippendorff')}), with a percentile bootstrap interval ({cite('efron')}). The "
          "majority is the mode; two-way ties follow Tables 13 and 15, other ties are dropped. One vote per "
          "rater and comment (their latest usable rating). Alpha uses only comments with two or more raters; a "
          "comment with one rater keeps that rating as its majority ('single rater').")


NO_RATINGS = ("no ratings in the log: participants rate comments in the browser extension (modlens serve), "
              "or merge their bundles (modlens merge)")


def no_ratings(data: StudyData) -> Skip:
    """Why a section that reads ratings has none: the log holds none, or only those of raters who
    withdrew consent (`data.load` leaves them out), which is not the same news."""
    n, m = data.withdrawn.get("raters", 0), data.withdrawn.get("ratings", 0)
    study = data.study or {}
    others = study.get("other_studies_ratings", 0)
    if not m and others:  # `--study`: the log has ratings, of other studies only
        return Skip(f"study {study['study_id']} has no ratings in the log (its other studies have {others}): "
                    "run the report without --study, or name one of them")
    if not m:
        return Skip(NO_RATINGS)
    # `--study`: that study's ratings are all its raters', not the log's (its other studies have theirs)
    whose = (f"of study {study['study_id']} ({m} rating{'s' * (m != 1)}; its other studies have {others})" if study
             else f"in the log ({m} rating{'s' * (m != 1)})")
    return Skip(f"every rating {whose} is of a rater who withdrew consent to their "
                f"study ({n} rater{'s' * (n != 1)} withdrew): left out, as their data may no longer be used")


def analyze(data: StudyData) -> dict[str, Any] | Skip:
    """The full result, per-comment majorities included (`people` reads them; the JSON drops them)."""
    if not data.ratings:
        return no_ratings(data)
    return human.analyze(data) or Skip("the log has no data for this section")


def alpha_interval(a: dict[str, Any], drawn: int | None) -> str:
    """An attribute's alpha interval, with over how many replicates when fewer than were drawn (a
    replicate with a single level has no alpha)."""
    ci, used = a.get("alpha_ci"), a.get("alpha_ci_replicates")
    if ci is None:
        return "–"
    return f"[{ci[0]:.3f}, {ci[1]:.3f}]" + fewer(used, drawn, "replicates")


def replicates_note(boot: dict[str, Any]) -> str:
    return (f"α interval: {boot['confidence']:.0%} {html.escape(boot['method'])} ({boot['replicates']} replicates "
            f"drawn, seed {boot['seed']}: the same log gives the same interval; over those with a defined α, "
            "'k of n replicates' beside an interval taken over fewer).")


def render(s: dict[str, Any]) -> str:
    pyplot = plt()
    out = [f"<p>{s['n_ratings']} ratings by {s['n_raters']} raters; {s['n_valid']} used, "
           f"by {s.get('n_raters_used', '–')} raters. Excluded: "
           + (counts(s["excluded"]) or "none") + ".</p>"]
    studies = s.get("studies") or {}  # a report's JSON from before the studies were kept has none
    if len(studies) > 1:
        out.append(f"<p class=note>⚠ Ratings of {len(studies)} studies, pooled in every figure of this section, "
                   "of the rating overlap, detectors-vs-people and item-set sections and of the attacks' human check: "
                   + html.escape(", ".join(f"{k} ({v} ratings)" for k, v in studies.items()))
                   + ". <code>modlens report --study ID</code> gives one study's report.</p>")
    boot = s.get("alpha_ci") or {}
    if boot:
        out.append(f"<p class=note>{replicates_note(boot)} "
                   f"⚠: fewer than {s.get('min_paired_comments')} comments with two or more raters.</p>")
    out += [f'<div class=warn style="{WARN_STYLE}">⚠ <b>{html.escape(a["name"])}</b>: {html.escape(w)}</div>'
            for a in s["attributes"] for w in a.get("warnings", [])]

    def alpha_ci(a: dict[str, Any]) -> str:
        return alpha_interval(a, boot.get("replicates")) + (" ⚠" if a.get("warnings") else "")

    out.append(table(["attribute", "comments", "with ≥ 2 raters (α)", "ratings", "Krippendorff α (ordinal)", "α 95% CI",
                       "agreement", "ties resolved", "ties dropped", "single rater"],
                      [[a["name"], a["n_comments"], a.get("n_comments_paired"), a["n_ratings"], a["alpha"], alpha_ci(a),
                        a["agreement_level"], a["decided_by"].get("tie rule", 0), a["decided_by"].get("tie dropped", 0),
                        a["decided_by"].get("single rater", 0)] for a in s["attributes"]]))
    if s["attributes"]:  # none when every rating was excluded
        fig, axes = pyplot.subplots(1, len(s["attributes"]), figsize=(3.2 * len(s["attributes"]), 2.6))
        axes = axes if len(s["attributes"]) > 1 else [axes]
        for ax, a in zip(axes, s["attributes"]):
            n_r, n_m = max(1, sum(a["distribution"].values())), max(1, sum(a["majority"].values()))
            ax.bar(range(len(a["levels"])), [a["distribution"][lv] / n_r for lv in a["levels"]], color="#7a9cc6", label="share of ratings")
            ax.bar(range(len(a["levels"])), [a["majority"][lv] / n_m for lv in a["levels"]], color="#1f4e79", width=0.4,
                   label="share of majorities")
            ax.set_xticks(range(len(a["levels"])), [lv.replace(" ", "\n") for lv in a["levels"]], fontsize=7)
            ax.set_title(a["name"], fontsize=9)
        axes[0].legend(fontsize=7)
        out.append(png(fig))
    out.append("<h3>Raters (anchor consistency, Table 11 rubric per task of 15)</h3>")
    out.append(table(["rater", "ratings", "anchor consistency", "gold wrong", "gold inconsistent", "tasks not used",
                       "ratings excluded"],
                      [[r["rater_id"], r["n_ratings"], r["anchor_consistency"], r["n_gold_wrong"], r["n_gold_inconsistent"],
                        sum(t != "approve, use" for t in r["tasks"]), r["excluded_rating_ids"]] for r in s["raters"]]))
    return "".join(out)


SECTION = Section(key='human', title='1. Human ratings', method=METHOD, analyze=analyze, render=render, private=("majority",))
