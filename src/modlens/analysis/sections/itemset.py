"""Section 1b: an item-set study (the design of the Perspective study on news sites/YouTube/Twitter: a fixed sample rated by k raters in tasks with
gold, accepted by Table 11): the acceptance of every rater's task, the ratings per item, and
Krippendorff's alpha per attribute on the accepted ratings (its Table 4) with bootstrap intervals.
The ordinal logit curves per platform are section 2's, which uses the same accepted ratings."""
from __future__ import annotations

import html
from collections import Counter, defaultdict
from typing import Any

from modlens.analysis import alpha as alpha_mod
from modlens.analysis import majority as majority_mod
from modlens.analysis.data import StudyData
from modlens.analysis.references import cite
from modlens.analysis.human import (BOOTSTRAP, BOOTSTRAP_SEED, attribute_levels, reported_answers, study_levels,
                                    usable_ratings)
from modlens.analysis.sections.base import Section
from modlens.analysis.sections.html import counts, table
from modlens.analysis.sections.human import alpha_interval, replicates_note
from modlens.analysis.skip import Skip

METHOD = ("Each rater's task (its item-set comments and gold comments, assignment.json) is decided by Muralikumar, Yang and "
          "McDonald 2023, Table 11 from the gold answers and anchor consistency (`modlens rate`): accept, accept but unused, reject. "
          "Only accepted tasks' ratings are used, minus inconsistent anchor pairs (Table 1), one per rater and comment. "
          f"Alpha is ordinal (coincidence matrix; {cite('krippendorff')}), with a 95% percentile bootstrap over comments "
          f"({cite('efron')}); the majority is "
          "the mode with the tie rules of section 1.")


def analyze(data: StudyData) -> dict[str, Any] | Skip:
    if not data.reviews and not data.imports:
        return Skip("no item-set study in the log: `modlens sample`, `modlens study assign`, then `modlens rate` "
                    "(docs/MULTI.md#item-set-studies)")
    levels, asked = attribute_levels(data), study_levels(data)
    usable = usable_ratings(data)
    excluded: Counter[str] = Counter()  # answers given on another study's scale (`human.other_scale`)
    task_comments = {cid for rv in data.reviews for cid in rv["comment_ids"]}
    items = task_comments - usable.left_out                    # the item set's comments, gold left out
    per_item: dict[int, dict[str, list[str]]] = {cid: defaultdict(list) for cid in items}
    raters_of: dict[int, set[str]] = {cid: set() for cid in items}
    # attribute -> the raters who gave it a value (a rating may answer some attributes only)
    answered: dict[str, set[str]] = defaultdict(set)
    for r in usable.valid:
        if r["comment_id"] in per_item:
            raters_of[r["comment_id"]].add(r["rater_id"])
            for attr, value in reported_answers(r, levels, asked, excluded).items():
                per_item[r["comment_id"]][attr].append(value)
                answered[attr].add(r["rater_id"])
    all_ratings = Counter(r["comment_id"] for r in data.ratings if r["comment_id"] in items)
    accepted = {(rv["rater_id"], cid) for rv in data.reviews if rv["decision"] == "accept" for cid in rv["comment_ids"]}
    accepted_raters: dict[int, set[str]] = defaultdict(set)
    for r in data.ratings:
        if (r["rater_id"], r["comment_id"]) in accepted:
            accepted_raters[r["comment_id"]].add(r["rater_id"])
    rows = []
    for cid in sorted(items, key=lambda c: (data.comments[c]["platform"], data.comments[c]["key"])):
        c = data.comments[cid]
        rows.append({"comment_id": cid, "platform": c["platform"], "key": c["key"],
                     "text": data.texts.get(c["text_id"], ""), "ratings": all_ratings[cid],
                     "accepted_raters": len(accepted_raters[cid]), "used_ratings": len(raters_of[cid]),
                     "majority": {a: majority_mod.majority(a, v)[0] for a, v in per_item[cid].items()}})
    attributes = []
    for attr, lv in levels.items():
        ratings = {cid: v[attr] for cid, v in per_item.items() if v.get(attr)}
        if not ratings:
            continue
        a = alpha_mod.alpha_from_ratings(ratings, lv)
        ci = alpha_mod.bootstrap_from_ratings(ratings, lv, BOOTSTRAP, BOOTSTRAP_SEED)
        attributes.append({"name": attr, "n_comments": len(ratings),
                           "n_comments_paired": sum(len(v) >= 2 for v in ratings.values()),  # the comments alpha uses
                           "n_raters": len(answered[attr]),
                           "n_ratings": sum(len(v) for v in ratings.values()), "alpha": a,
                           "alpha_ci": None if ci is None else [ci.low, ci.high],
                           "alpha_ci_replicates": None if ci is None else ci.replicates,
                           "agreement_level": alpha_mod.agreement_label(a)})
    decisions = Counter(rv["decision"] for rv in data.reviews)
    return {
        "n_items": len(items), "n_rater_tasks": len(data.reviews), "decisions": dict(decisions),
        "n_raters": len({rv["rater_id"] for rv in data.reviews}),
        "n_raters_accepted": len({r for who in accepted_raters.values() for r in who}),  # with a rated, accepted task
        "acceptance": [{k: rv[k] for k in ("rater_id", "task", "source", "decision", "reason", "missed",
                                           "inconsistent_gold", "wrong_gold", "inconsistent")} for rv in data.reviews],
        "items": rows, "attributes": attributes, "imports": imports(data.imports), "excluded": dict(excluded),
        "alpha_ci": {"confidence": 0.95, "method": "percentile bootstrap over comments", "replicates": BOOTSTRAP,
                     "seed": BOOTSTRAP_SEED},
    }


def imports(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The log's imports in order, each with `again_of`: the first earlier import of the same study
    with the same bytes (source_sha256), None for a first. The same command run again (after a
    review that failed, say) is such a row, with what that run stored: usually no rating."""
    first: dict[tuple[str, str], int] = {}
    out = []
    for row in rows:
        key = (row["study_id"], row["source_sha256"])
        out.append(imported(row, first.get(key)))
        first.setdefault(key, row["import_id"])
    return out


def imported(row: dict[str, Any], again_of: int | None = None) -> dict[str, Any]:
    """One `modlens rate FILE` import as the log keeps it (`crowd_imports`): its counts and the records
    it skipped as carrying no valid work, by the platform's word."""
    keys = ("import_id", "source", "format", "source_sha256", "imported_at", "records", "workers", "ratings_new",
            "ratings_known", "changed", "on_change", "empty", "incomplete", "repeated", "skipped")
    return {**{k: row[k] for k in keys}, "n_skipped": sum(row["skipped"].values()), "again_of": again_of}


def _export_cell(i: dict[str, Any]) -> str:
    if i["again_of"] is None:
        return str(i["source"])
    stored = "no rating stored" if not i["ratings_new"] else f"{i['ratings_new']} ratings stored"
    return f"{i['source']} — the same export again (import {i['again_of']}): {stored}"


def _changed_cell(i: dict[str, Any]) -> str:
    if not i["changed"]:
        return "none"
    return f"{i['changed']}: " + ("stored answers kept" if i["on_change"] == "keep" else "new answers stored")


def _skipped_cell(i: dict[str, Any]) -> str:
    if not i["n_skipped"]:
        return "none"
    return f"{i['n_skipped']} {i['records']}: " + ", ".join(f"{n} {why}" for why, n in sorted(i["skipped"].items()))


def render(s: dict[str, Any]) -> str:
    # the log holds the items of the tasks raters worked on; the item set (itemset.json) may hold more
    out = [f"<p>{s['n_items']} items in the reviewed rater tasks; {s['n_rater_tasks']} rater tasks reviewed: "
           + ", ".join(f"{html.escape(k)} {v}" for k, v in sorted(s["decisions"].items()))
           + f"; {s['n_raters_accepted']} of {s['n_raters']} raters accepted.</p>"]
    if s.get("excluded"):
        out.append("<p class=note>Answers left out (asked on another scale than the reported one, as in section 1): "
                   + counts(s["excluded"]) + ".</p>")
    out.append(f"<p class=note>{replicates_note(s['alpha_ci'])}</p>")
    out.append(table(["attribute", "comments", "with ≥ 2 raters (α)", "raters", "ratings", "Krippendorff α (ordinal)",
                      "α 95% CI", "agreement"],
                     [[a["name"], a["n_comments"], a.get("n_comments_paired"), a["n_raters"], a["n_ratings"], a["alpha"],
                       alpha_interval(a, s["alpha_ci"]["replicates"]), a["agreement_level"]] for a in s["attributes"]]))
    out.append("<h3>Acceptance (Table 11), per rater and task</h3>")
    out.append(table(["rater", "task", "source", "decision", "reason"],
                     [[a["rater_id"], a["task"], a["source"], a["decision"], a["reason"]] for a in s["acceptance"]]))
    if s["imports"]:
        out.append("<h3>Crowd imports (<code>modlens rate</code>), each as it ran</h3>")
        out.append("<p class=note>Per import: a file imported again is counted again, so the rows are not "
                   "summed. An export with the same bytes as an earlier import (the same command run again, "
                   "after a review that failed, say) is marked so, with what that run stored: its ratings are "
                   "those already in the log, and it added a review at most.</p>")
        out.append(table(["import", "export", "format", "imported at", "workers", "ratings imported",
                          "already in the log", "changed since the last import", "skipped: no valid work",
                          "empty / answered in part / repeated"],
                         [[i["import_id"], _export_cell(i), i["format"], i["imported_at"], i["workers"], i["ratings_new"],
                           i["ratings_known"], _changed_cell(i), _skipped_cell(i),
                           f"{i['empty']} / {i['incomplete']} / {i['repeated']}"]
                          for i in s["imports"]]))
    attrs = [a["name"] for a in s["attributes"]]
    out.append("<h3>Ratings per item</h3>")
    out.append(table(["platform", "comment", "text", "ratings", "raters accepted", "ratings used",
                      *[f"majority {a}" for a in attrs]],
                     [[i["platform"], i["key"], i["text"][:120], i["ratings"], i["accepted_raters"], i["used_ratings"],
                       *[i["majority"].get(a) or "–" for a in attrs]] for i in s["items"]]))
    return "".join(out)


SECTION = Section(key="itemset", title="1b. Item-set study: acceptance, ratings per item, alpha", method=METHOD,
                  analyze=analyze, render=render)
