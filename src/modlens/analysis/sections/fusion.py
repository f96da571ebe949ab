"""Section 9: DUO semantic fusion, error finding rate (`analysis/fusion.py`)."""
from __future__ import annotations

import html
from typing import Any

from modlens.analysis import fusion
from modlens.analysis.data import StudyData
from modlens.analysis.references import cite
from modlens.analysis.sections.base import Section
from modlens.analysis.sections.html import detector, table, with_ci
from modlens.analysis.skip import Skip

METHOD = ("DUO semantic fusion (Wang et al. 2023, sections 3.4 and 4.2). Oracle: a seed sentence counts when the "
          "detector scores it toxic (score ≥ its threshold; its first score, as each case scores its seed "
          "again). Metamorphic relation: a fused case whose seed is toxic must be toxic. Error finding rate = "
          "fused cases scored below the threshold / fused cases with a toxic seed that the detector scored; "
          f"Wilson 95% intervals ({cite('wilson')}). Baseline: share flagged of every case's seed, each half alone and the fused "
          "case. Parts the detector cannot read here (audio, video without a reader) are 'not scored locally', "
          "never errors; a text-only detector sees only the caption of a case with media (counted as media "
          "ignored). Recognition: for cases whose keywords were spoken or written into the media, the share whose "
          "logged transcript (ASR) or OCR text contains them, and the errors that came with a keyword misheard or "
          "misread (recognition) against those with every keyword recognised (the detector's own miss). Seeds a "
          "fusion could not take are counted with their reasons.")


def analyze(data: StudyData) -> dict[str, Any] | Skip:
    return fusion.analyze(data)


def render(s: dict[str, Any]) -> str:
    def efr(c: dict[str, Any] | None) -> str:
        if not c:
            return ""
        if c["n"]:
            return f"{with_ci(c['efr'], c['ci'])} ({c['errors']}/{c['n']})"
        why = [f"{label} {c[k]}" for k, label in (("seed_not_toxic", "seed not toxic"), ("seed_unscored", "seed not scored"),
                                                  ("not_scored_locally", "not scored locally"), ("failed", "failed"),
                                                  ("not_scored_yet", "not scored yet")) if c[k]]
        return "– (" + ", ".join(why) + ")" if why else "–"

    def flagged(p: dict[str, Any]) -> str:
        return "–" if not p["n"] else f"{p['share']:.3f} ({p['toxic']}/{p['n']})"

    types, rows_order = s["content_types"], [*s["fusions"], fusion.ALL]
    out = [f"<p>{s['n_cases']} fused cases. EFR cells: rate [Wilson 95% interval] (errors found / cases tested).</p>"]
    for det in s["detectors"]:
        out.append(f"<h3>{html.escape(detector(det['detector'], det['version']))} <small>threshold "
                   f"{det['threshold']}</small></h3>")
        if det["text_only"]:
            out.append("<p class=note>Text-only detector: it saw only the caption of cases with media (what a "
                       "text-only moderation stack sees), so its EFR is the text-only baseline.</p>")
        out.append(table(["content type", "seed sentences", "scored", "toxic (kept as seeds)", "share toxic"],
                          [[r["content_type"], r["seeds"], r["scored"], r["toxic"], r["share"]] for r in det["oracle"]]))
        cell = {(r["content_type"], r["fusion"]): r for r in det["efr"]}
        out.append("<h4>Error finding rate (fusion × content type)</h4>")
        out.append(table(["fusion", *types], [[fu, *[efr(cell.get((ct, fu))) for ct in types]] for fu in rows_order
                                               if any((ct, fu) in cell for ct in types)]))
        def share(r: dict[str, Any]) -> str:
            return "–" if not r["cases"] else f"{r['share']:.2f} ({r['recognised']}/{r['cases']})"

        recog = [e for e in det["efr"] if e["recognition"]["asr"]["cases"] or e["recognition"]["ocr"]["cases"]]
        if recog:
            out.append("<h4>Recognition beside the EFR: keywords heard (ASR) and read (OCR)</h4>")
            out.append(table(["content type", "fusion", "EFR", "ASR heard the keywords", "OCR read the keywords",
                               "errors: keyword misrecognised", "errors: all recognised (detector)"],
                              [[e["content_type"], e["fusion"], efr(e), share(e["recognition"]["asr"]),
                                share(e["recognition"]["ocr"]), e["errors_misrecognised"], e["errors_recognised"]]
                               for e in recog]))
        # the fused case's cases not in its share, over every case as the heading says (cases = scored + these
        # two); media ignored is counted on the cases the EFR tested (toxic seed), and headed so
        out.append("<h4>Baseline: share flagged toxic, over every case</h4>")
        out.append(table(["content type", "fusion", "cases", "seed", "part A alone", "part B alone", "fused case",
                           "not scored locally", "failed or missing", "seed toxic", "media ignored (cases tested)"],
                          [[b["content_type"], b["fusion"], b["cases"], *[flagged(b["parts"][p]) for p in
                                                                          ("seed", "part_a", "part_b", "case")],
                            b["parts"]["case"]["not_scored_locally"], b["parts"]["case"]["failed_or_missing"],
                            cell[(b["content_type"], b["fusion"])]["seed_toxic"],
                            cell[(b["content_type"], b["fusion"])]["media_ignored"]] for b in det["baseline"]]))
    skipped = s.get("skipped") or {"total": 0}
    if skipped["total"]:
        out.append(f"<h3>Seeds a fusion skipped ({skipped['total']})</h3>")
        out.append(table(["content type", "fusion", "seeds skipped"],
                          [[r["content_type"], r["fusion"], r["seeds"]] for r in skipped["by_cell"]]))
        out.append(table(["reason", "seeds"], [[r["reason"], r["seeds"]] for r in skipped["reasons"]]))  # table() escapes
    unread = s["not_scored_locally"]
    if unread["total"]:
        out.append(f"<h3>Not scored locally ({unread['total']} parts; first {len(unread['listed'])} listed)</h3>"
                   "<p class=note>No local detector reads these media: export them for an external API.</p>")
        out.append(table(["case", "content type", "fusion", "part", "detector", "reason"],
                          [[e["case_id"], e["content_type"], e["fusion"], e["part"], e["detector"], e["reason"]]
                           for e in unread["listed"]]))
    return "".join(out)


SECTION = Section(key='fusion', title='9. Semantic fusion (DUO): error finding rate', method=METHOD, analyze=analyze, render=render)
