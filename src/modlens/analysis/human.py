"""Human ratings (the human-centred Perspective study): per attribute the rating distribution, Krippendorff's alpha
(ordinal), the majority rating per comment with the paper's tie rules, the anchor consistency
and Table 11 rubric of each rater, and which ratings were excluded.

Exclusions, in the paper's order: a rating whose anchor pair is inconsistent (Table 1) is
dropped for every attribute (the paper accepts the other attributes only with the toxicity
answer); ratings in a task the rubric does not "use" are dropped; ratings of gold and anchor
comments are attention checks, never data. They are the comments `modlens serve` or `modlens rate`
logged as such (label `role` gold or anchor), and those whose key is a `gold` key of any study
recorded in the log (a study served without its calibration.toml recorded none); their expected
answers come from the study or, failing that, from their `expected.<attribute>` labels. A task the
crowd platform rejected after `modlens rate` imported it (its review's reason says so) is left out
as such, whatever Table 11 gave it.

One vote per rater and comment: a rater who rated a comment twice (a reload, a second session;
a merged log keeps both) keeps only their latest usable rating, so alpha never pairs a rater
with themselves and the majority never counts a rater twice. Alpha uses only comments with at
least two raters (the others have no pairable value); a comment with one rater keeps that
rating as its majority, counted as "single rater" (the overlap section lists such comments).

Alpha comes with a 95% bootstrap interval over comments (`alpha.bootstrap_interval`, BOOTSTRAP
replicates, seed BOOTSTRAP_SEED: the same log gives the same interval), and a warning when fewer
than MIN_PAIRED comments have two or more raters (below that the interval is wide and itself
rough; Krippendorff 2004 ch. 11 sizes reliability samples in the hundreds of pairable values).
"""
from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass
from typing import Any

from modlens.analysis import alpha as alpha_mod
from modlens.analysis import majority as majority_mod
from modlens.analysis import raters as raters_mod
from modlens.analysis.data import StudyData
from modlens.config import DEFAULT_ATTRIBUTES
from modlens.ratings import gold_answer_wrong

MIN_PAIRED = 30        # warn when alpha rests on fewer comments with two or more raters
BOOTSTRAP = 1000       # bootstrap replicates for alpha's interval
BOOTSTRAP_SEED = 0     # fixed: the report is reproducible


def study_levels(data: StudyData) -> dict[str, dict[str, list[str]]]:
    """rated study -> attribute -> its levels, as the study asks them (a study recorded without
    attributes: the paper's four), in the order the log recorded the studies."""
    rated = {r["study_id"] for r in data.ratings}
    return {s["study_id"]: {a["name"]: list(a["levels"]) for a in
                            s["config"].get("attributes") or [a.model_dump() for a in DEFAULT_ATTRIBUTES]}
            for s in data.studies if s["study_id"] in rated}


def attribute_levels(data: StudyData) -> dict[str, list[str]]:
    """attribute -> its levels, as the studies whose ratings the log holds ask them. A log holds the
    study of every command that wrote to it (`modlens audit` registers the default study, `modlens
    serve` the one it serves), so the rated studies decide, never the first one recorded; an
    attribute two of them ask on different scales is reported on the first study's levels, and
    `analyze` leaves the other study's answers to it out, counted in `excluded`."""
    out: dict[str, list[str]] = {}
    for attrs in study_levels(data).values():
        for name, lv in attrs.items():
            out.setdefault(name, lv)
    return out or {a.name: list(a.levels) for a in DEFAULT_ATTRIBUTES}


def other_scale(r: dict[str, Any], attr: str, levels: dict[str, list[str]],
                asked: dict[str, dict[str, list[str]]]) -> str | None:
    """Why rating `r`'s answer to `attr` is left out when its study asks `attr` on another scale than
    the reported one (`levels`: `attribute_levels`; `asked`: `study_levels`): a level of the same name
    need not mean the same. None when it is on the reported scale. Every section that reads answers
    (this one, the item-set section, the attacks' human check) leaves such answers out, counted."""
    own = asked.get(r["study_id"], {}).get(attr)
    if attr in levels and own is not None and own != levels[attr]:
        return f"{attr} answered on study {r['study_id']}'s scale, not the reported one (that answer only)"
    return None


def reported_answers(r: dict[str, Any], levels: dict[str, list[str]], asked: dict[str, dict[str, list[str]]],
                     excluded: Counter[str]) -> dict[str, str]:
    """Rating `r`'s answers that count: those on the reported scale of a reported attribute (`levels`).
    An answer given on another study's scale (`other_scale`) is counted in `excluded`; one to an
    attribute not reported, or of a level not on its scale, is dropped."""
    out: dict[str, str] = {}
    for attr, value in rating_values(r).items():
        if (why := other_scale(r, attr, levels, asked)) is not None:
            excluded[why] += 1
        elif value in levels.get(attr, ()):
            out[attr] = value
    return out


def rating_values(r: dict[str, Any]) -> dict[str, str]:
    """A rating's values, toxicity taken from the anchors when they were used."""
    values = dict(r.get("values") or {})
    if r.get("derived_toxicity"):
        values["toxicity"] = r["derived_toxicity"]
    return values


@dataclass
class UsableRatings:
    valid: list[dict[str, Any]]               # one per (rater, comment): what alpha and majorities use
    excluded: Counter[str]                     # reason -> ratings left out
    summaries: list[raters_mod.RaterSummary]
    left_out: set[int]                         # gold and review comments: not comments of the study's pages


CALIBRATION_ROLES = ("gold", "anchor")   # label `role` of the comments a study checks raters with
EXPECTED = "expected."


def calibration_comments(data: StudyData) -> dict[int, dict[str, str]]:
    """comment id -> expected answers, for every gold and anchor comment in the log."""
    gold = {g["key"]: dict(g.get("expected") or {}) for s in data.studies for g in s["config"].get("gold") or []}
    out = {cid: gold[c["key"]] for cid, c in data.comments.items() if c["key"] in gold}
    for cid, lab in data.labels.items():
        if lab.get("role") in CALIBRATION_ROLES and cid in data.comments:
            out[cid] = out.get(cid) or {k[len(EXPECTED):]: v for k, v in lab.items() if k.startswith(EXPECTED)}
    return out


def usable_ratings(data: StudyData) -> UsableRatings:
    """The ratings the statistics use, after the paper's exclusions, one per rater and comment."""
    gold_comment = calibration_comments(data)
    # attack texts under review (`modlens study add-attacks`): their ratings answer section 5's
    # human check, and would bias the per-platform statistics with machine-made texts
    review = {cid for cid, lab in data.labels.items() if lab.get("role") == "review"}
    # item-set studies: a rater's task was reviewed as a whole (`modlens rate`, rater_reviews), and
    # that decision replaces the rubric over consecutive runs of 15 ratings
    reviewed = {(rv["rater_id"], cid): rv["decision"] for rv in data.reviews for cid in rv["comment_ids"]}
    reviewed_tasks: dict[str, list[str]] = defaultdict(list)
    for rv in data.reviews:
        reviewed_tasks[rv["rater_id"]].append(rv["decision"])
    # tasks the crowd platform rejected after their import: not data, and not for Table 11's reasons
    platform_out = {(rv["rater_id"], cid) for rv in data.reviews if rv["platform_status"] is not None
                    for cid in rv["comment_ids"]}
    # each study's extreme anchor: a gold answer given by anchors is judged on its Table 1 candidates
    extreme = {s["study_id"]: next((a.get("rating") for a in s["config"].get("anchors") or []
                                    if a.get("role") == "extreme"), None) for s in data.studies}
    records = []
    for r in data.ratings:
        expected = gold_comment.get(r["comment_id"])
        values = rating_values(r)
        wrong = expected is not None and gold_answer_wrong(values, r.get("anchors"), expected,
                                                           extreme.get(r["study_id"]))
        records.append(raters_mod.RatingRecord(r["rating_id"], r["rater_id"], r["created_at"], bool(r["inconsistent"]),
                                               expected is not None, wrong, reviewed.get((r["rater_id"], r["comment_id"]))))
    summaries = raters_mod.summarize(records, reviewed_tasks)
    rubric_out = {rid for s in summaries for rid in s.excluded_rating_ids}
    excluded: Counter[str] = Counter()
    valid: list[dict[str, Any]] = []
    for r in data.ratings:
        if r["comment_id"] in gold_comment:
            excluded["gold comment (attention check)"] += 1
        elif r["comment_id"] in review:
            excluded["attack text under review (reported with the attacks)"] += 1
        elif (r["rater_id"], r["comment_id"]) in platform_out:
            excluded["submission rejected on the crowd platform"] += 1
        elif r["inconsistent"]:
            excluded["inconsistent anchor answers (Table 1)"] += 1
        elif r["rating_id"] in rubric_out:
            excluded["rater task not used (Table 11)"] += 1
        else:
            valid.append(r)
    return UsableRatings(latest_votes(valid, excluded), excluded, summaries, set(gold_comment) | review)


def latest_votes(ratings: list[dict[str, Any]], excluded: Counter[str]) -> list[dict[str, Any]]:
    """One vote per rater and comment: their latest rating (by time, then rating id), in rating id
    order; each earlier one counted in `excluded`. The human section and the attacks' human check."""
    latest: dict[tuple[str, int], dict[str, Any]] = {}
    for r in sorted(ratings, key=lambda r: (r["created_at"], r["rating_id"])):
        if (r["rater_id"], r["comment_id"]) in latest:
            excluded["earlier rating of the same comment by the same rater"] += 1
        latest[r["rater_id"], r["comment_id"]] = r
    return sorted(latest.values(), key=lambda r: r["rating_id"])


def analyze(data: StudyData) -> dict[str, Any] | None:
    if not data.ratings:
        return None
    levels = attribute_levels(data)
    asked = study_levels(data)
    usable = usable_ratings(data)
    valid, excluded, summaries = usable.valid, usable.excluded, usable.summaries
    by_comment: dict[int, dict[str, list[str]]] = defaultdict(lambda: defaultdict(list))
    for r in valid:
        for attr, value in reported_answers(r, levels, asked, excluded).items():
            by_comment[r["comment_id"]][attr].append(value)
    attributes: list[dict[str, Any]] = []
    majority: dict[int, dict[str, str]] = defaultdict(dict)
    for attr, lv in levels.items():
        ratings = {cid: vals[attr] for cid, vals in by_comment.items() if vals.get(attr)}
        if not ratings:
            continue
        dist = Counter(v for vals in ratings.values() for v in vals)
        how: Counter[str] = Counter()
        for cid, vals in ratings.items():
            level, decided = majority_mod.majority(attr, vals)
            if len(vals) == 1:
                decided = "single rater"
            how[decided] += 1
            if level is not None:
                majority[cid][attr] = level
        a = alpha_mod.alpha_from_ratings(ratings, lv)
        ci = alpha_mod.bootstrap_from_ratings(ratings, lv, BOOTSTRAP, BOOTSTRAP_SEED)
        n_paired = sum(len(v) >= 2 for v in ratings.values())
        warnings = []
        if n_paired < MIN_PAIRED:
            warnings.append(f"alpha rests on {n_paired} comments with two or more raters (fewer than {MIN_PAIRED}): "
                            "its interval is wide and itself rough")
        if a is None:
            warnings.append("alpha undefined: no pairable values, or every rating at one level")
        # every comment here has ratings, so each has an agreement share
        agreement = Counter(round(share, 2) for v in ratings.values()
                            if (share := majority_mod.agreement(v)) is not None)
        attributes.append({
            "name": attr, "levels": lv, "distribution": {level: dist.get(level, 0) for level in lv},
            "alpha": a, "agreement_level": alpha_mod.agreement_label(a), "n_comments": len(ratings),
            "alpha_ci": None if ci is None else [ci.low, ci.high],
            "alpha_ci_replicates": None if ci is None else ci.replicates, "warnings": warnings,
            "n_comments_paired": n_paired,  # the comments alpha uses
            "n_ratings": sum(len(v) for v in ratings.values()),
            "majority": {level: sum(1 for m in majority.values() if m.get(attr) == level) for level in lv},
            "decided_by": dict(how), "agreement_shares": {str(k): v for k, v in sorted(agreement.items(), reverse=True)},
        })
    return {
        "n_ratings": len(data.ratings), "n_valid": len(valid), "excluded": dict(excluded),
        # study -> its ratings: a log may hold several (a pilot and the main study served into one
        # log), and every figure here pools them, which the page then says
        "studies": dict(sorted(Counter(str(r["study_id"]) for r in data.ratings).items())),
        # every rater who rated, reviewed by `modlens rate` or not; and those whose ratings are used
        "n_raters": len(summaries), "n_raters_used": len({r["rater_id"] for r in valid}), "attributes": attributes,
        "alpha_ci": {"confidence": 0.95, "method": "percentile bootstrap over comments", "replicates": BOOTSTRAP,
                     "seed": BOOTSTRAP_SEED},
        "min_paired_comments": MIN_PAIRED,
        "raters": [s.__dict__ | {"excluded_rating_ids": len(s.excluded_rating_ids)} for s in summaries],
        "majority": {int(k): v for k, v in majority.items()},
    }
