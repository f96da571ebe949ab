"""Section 1.1: how many raters each comment has (`analysis/overlap.py`)."""
from __future__ import annotations

import html
from typing import Any

from modlens.analysis import overlap
from modlens.analysis.sections.human import no_ratings
from modlens.analysis.data import StudyData
from modlens.analysis.sections.base import Section
from modlens.analysis.sections.html import table
from modlens.analysis.skip import Skip

METHOD = ("Distinct raters per comment, over the ratings section 1 uses (after its exclusions, one per rater "
          "and comment) and over every rating; gold comments and attack texts under review left out. Minimums: "
          "2 raters for alpha (a pairable value), 3 for a majority that is neither one person's answer nor a "
          "two-way tie settled by a rule. Rater pairs: pairs of raters who rated at least k of the same "
          "comments.")


def analyze(data: StudyData) -> dict[str, Any] | Skip:
    if not data.ratings:
        return no_ratings(data)
    return overlap.analyze(data) or Skip("every rating is of a gold comment (attention checks are not data)")


def render(s: dict[str, Any]) -> str:
    pairs = s["rater_pairs"]
    out = [f"<p>{s['n_comments']} rated comments (gold left out), {s['n_raters']} raters with usable ratings "
           f"({s['n_raters_all_ratings']} with any); {s['n_comments_every_rating_excluded']} comments lost every rating "
           "to the exclusions.</p>"]
    for title, key in (("Comments by number of raters (ratings used)", "comments_by_raters"),
                       ("Comments by number of raters (every rating)", "comments_by_raters_all_ratings")):
        out.append(f"<h3>{title}</h3>")
        out.append(table(["platform", *(f"{b} rater{'s' * (b != '1')}" for b in overlap.BUCKETS)],
                          [[p, *row.values()] for p, row in s[key].items()]))
    out.append(f"<p>Rater pairs: {pairs['n_pairs']}; sharing at least "
               + ", ".join(f"{k} comment{'s' * (k != '1')}: {n}" for k, n in pairs["sharing_at_least"].items())
               + (f". Raters sharing no comment: {html.escape(', '.join(pairs['raters_sharing_nothing']))}."
                  if pairs["raters_sharing_nothing"] else ".") + "</p>")
    mins = s["min_raters"]
    out.append(f"<h3>Comments below the minimum (alpha: {mins['alpha']} raters, majority: {mins['majority']})</h3>"
               f"<p>{s['below_minimum']['alpha']} below alpha's, {s['below_minimum']['majority']} below the majority's; "
               f"listed: {len(s['comments_below_minimum'])} of {s['comments_below_minimum_total']}.</p>")
    out.append(table(["comment id", "platform", "key", "raters (used)", "raters (any rating)", "lacks"],
                      [[e["comment_id"], e["platform"], e["key"], e["n_raters"], e["n_raters_all_ratings"],
                        ", ".join(e["lacks"])] for e in s["comments_below_minimum"]]))
    return "".join(out)


SECTION = Section(key='overlap', title='1.1 Rating overlap', method=METHOD, analyze=analyze, render=render)
