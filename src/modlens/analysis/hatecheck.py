"""HateCheck by functionality (Röttger et al., 2021): accuracy of each detector on each of the
suite's 29 functional tests, in the paper's layout — one row per functionality with its gold
label (hateful / non-hateful) and number of cases, detectors as columns — then the same per
target identity, and totals over hateful, non-hateful and all cases.

A case is a comment whose labels carry `functionality` and `label_gold` (what
`datasets/hatecheck.py` stores); a detector is right when its decision (score ≥ its threshold)
matches the gold label. Intervals: Wilson 95% (`metrics.wilson_interval`). The `spell_*` rows
are cases like any other here; the robustness section pairs them with their clean originals.

Per source, never pooled (a source is the comment's platform, its data set): only `dataset:hatecheck`
(the catalog names a file `hatecheck` only with the suite's own bytes) is HateCheck. A file in
HateCheck's layout with other bytes (an edited suite, a translation, another study's functional
tests: `dataset:file-DIGEST`) gets the same tables in a block of its own (`release` false, with a
`note`), never its cases counted in HateCheck's rows: a researcher who wrote tests in this layout
wants their per-functionality accuracy, and a reader of the HateCheck rows wants the suite's cases
alone. The suite comes first.
"""
from __future__ import annotations

from collections import defaultdict
from typing import Any

from modlens.analysis import metrics, per_source
from modlens.analysis.data import StudyData
from modlens.analysis.skip import Skip
from modlens.metrics import GroupScore, by_group

# The paper's functionalities in its order (F1-F29), with its short descriptions.
FUNCTIONALITIES = {
    "derog_neg_emote_h": "Expression of strong negative emotions (explicit)",
    "derog_neg_attrib_h": "Description using very negative attributes (explicit)",
    "derog_dehum_h": "Dehumanisation (explicit)",
    "derog_impl_h": "Implicit derogation",
    "threat_dir_h": "Direct threat",
    "threat_norm_h": "Threat as normative statement",
    "slur_h": "Hate expressed using slur",
    "slur_homonym_nh": "Non-hateful homonyms of slurs",
    "slur_reclaimed_nh": "Reclaimed slurs",
    "profanity_h": "Hate expressed using profanity",
    "profanity_nh": "Non-hateful use of profanity",
    "ref_subs_clause_h": "Hate expressed through reference in subsequent clauses",
    "ref_subs_sent_h": "Hate expressed through reference in subsequent sentences",
    "negate_pos_h": "Hate expressed using negated positive statement",
    "negate_neg_nh": "Non-hate expressed using negated hateful statement",
    "phrase_question_h": "Hate phrased as a question",
    "phrase_opinion_h": "Hate phrased as an opinion",
    "ident_neutral_nh": "Neutral statements using protected group identifiers",
    "ident_pos_nh": "Positive statements using protected group identifiers",
    "counter_quote_nh": "Denouncements of hate that quote it",
    "counter_ref_nh": "Denouncements of hate that make direct reference to it",
    "target_obj_nh": "Abuse targeted at objects",
    "target_indiv_nh": "Abuse targeted at individuals (not as member of a protected group)",
    "target_group_nh": "Abuse targeted at non-protected groups (e.g. professions)",
    "spell_char_swap_h": "Swaps of adjacent characters",
    "spell_char_del_h": "Missing characters",
    "spell_space_del_h": "Missing word boundaries",
    "spell_space_add_h": "Added spaces between characters",
    "spell_leet_h": "Leet speak spellings",
}
HATEFUL = "hateful"
NO_CASES = "no HateCheck cases (labels functionality + label_gold): run modlens audit hatecheck"
PLATFORM = "dataset:hatecheck"
NOT_RELEASE = ("{n} comments from {source} have HateCheck-style labels but are not the HateCheck suite (the catalog's "
               "bytes): their own tables, not counted as HateCheck's")


def _order(functionality: str) -> tuple[int, str]:
    keys = list(FUNCTIONALITIES)
    return (keys.index(functionality) if functionality in keys else len(keys), functionality)


def _rows(labels: dict[str, str]) -> list[tuple[str, str]]:
    """The (table, row) cells a case counts in: its functionality, its gold label and all cases, its target."""
    rows = [("functionality", labels["functionality"]), ("total", labels["label_gold"].strip()), ("total", "all")]
    if labels.get("target_ident"):
        rows.append(("target", labels["target_ident"]))
    return rows


def _cell(group: GroupScore | None) -> dict[str, Any]:
    right, n = (0, 0) if group is None else (group.right, group.n)
    return {"accuracy": right / n if n else None, "ci": metrics.wilson_interval(right, n), "n": n}


def analyze(data: StudyData) -> dict[str, Any] | Skip:
    """{"sources": [one block per source, the suite first], "unscored": sources no detector scored}."""
    by_source: dict[str, list[tuple[int, dict[str, str]]]] = defaultdict(list)
    for cid, lab in data.labels.items():
        if lab.get("functionality") and lab.get("label_gold") and cid in data.comments:
            by_source[data.comments[cid]["platform"]].append((cid, lab))  # the comment's data set
    return per_source.section(by_source, PLATFORM, lambda source, rows: _block(data, source, rows),
                              none=NO_CASES, what="HateCheck cases")


def _block(data: StudyData, source: str, cases: list[tuple[int, dict[str, str]]]) -> dict[str, Any] | None:
    """One source's tables (None when no detector scored its cases)."""
    detectors: list[dict[str, Any]] = []
    # (table, row key) -> detector label -> its cases scored (`by_group`); tables: functionality, target, total
    results: dict[tuple[str, str], dict[str, GroupScore]] = defaultdict(dict)
    for det in data.detectors.values():
        scored = [(lab, s) for cid, lab in cases
                  if (s := data.score(data.comments[cid]["text_id"], det.detector_id)) is not None]
        if not scored:
            continue
        members: dict[tuple[str, str], list[int]] = defaultdict(list)
        for i, (lab, _) in enumerate(scored):
            for key in _rows(lab):
                members[key].append(i)
        gold = [int(lab["label_gold"].strip() == HATEFUL) for lab, _ in scored]
        for key, group in by_group(members, [s for _, s in scored], gold, det.threshold, auc=False).items():
            results[key][det.label] = group
        detectors.append({"detector": det.name, "version": det.version, "threshold": det.threshold,
                          "label": det.label, "n_scored": len(scored)})
    if not detectors:
        return None
    gold_of: dict[str, set[str]] = defaultdict(set)
    n_cases: dict[tuple[str, str], int] = defaultdict(int)
    for _, lab in cases:
        gold_of[lab["functionality"]].add(lab["label_gold"].strip())
        for key in _rows(lab):
            n_cases[key] += 1

    def table(kind: str, keys: list[str]) -> list[dict[str, Any]]:
        return [{"key": k, "n": n_cases[(kind, k)],
                 "detectors": {d["label"]: _cell(results[(kind, k)].get(d["label"])) for d in detectors}}
                for k in keys]

    functionalities = table("functionality", sorted({lab["functionality"] for _, lab in cases}, key=_order))
    for row in functionalities:
        row["description"] = FUNCTIONALITIES.get(row["key"], "")
        row["gold"] = " / ".join(sorted(gold_of[row["key"]]))
    totals = table("total", [k for k in (HATEFUL, "non-hateful", "all") if n_cases[("total", k)]])
    targets = table("target", sorted({lab["target_ident"] for _, lab in cases if lab.get("target_ident")}))
    out = {"source": source, "release": source == PLATFORM, "n_cases": len(cases), "detectors": detectors,
           "functionalities": functionalities, "targets": targets, "totals": totals}
    if not out["release"]:
        out["note"] = NOT_RELEASE.format(n=len(cases), source=source)
    return out
