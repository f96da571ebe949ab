"""Attacks and transfer (TaeBench). A variant with an `attack` record is an attempted TAE (toxic
seed made to look benign) or BAE (benign seed made to look toxic) against `target_detector`,
as `modlens audit --attack` logs it (docs/PERTURB.md: the `attack` dict).

Attack success rate = false-negative rate of the target on TAEs (false-positive rate on BAEs),
over attempts that were not skipped (a skipped seed was already misjudged, or unscored). It is
computed twice: as the attack recorded it, and verified from the target's logged score of the
variant text (the exact target version when the record names it; for a multi-label goal,
`goal_labels`, the logged probabilities of those labels at the goal's thresholds). Queries per success: mean
recorded target queries of the successful attacks. Transfer: `perturb.transfer.asr_matrix` on
the successful texts and the logged scores of every detector (rows: detector attacked, columns:
detector scoring), counting for a column only the examples whose seed it judged right. A column
is a detector name: each example's text and seed are judged by one version of it (the latest that
scored the text; in the attacked target's own column, the version attacked), and a column whose
examples were judged by several versions says which.
Attempts with different budgets, edit limits or target versions are never pooled, nor are recipes (rows are
recipe x target; `params.recipe` / strategy `recipe:NAME`, else `attack-tae|bae`).

Quality (TaeBench section 3, `perturb/quality.py`): each success is filtered (dedup, AND
ensemble label check from the recorded verdicts or the other detectors' logged scores, MiniLM
meaning similarity, normalizer-edit fluency); "success after filters" counts only successes
every filter checked and passed (`every_filter_passed`); those that failed none but were not
checked by one (`kept_not_checked`: meaning or fluency never measured, no judge for the label
check) are counted apart. Normalization recovery: the target's logged score of each success's
normalized form (the `normalizations` row of the adversarial text); the share no longer fooled
is what normalization undoes. This module only reads the log: the similarities, normalizer edits
and normalized forms are computed and stored by `audit --attack` and `modlens rescore`
(`audit/attack_checks.py`), and a success without them is counted as not measured.
Human check: ratings of reviewed attacks (study comments with label
role = review, `modlens study add-attacks`), per recipe: the share rated toxic.
"""
from __future__ import annotations

from collections import Counter, defaultdict
from statistics import mean
from typing import Any

from modlens.analysis.data import DetectorRow, StudyData
from modlens.perturb.goals import fooled, fooled_on_labels
from modlens.analysis.attack_examples import examples_from_study, newest_attacks
from modlens.perturb.quality import QualityFilters, every_filter_passed, recipe_of
from modlens.perturb.transfer import asr_matrix


def _config(v: dict[str, Any]) -> str:
    """The budget and edit limit of an attempt; attempts are grouped by it."""
    p, a = v.get("params") or {}, v["attack"]
    queries = a.get("max_queries", p.get("max_queries"))
    ratio = p.get("max_edit_fraction")
    parts = ([f"queries<={queries}"] if queries is not None else []) + ([f"edit ratio<={ratio}"] if ratio is not None else [])
    return ", ".join(parts)


class _Detectors:
    """Detector rows by name: the exact version an attack record names, else the latest one
    that scored the text in question."""

    def __init__(self, data: StudyData):
        self.data = data
        self.by_name: dict[str, list[DetectorRow]] = defaultdict(list)
        for d in sorted(data.detectors.values(), key=lambda d: -d.detector_id):
            self.by_name[d.name].append(d)

    def names(self) -> list[str]:
        return sorted(self.by_name)

    def exact(self, name: str, version: str | None) -> DetectorRow | None:
        rows = self.by_name.get(name, [])
        return next((d for d in rows if version is None or d.version == version), None)

    def pair(self, name: str, text_id: int, seed_id: int,
             version: str | None = None) -> tuple[float | None, float | None, float | None, str | None]:
        """(text's score, seed's score, threshold, version) by one version of that detector: the
        latest that scored the text (or the `version` given: the attacked target's own), with its
        score of the seed (None when it has none), so a seed judged by one version is never set
        beside a text judged by another; all None when no version scored the text (no cell counts
        the example: `asr_matrix` skips a column without the text's score before it reads the rest)."""
        for d in self.by_name.get(name, []):
            if version is not None and d.version != version:
                continue
            s = self.data.score(text_id, d.detector_id)
            if s is not None:
                return s, self.data.score(seed_id, d.detector_id), d.threshold, d.version
        return None, None, None, None


def analyze(data: StudyData, quality: QualityFilters | None = None) -> dict[str, Any] | None:
    """`quality`: the filters to apply (default: default settings, the stored meaning and fluency
    verdicts; no model is loaded)."""
    dets = _Detectors(data)
    groups: dict[tuple[str, str, str, str], list[dict[str, Any]]] = defaultdict(list)  # (target, goal, recipe, config) -> attempts
    skipped: dict[tuple[str, str, str, str], int] = defaultdict(int)
    attacks, replaced = newest_attacks(data)  # one row per attack: a rerun's older rows set aside
    set_aside: dict[tuple[str, str, str, str], int] = defaultdict(int)
    keyed = []
    for v in attacks:
        a = v["attack"]
        goal = str(a.get("goal", "TAE")).upper()
        target = v.get("target_detector") or a.get("target")
        if goal in ("TAE", "BAE") and target:
            keyed.append(((str(target), goal, recipe_of(v.get("strategy"), v.get("params"), a), _config(v)), v))
    # attacks on two versions of a target (a rerun after a model update) are two rows, never pooled
    target_versions: dict[tuple[str, str, str, str], set[str]] = defaultdict(set)
    for key, v in keyed:
        target_versions[key].add(str(v["attack"].get("target_version")))
    for key, v in keyed:
        if len(target_versions[key]) > 1:
            version = f"version {v['attack'].get('target_version')}"
            key = (*key[:3], f"{key[3]}, {version}" if key[3] else version)
        set_aside[key] += replaced.get(v["variant_id"], 0)
        if str(v["attack"].get("status", "")).lower() == "skipped":
            skipped[key] += 1
        else:
            groups[key].append(v)
    if not groups:  # a rating study's log: only the human check of attack texts, if any
        reviews = human_reviews(data)
        return None if reviews is None else {"rows": [], "transfer": {}, "detectors": dets.names(), "matrices": [],
                                             "quality": None, "recovery_notes": [], "human": reviews}
    verdicts = _quality(data, quality or QualityFilters(stored_only=True), attacks)
    recovery = _Recovery(data, dets)
    several = {(t, g) for t, g, _, _ in groups if sum(1 for k in groups if k[:2] == (t, g)) > 1}
    recipes = {k[2] for k in groups}
    rows, labels, matrix_rows = [], {}, defaultdict(list)
    judged: dict[tuple[str, str], set[str]] = defaultdict(set)  # (goal/recipe/config, source) -> judges
    multi_label: dict[str, list[str]] = defaultdict(list)  # goal/recipe/config -> notes on multi-label goals
    # (goal/recipe/config, detector name) -> the versions whose scores its transfer cells are from
    versions: dict[tuple[str, str], Counter[str]] = defaultdict(Counter)
    for key in sorted(groups):
        target, goal, recipe, config = key
        vs = groups[key]
        a0 = vs[0]["attack"]
        name, version = a0.get("target_name") or target, a0.get("target_version")
        target_det = dets.exact(name, version)
        recorded = [str(v["attack"].get("status", "")).lower() == "success" for v in vs]
        verdicts_on_target = [] if target_det is None else [_verify(data, goal, v, target_det) for v in vs]
        verified = [x for x in verdicts_on_target if x is not None]
        successes = [v for v, ok in zip(vs, recorded) if ok]
        q_success = [q for q in (v["attack"].get("queries") for v in successes) if isinstance(q, (int, float))]
        q_all = [q for q in (v["attack"].get("queries") for v in vs) if isinstance(q, (int, float))]
        judges = sorted({j for v in vs for j in (v.get("params") or {}).get("judges", [])})
        reasons: dict[str, int] = defaultdict(int)
        for v, ok in zip(vs, recorded):
            if not ok:
                reasons[str(v["attack"].get("reason"))] += 1
        judge_counts = _judge_failures([v["attack"] for v, ok in zip(vs, recorded) if not ok])
        checked = [verdicts["by_id"].get(v["variant_id"]) for v in successes]
        # after filters: only successes every filter checked and passed; one that failed none but
        # was not checked by one (meaning or fluency never measured) is counted apart, never as passed
        passed_all = [None if c is None else every_filter_passed(c["filters"]) for c in checked]
        kept = [v for v, ok in zip(successes, passed_all) if ok is True]
        failed_by: dict[str, int] = defaultdict(int)
        unchecked: dict[str, int] = defaultdict(int)
        for c in checked:
            for f, verdict in (c or {}).get("filters", {}).items():
                if verdict["ok"] is False:
                    failed_by[f] += 1
                elif verdict["ok"] is None:
                    unchecked[f] += 1
        shares = [x for x in (_changed_share(v["attack"]) for v in successes) if x is not None]
        rec = recovery.measure(name, version, goal, successes)
        rows.append({"target": target, "target_name": name, "target_version": version, "goal": goal, "recipe": recipe,
                     "config": config,
                     "success_after_filters": len(kept) / len(vs) if vs else None, "kept": len(kept),
                     "kept_not_checked": sum(ok is None for ok in passed_all),
                     "filtered_out": dict(sorted(failed_by.items())), "not_checked": dict(sorted(unchecked.items())),
                     "words_changed_share": mean(shares) if shares else None, "recovery": rec,
                     "attempts": len(vs), "successes": len(successes), "failed": len(vs) - len(successes),
                     "skipped": skipped.get(key, 0), "set_aside": set_aside.get(key, 0),
                     "success_recorded": mean(recorded) if recorded else None,
                     "success_verified": mean(verified) if verified else None, "n_verified": len(verified),
                     "queries_per_success": mean(q_success) if q_success else None,
                     "mean_queries": mean(q_all) if q_all else None, "judges": judges,
                     "failure_reasons": dict(sorted(reasons.items())), **judge_counts,
                     "strategies": sorted({v["strategy"] for v in vs})})
        group = f"{goal.lower()}|{recipe}|{config}"
        labels[(group, name)] = (f"{target} ({goal}" + (f", {recipe})" if len(recipes) > 1 else ")")
                                 + (f" [{config}]" if (target, goal) in several and len(recipes) == 1 else ""))
        judged[(group, name)].update(judges)
        goal_labels = sorted({", ".join(v["attack"]["goal_labels"]) for v in vs if v["attack"].get("goal_labels")})
        if goal_labels:  # verified on its labels; transfer and recovery read one toxicity score per detector
            multi_label[group].append(f"the attacks on {name} had a multi-label goal ({'; '.join(goal_labels)}): the "
                                      "transfer cells judge each detector's toxicity score at its threshold, not "
                                      "those labels")
            recovery.notes.append(f"normalization recovery for {name}: judged on its toxicity score, not the attacks' "
                                  f"multi-label goal ({'; '.join(goal_labels)})")
        for v in successes:
            scores, thresholds, seed_scores = {}, {}, {}
            for det_name in dets.names():
                # the attacked target's own column: the version attacked, never a later one
                s, seed, t, used = dets.pair(det_name, v["text_id"], v["source_text_id"],
                                             version if det_name == name else None)
                scores[det_name], seed_scores[det_name] = s, seed
                if t is not None:
                    thresholds[det_name] = t
                if used is not None:
                    versions[(group, det_name)][used] += 1
            matrix_rows[group].append({"source": name, "goal": goal.lower(), "text": data.texts.get(v["text_id"], ""),
                                       "scores": scores, "thresholds": thresholds, "seed_scores": seed_scores})
    matrices, transfer = [], {}
    for group, mrows in sorted(matrix_rows.items()):
        goal, recipe, config = group.split("|", 2)
        m = asr_matrix(mrows, goal=goal)
        for source in m.sources:  # the same cells, keyed as the HTML table reads them
            transfer[labels[(group, source)]] = {t: {"rate": m.rate[source].get(t), "n": m.n[source].get(t, 0)}
                                                 for t in dets.names()}
        m.notes.extend(multi_label.get(group, []))
        for (g, source), judge_names in sorted(judged.items()):
            if g == group and judge_names:
                m.notes.append(f"{', '.join(judge_names)} judged the attacks on {source} (AND ensemble): they still "
                               f"called each success {'toxic' if goal == 'tae' else 'benign'}, so their cells in "
                               f"that row are 0 by construction")
        # a column whose examples were judged by several versions of its detector: version -> examples
        pooled = {det_name: dict(sorted(used.items())) for (g, det_name), used in sorted(versions.items())
                  if g == group and len(used) > 1}
        matrices.append({**m.to_dict(), "config": config, "recipe": recipe, "pooled_versions": pooled})
    return {"rows": rows, "transfer": transfer, "detectors": dets.names(), "matrices": matrices,
            "quality": verdicts["config"], "recovery_notes": sorted(set(recovery.notes)),
            "human": human_reviews(data)}


def _judge_failures(failed: list[dict[str, Any]]) -> dict[str, int]:
    """Failed attempts by what the judges did with their flips: `judge_rejected` a judge said no to
    one, `judge_no_score` a judge had no score for one (not a "no"; both when both happened);
    `judge_not_told_apart` records from before the attack counted missing scores apart
    (`unscored_by_ensemble`), whose rejections may be missing scores."""
    counts = {"judge_rejected": 0, "judge_no_score": 0, "judge_not_told_apart": 0}
    for a in failed:
        if "unscored_by_ensemble" not in a:
            counts["judge_not_told_apart"] += bool(a.get("rejected_by_ensemble"))
            continue
        counts["judge_rejected"] += bool(a.get("rejected_by_ensemble"))
        counts["judge_no_score"] += bool(a.get("unscored_by_ensemble"))
    return counts


def _verify(data: StudyData, goal: str, v: dict[str, Any], target: DetectorRow) -> bool | None:
    """Was the target (the version attacked) fooled by the attempt's text, by its logged score? By the
    goal the attack recorded: a multi-label goal (`goal_labels`) on those labels' probabilities at
    the goal's thresholds, else the toxicity score at the target's threshold."""
    a = v["attack"]
    labels = a.get("goal_labels")
    if not labels:
        return fooled(goal, data.score(v["text_id"], target.detector_id), target.threshold)
    recorded = (v.get("params") or {}).get("thresholds") or {}
    thresholds = {lb: float(recorded.get(lb, a.get("threshold", target.threshold))) for lb in labels}
    return fooled_on_labels(goal, data.label_probabilities.get((v["text_id"], target.detector_id)), thresholds)


def _changed_share(a: dict[str, Any]) -> float | None:
    share = a.get("words_changed_share")
    if isinstance(share, (int, float)):
        return float(share)
    n, k = a.get("n_words"), a.get("words_edited")
    return k / n if isinstance(n, int) and n and isinstance(k, int) else None


def _quality(data: StudyData, quality: QualityFilters, attacks: list[dict[str, Any]]) -> dict[str, Any]:
    examples = examples_from_study(data, attacks)
    result = quality.assess(examples)
    by_id = {e.id: {"filters": v} for e, v in zip(examples, result.verdicts) if v is not None}
    return {"by_id": by_id, "config": {**result.config, "summary": result.summary}}


class _Recovery:
    """Does normalizing a successful adversarial text undo it? Read from the log: the text's
    normalized form (`normalizations`) and the target's score of it."""

    def __init__(self, data: StudyData, dets: _Detectors):
        self.data, self.dets = data, dets
        self.notes: list[str] = []

    def measure(self, name: str, version: str | None, goal: str, successes: list[dict[str, Any]]) -> dict[str, Any]:
        if not successes:
            return {"n": 0, "recovered": 0, "share": None, "unchanged": 0}
        row = self.dets.exact(name, version)
        outcome: list[bool | None] = []
        unchanged = not_normalized = 0
        for v in successes:
            results = [n["result_text_id"] for n in self.data.normalizations.get(v["text_id"], [])]
            if not results:
                not_normalized += 1
                outcome.append(None)
            elif all(r == v["text_id"] for r in results):
                unchanged += 1  # the normalizer saw nothing to undo: the attack stands
                outcome.append(False)
            else:
                scores = [self.data.score(r, row.detector_id) for r in results if r != v["text_id"]] if row else []
                score = next((s for s in scores if s is not None), None)
                outcome.append(None if score is None or row is None else not fooled(goal, score, row.threshold))
        known = [o for o in outcome if o is not None]
        if not_normalized:
            self.notes.append(f"normalization recovery for {name}: {not_normalized} successes have no normalized form "
                              "in the log: modlens rescore LOG --detectors " + name + " adds it")
        if len(outcome) - len(known) > not_normalized:
            self.notes.append(f"normalization recovery for {name}: the target has not scored some normalized texts "
                              "(version " + str(version) + "): modlens rescore LOG --detectors " + name)
        return {"n": len(known), "recovered": sum(known), "share": sum(known) / len(known) if known else None,
                "unchanged": unchanged, "unmeasured": len(outcome) - len(known)}


def human_reviews(data: StudyData) -> dict[str, Any] | None:
    """Ratings of reviewed attack texts (comments labelled role = review), per recipe x target:
    how many raters still call each "successful" attack toxic. As in the human section: one vote per
    rater and text (their latest rating), none from a rating with an inconsistent anchor pair, and a
    toxicity answer given on another study's scale than the reported one left out (`human.other_scale`);
    each counted in `excluded` under the human section's reasons."""
    from modlens.analysis.human import attribute_levels, latest_votes, other_scale, rating_values, study_levels

    items = {cid: lab for cid, lab in data.labels.items() if lab.get("role") == "review"}
    if not items:
        return None
    levels, asked = attribute_levels(data), study_levels(data)
    excluded: Counter[str] = Counter()
    of_items = [r for r in data.ratings if r["comment_id"] in items]
    consistent = [r for r in of_items if not r["inconsistent"]]
    if len(consistent) < len(of_items):
        excluded["inconsistent anchor answers (Table 1)"] = len(of_items) - len(consistent)
    ratings: dict[int, list[str]] = defaultdict(list)
    for r in latest_votes(consistent, excluded):
        tox = rating_values(r).get("toxicity")
        if tox and (why := other_scale(r, "toxicity", levels, asked)) is not None:
            excluded[why] += 1
        elif tox:
            ratings[r["comment_id"]].append(tox)
    groups: dict[tuple[str, str, str], list[int]] = defaultdict(list)
    for cid, lab in items.items():
        groups[(lab.get("attack.recipe", "?"), lab.get("attack.target", "?"), lab.get("attack.goal", "tae"))].append(cid)
    rows = []
    for (recipe, target, goal), cids in sorted(groups.items()):
        votes = [t for c in cids for t in ratings.get(c, [])]
        rated = [c for c in cids if ratings.get(c)]
        toxic_items = [c for c in rated if sum(t == "toxic" for t in ratings[c]) * 2 > len(ratings[c])]
        rows.append({"recipe": recipe, "target": target, "goal": goal.upper(), "items": len(cids), "rated": len(rated),
                     "ratings": len(votes),
                     "share_ratings_toxic": sum(t == "toxic" for t in votes) / len(votes) if votes else None,
                     "share_ratings_hard_to_say": sum(t == "hard to say" for t in votes) / len(votes) if votes else None,
                     "items_majority_toxic": len(toxic_items)})
    return {"rows": rows, "excluded": dict(excluded)}
