"""Semantic fusion (DUO, sections 3.4 and 4.2): the metamorphic relation "a fused case
whose seed sentence is toxic must be toxic", checked per detector.

- Oracle (the paper's Table 3): per content type, the seed sentences and how many the detector
  finds toxic (score ≥ its threshold). Only cases whose seed it finds toxic are tested.
- Error Finding Rate (Table 4 layout): among those cases, the share the detector scores below its
  threshold, per content type × fusion type (and all fusions of a content type), with the counts
  and a Wilson 95% interval.
- Baseline: per content type × fusion, the share of seeds, halves alone (part_a, part_b) and
  fused cases the detector flags, so a reader sees each half alone look benign while the whole
  is missed.

- Recognition (beside each EFR cell): for cases whose words were spoken or written into the media,
  whether the transcript (ASR) and the OCR text the detector logged contain those keywords, and
  how many errors came with a keyword misheard or misread (recognition) against all of them
  recognised (the detector's own miss).
- Skipped seeds: what `modlens fuse` could not fuse, per content type × fusion, with the reasons
  (the latest run's); a seed a later run fused (given the pictures an earlier one lacked) is not one.

A part a detector could not read here (audio, or video without a reader: no labels, with the
reason in its details) is "not scored locally": counted and listed, never an error found. Reads
the log with two queries (cases, scores); `audit/fused.py` writes what this reads.
"""
from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import dataclass
from typing import Any

from modlens.analysis import metrics
from modlens.analysis.data import StudyData
from modlens.analysis.skip import Skip
from modlens.media.answers import unscored_reason
from modlens.fusion.case import CONTENT_TYPES, PARTS
from modlens.studylog.store import StudyLog

NO_CASES = "no fused cases: run `modlens fuse`"
# the paper's Table 4 order after the comment-native fusions; other fusion names follow, sorted
FUSION_ORDER = ("T+E", "T+I", "I+T", "I", "E+T", "I+I", "V+T", "V+A", "A+T", "V+A+T")
ALL = "all"
MAX_LISTED = 50


@dataclass(frozen=True)
class _Outcome:
    toxicity: float | None   # the score when there is one
    failed: str | None       # the detector's error (retried by the next scoring run)
    unread: str | None       # why the detector could not read this part here (not an error)
    media_ignored: bool      # a text-only detector saw only the text of a part with media
    details: dict[str, Any] | None = None  # what it read (transcripts, OCR text), for recognition quality


def _outcome(row: dict[str, Any]) -> _Outcome:
    raw = row["details_json"]
    details = json.loads(raw) if raw and raw != "{}" else {}
    if row["error"] is not None:
        return _Outcome(None, row["error"], None, False)
    unread = unscored_reason(row["toxicity"], details) if details else None
    if unread is not None or row["toxicity"] is None:  # a score that left media unread tests nothing
        return _Outcome(None, None, unread or "no score", False)
    return _Outcome(float(row["toxicity"]), None, None, bool(details.get("ignored_media")),
                    details if row["part"] == "case" else None)


def _order(values: set[str], first: tuple[str, ...]) -> list[str]:
    return [v for v in first if v in values] + sorted(values - set(first))


def _rate(k: int, n: int) -> dict[str, Any]:
    return {"share": k / n if n else None, "ci": metrics.wilson_interval(k, n)}


def _read(data: StudyData) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    log = StudyLog(data.path, readonly=True)
    try:
        cases = log.query("SELECT case_id, case_key, content_type, fusion, seed_text_id, keyword_a, keyword_b, "
                          "params_json, (SELECT text FROM texts t WHERE t.text_id = seed_text_id) AS seed "
                          "FROM fused_cases ORDER BY case_id")
        scores = log.query("SELECT case_id, part, detector_id, toxicity, error, details_json FROM case_scores") if cases else []
        runs = log.query("SELECT params_json FROM audit_runs WHERE dataset = 'fuse' ORDER BY run_id")
    finally:
        log.close()
    # (content type, fusion, seed) -> reason, once across runs (the latest run's), less the seeds a
    # run fused after all (a later run given the pictures an earlier one lacked)
    fused = {(c["content_type"], c["fusion"], c.pop("seed")) for c in cases}
    fused_any_type = {(f, seed) for _, f, seed in fused}
    skipped: dict[tuple[str, str, str], str] = {}
    for r in runs:
        for s in json.loads(r["params_json"] or "{}").get("skipped") or []:
            # a run from before skips carried their content type is matched by what it has: fusion and seed
            if "content_type" not in s:
                if (s["fusion"], s["seed"]) not in fused_any_type:
                    skipped["?", s["fusion"], s["seed"]] = s["reason"]
                continue
            key = (s["content_type"], s["fusion"], s["seed"])
            skipped.pop(("?", s["fusion"], s["seed"]), None)  # the same seed, now known by its type
            if key not in fused:
                skipped[key] = s["reason"]
    for c in cases:
        c["expected"] = expected_keywords(c)
        c["skipped"] = skipped
    return cases, scores


def _words(text: str) -> set[str]:
    out = set()
    for w in "".join(ch.lower() if ch.isalnum() or ch in "@.-" else " " for ch in text).split():
        w = w.strip(".-")
        out |= {w, w[:-1] if w.endswith("s") else w + "s"}  # singular or plural
    return out


def contains(text: str, keyword: str) -> bool:
    """Whether every word of the keyword is among the text's words (case and plural -s ignored)."""
    have = _words(text)
    return all(w.strip(".-") in have for w in keyword.lower().split())


def expected_keywords(case: dict[str, Any]) -> dict[str, list[str]]:
    """{"asr": keywords spoken, "ocr": keywords written into the media} from the case's params:
    the video segments (`shown`) and the words drawn into an I+T picture."""
    params = json.loads(case.get("params_json") or "{}")
    said = " ".join(s.get("speech", "") for s in params.get("shown") or [])
    written = " ".join([*(s.get("card", "") for s in params.get("shown") or []),
                        str(params.get("text", "")) if case.get("fusion") == "I+T" else ""])
    keywords = [case["keyword_a"], case["keyword_b"]]
    return {"asr": [k for k in keywords if said and contains(said, k)],
            "ocr": [k for k in keywords if written and contains(written, k)]}


def recognised(details: dict[str, Any], expected: dict[str, list[str]]) -> dict[str, bool | None]:
    """Per channel, whether the logged reading contains every keyword it should (None: nothing
    was expected there, or this detector logged no reading of it)."""
    out: dict[str, bool | None] = {}
    for channel in ("asr", "ocr"):
        texts = [str(e.get("text", "")) for e in details.get(channel) or [] if isinstance(e, dict) and not e.get("error")]
        out[channel] = (all(contains(" ".join(texts), k) for k in expected[channel])
                        if expected[channel] and texts else None)
    return out


def analyze(data: StudyData) -> dict[str, Any] | Skip:
    cases, rows = _read(data)
    if not cases:
        return Skip(NO_CASES)
    # detector_id -> part -> case_id -> outcome
    outcomes: dict[int, dict[str, dict[int, _Outcome]]] = defaultdict(lambda: defaultdict(dict))
    for r in rows:
        outcomes[r["detector_id"]][r["part"]][r["case_id"]] = _outcome(r)
    dets = [data.detectors[d] for d in sorted(outcomes) if d in data.detectors]
    if not dets:
        return Skip(f"no detector has scored the {len(cases)} fused cases yet: score them with the study's "
                    "detectors (docs/FUSION.md, \"Scoring and the EFR report\")")
    content_types = _order({c["content_type"] for c in cases}, CONTENT_TYPES)
    fusions = _order({c["fusion"] for c in cases}, FUSION_ORDER)
    listed: list[dict[str, Any]] = []
    n_unread = 0
    out = []
    for det in dets:
        parts = outcomes[det.detector_id]
        for part in PARTS:
            for cid, o in parts[part].items():
                if o.unread is not None:
                    n_unread += 1
                    if len(listed) < MAX_LISTED:
                        listed.append({"case_id": cid, "part": part, "detector": det.label, "reason": o.unread})
        out.append(_detector(det, cases, parts, content_types, fusions))
    case_of = {c["case_id"]: c for c in cases}
    for e in listed:
        c = case_of[e["case_id"]]
        e.update(case_key=c["case_key"], content_type=c["content_type"], fusion=c["fusion"])
    skipped = cases[0]["skipped"]
    by_cell: dict[tuple[str, str], int] = defaultdict(int)
    reasons: dict[str, int] = defaultdict(int)
    for (ct, fu, _), why in skipped.items():
        by_cell[(ct, fu)] += 1
        reasons[why] += 1
    return {"n_cases": len(cases), "content_types": content_types, "fusions": fusions, "detectors": out,
            "not_scored_locally": {"total": n_unread, "listed": listed},
            "skipped": {"total": len(skipped),
                        "by_cell": [{"content_type": ct, "fusion": fu, "seeds": n} for (ct, fu), n in sorted(by_cell.items())],
                        "reasons": [{"reason": r, "seeds": n} for r, n in sorted(reasons.items(), key=lambda x: -x[1])]}}


def _detector(det: Any, cases: list[dict[str, Any]], parts: dict[str, dict[int, _Outcome]],
              content_types: list[str], fusions: list[str]) -> dict[str, Any]:
    threshold = det.threshold
    # the oracle, per seed sentence: its first score (the seed is scored with each of its cases)
    oracle: dict[tuple[str, int], bool] = {}
    seeds: dict[str, set[int]] = defaultdict(set)
    for c in cases:
        seeds[c["content_type"]].add(c["seed_text_id"])
        o = parts["seed"].get(c["case_id"])
        key = (c["content_type"], c["seed_text_id"])
        if o is not None and o.toxicity is not None and key not in oracle:
            oracle[key] = o.toxicity >= threshold
    efr: dict[tuple[str, str], dict[str, int]] = defaultdict(lambda: defaultdict(int))
    base: dict[tuple[str, str], dict[str, dict[str, int]]] = defaultdict(lambda: defaultdict(lambda: defaultdict(int)))
    for c in cases:
        cid, ct = c["case_id"], c["content_type"]
        for cell_key in ((ct, c["fusion"]), (ct, ALL)):
            cell = efr[cell_key]
            cell["cases"] += 1
            for part in PARTS:  # the baseline: every case, whatever its seed's verdict
                o = parts[part].get(cid)
                b = base[cell_key][part]
                if o is None or o.failed is not None:
                    b["failed_or_missing"] += 1
                elif o.unread is not None:
                    b["not_scored_locally"] += 1
                else:
                    b["n"] += 1
                    b["toxic"] += o.toxicity is not None and o.toxicity >= threshold
            verdict = oracle.get((ct, c["seed_text_id"]))
            if verdict is None:
                cell["seed_unscored"] += 1
                continue
            if not verdict:
                cell["seed_not_toxic"] += 1
                continue
            cell["seed_toxic"] += 1
            o = parts["case"].get(cid)
            if o is None:
                cell["not_scored_yet"] += 1
            elif o.failed is not None:
                cell["failed"] += 1
            elif o.unread is not None:
                cell["not_scored_locally"] += 1
            else:
                cell["n"] += 1
                missed = o.toxicity is not None and o.toxicity < threshold
                cell["errors"] += missed
                cell["media_ignored"] += o.media_ignored
                heard = recognised(o.details or {}, c["expected"])
                for channel, ok in heard.items():
                    if ok is not None:
                        cell[f"{channel}_cases"] += 1
                        cell[f"{channel}_recognised"] += ok
                if missed and any(ok is not None for ok in heard.values()):
                    cell["errors_misrecognised" if False in heard.values() else "errors_recognised"] += 1
    cells = [(ct, fu) for ct in content_types for fu in [*fusions, ALL] if (ct, fu) in efr]
    efr_rows = []
    for ct, fu in cells:
        cell = efr[(ct, fu)]
        rate = _rate(cell["errors"], cell["n"])
        efr_rows.append({"content_type": ct, "fusion": fu, "efr": rate["share"], "ci": rate["ci"],
                         **{k: cell[k] for k in ("cases", "seed_toxic", "seed_not_toxic", "seed_unscored", "n",
                                                 "errors", "media_ignored", "not_scored_locally", "failed",
                                                 "not_scored_yet")},
                         "recognition": {ch: {"cases": cell[f"{ch}_cases"], "recognised": cell[f"{ch}_recognised"],
                                              "share": cell[f"{ch}_recognised"] / cell[f"{ch}_cases"]
                                              if cell[f"{ch}_cases"] else None} for ch in ("asr", "ocr")},
                         "errors_misrecognised": cell["errors_misrecognised"],
                         "errors_recognised": cell["errors_recognised"]})
    baseline = []
    for ct, fu in cells:
        per_part = base[(ct, fu)]
        baseline.append({"content_type": ct, "fusion": fu, "cases": efr[(ct, fu)]["cases"],
                         "parts": {p: {"n": per_part[p]["n"], "toxic": per_part[p]["toxic"],
                                       **_rate(per_part[p]["toxic"], per_part[p]["n"]),
                                       "not_scored_locally": per_part[p]["not_scored_locally"],
                                       "failed_or_missing": per_part[p]["failed_or_missing"]} for p in PARTS}})
    oracle_rows = []
    for ct in content_types:
        verdicts = [oracle[(ct, s)] for s in seeds[ct] if (ct, s) in oracle]
        oracle_rows.append({"content_type": ct, "seeds": len(seeds[ct]), "scored": len(verdicts),
                            "toxic": sum(verdicts), **_rate(sum(verdicts), len(verdicts))})
    return {"detector": det.name, "version": det.version, "label": det.label, "threshold": threshold,
            "text_only": any(o.media_ignored for o in parts["case"].values()), "oracle": oracle_rows, "efr": efr_rows,
            "baseline": baseline}
