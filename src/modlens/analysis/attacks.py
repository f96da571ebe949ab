"""Attacks and transfer (seed 002). A variant with an `attack` record is an attempted TAE (toxic
seed made to look benign) or BAE (benign seed made to look toxic) against `target_detector`,
as `modlens audit --attack` logs it (docs/PERTURB.md: the `attack` dict).

Attack success rate = false-negative rate of the target on TAEs (false-positive rate on BAEs),
over attempts that were not skipped (a skipped seed was already misjudged, or unscored). It is
computed twice: as the attack recorded it, and verified from the target's logged score of the
variant text (the exact target version when the record names it). Queries per success: mean
recorded target queries of the successful attacks. Transfer: `perturb.transfer.asr_matrix` on
the successful texts and the logged scores of every detector (rows: detector attacked, columns:
detector scoring), counting for a column only the examples whose seed it judged right.
Attempts with different budgets or edit limits are never pooled.
"""
from __future__ import annotations

from collections import defaultdict
from statistics import mean
from typing import Any

from modlens.analysis.data import DetectorRow, StudyData
from modlens.perturb.goals import fooled
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

    def score(self, name: str, text_id: int, version: str | None = None) -> tuple[float | None, float | None]:
        """(toxicity, threshold) of `text_id` by that detector; (None, None) when unscored."""
        for d in self.by_name.get(name, []):
            if version is not None and d.version != version:
                continue
            s = self.data.score(text_id, d.detector_id)
            if s is not None:
                return s, d.threshold
        return None, None


def analyze(data: StudyData) -> dict[str, Any] | None:
    dets = _Detectors(data)
    groups: dict[tuple[str, str, str], list[dict]] = defaultdict(list)  # (target, goal, config) -> attempts
    skipped: dict[tuple[str, str, str], int] = defaultdict(int)
    for v in data.variants:
        a = v.get("attack")
        if not isinstance(a, dict):
            continue
        goal = str(a.get("goal", "TAE")).upper()
        target = v.get("target_detector") or a.get("target")
        if goal not in ("TAE", "BAE") or not target:
            continue
        key = (str(target), goal, _config(v))
        if str(a.get("status", "")).lower() == "skipped":
            skipped[key] += 1
        else:
            groups[key].append(v)
    if not groups:
        return None
    several = {(t, g) for t, g, _ in groups if sum(1 for k in groups if k[:2] == (t, g)) > 1}
    rows, labels, matrix_rows = [], {}, defaultdict(list)
    judged: dict[tuple[str, str], set[str]] = defaultdict(set)  # (goal/config, source) -> judges
    for key in sorted(groups):
        target, goal, config = key
        vs = groups[key]
        a0 = vs[0]["attack"]
        name, version = a0.get("target_name") or target, a0.get("target_version")
        target_det = dets.exact(name, version)
        recorded = [str(v["attack"].get("status", "")).lower() == "success" for v in vs]
        verified = [] if target_det is None else [
            fooled(goal, data.score(v["text_id"], target_det.detector_id), target_det.threshold) for v in vs]
        verified = [x for x in verified if x is not None]
        successes = [v for v, ok in zip(vs, recorded) if ok]
        q_success = [q for q in (v["attack"].get("queries") for v in successes) if isinstance(q, (int, float))]
        q_all = [q for q in (v["attack"].get("queries") for v in vs) if isinstance(q, (int, float))]
        judges = sorted({j for v in vs for j in (v.get("params") or {}).get("judges", [])})
        reasons: dict[str, int] = defaultdict(int)
        for v, ok in zip(vs, recorded):
            if not ok:
                reasons[str(v["attack"].get("reason"))] += 1
        rows.append({"target": target, "target_name": name, "target_version": version, "goal": goal, "config": config,
                     "attempts": len(vs), "successes": len(successes), "failed": len(vs) - len(successes),
                     "skipped": skipped.get(key, 0),
                     "success_recorded": mean(recorded) if recorded else None,
                     "success_verified": mean(verified) if verified else None, "n_verified": len(verified),
                     "queries_per_success": mean(q_success) if q_success else None,
                     "mean_queries": mean(q_all) if q_all else None, "judges": judges,
                     "failure_reasons": dict(sorted(reasons.items())),
                     "strategies": sorted({v["strategy"] for v in vs})})
        group = f"{goal.lower()}|{config}"
        labels[(group, name)] = f"{target} ({goal})" + (f" [{config}]" if (target, goal) in several else "")
        judged[(group, name)].update(judges)
        for v in successes:
            scores, thresholds, seed_scores = {}, {}, {}
            for det_name in dets.names():
                s, t = dets.score(det_name, v["text_id"])
                seed, seed_t = dets.score(det_name, v["source_text_id"])
                scores[det_name], seed_scores[det_name] = s, seed
                if t is not None or seed_t is not None:
                    thresholds[det_name] = t if t is not None else seed_t
            matrix_rows[group].append({"source": name, "goal": goal.lower(), "text": data.texts.get(v["text_id"], ""),
                                       "scores": scores, "thresholds": thresholds, "seed_scores": seed_scores})
    matrices, transfer = [], {}
    for group, mrows in sorted(matrix_rows.items()):
        goal, config = group.split("|", 1)
        m = asr_matrix(mrows, goal=goal)
        for source in m.sources:  # the same cells, keyed as the HTML table reads them
            transfer[labels[(group, source)]] = {t: {"rate": m.rate[source].get(t), "n": m.n[source].get(t, 0)}
                                                 for t in dets.names()}
        for (g, source), judges in sorted(judged.items()):
            if g == group and judges:
                m.notes.append(f"{', '.join(judges)} judged the attacks on {source} (AND ensemble): they still "
                               f"called each success {'toxic' if goal == 'tae' else 'benign'}, so their cells in "
                               f"that row are 0 by construction")
        matrices.append({**m.to_dict(), "config": config})
    return {"rows": rows, "transfer": transfer, "detectors": dets.names(), "matrices": matrices}
