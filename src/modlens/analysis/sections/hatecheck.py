"""Section 8: HateCheck accuracy by functionality (`analysis/hatecheck.py`)."""
from __future__ import annotations

import html
from typing import Any

from modlens.analysis import hatecheck
from modlens.analysis.data import StudyData
from modlens.analysis.references import cite
from modlens.analysis.sections import svg
from modlens.analysis.sections.base import Section
from modlens.analysis.sections.html import detector, fewer, source_heading, table, unscored_note, with_ci
from modlens.analysis.skip import Skip

METHOD = ("HateCheck (Röttger et al. 2021): a case is right when the detector's decision (score ≥ its "
          "threshold) matches the gold label (hateful = toxic). Accuracy per functionality (F1–F29, the paper's "
          f"order), per target identity and overall; brackets: Wilson 95% intervals ({cite('wilson')}); a detector that "
          "failed on or never scored some of a row's cases has its accuracy over the others, '(k of n scored)'. "
          "The spell_* cases "
          "also "
          "appear as clean/perturbed pairs in the robustness section. Per source, never pooled: only the suite "
          "(dataset:hatecheck, the catalog's bytes) is HateCheck; a file in its layout with other bytes (file-DIGEST) "
          "gets the same tables in a block of its own.")


def analyze(data: StudyData) -> dict[str, Any] | Skip:
    return hatecheck.analyze(data)


def render(section: dict[str, Any]) -> str:
    """Each source in a block of its own, the suite first."""
    return "".join(source_heading(s, "The HateCheck suite", "HateCheck's layout, not the HateCheck suite")
                   + _render_source(s) for s in section["sources"]) + unscored_note(section, "cases")


def _render_source(s: dict[str, Any]) -> str:
    dets = s["detectors"]
    names = [detector(d["detector"], d["version"]) for d in dets]
    cols = names if len(set(names)) == len(names) else [d["label"] for d in dets]
    number = {f: i + 1 for i, f in enumerate(hatecheck.FUNCTIONALITIES)}

    def cells(row: dict[str, Any]) -> list[str]:
        """Each detector's accuracy; over how many of the row's cases when it scored fewer (it failed on,
        or never scored, the others), since the row's n counts them all."""
        return [with_ci(c["accuracy"], c["ci"]) + fewer(c["n"], row["n"], "scored")
                for c in (row["detectors"][d["label"]] for d in dets)]
    out = [f"<p>{s['n_cases']} cases; accuracy [Wilson 95% interval]. Detectors: "
           + ", ".join(f"{html.escape(c)} (threshold {d['threshold']}, {d['n_scored']} scored)" for c, d in zip(cols, dets))
           + ".</p>",
           table(["", "functionality", "description", "gold label", "n", *cols],
                  [[f"F{number[r['key']]}" if r["key"] in number else "", r["key"], r["description"], r["gold"], r["n"],
                    *cells(r)] for r in s["functionalities"]]),
           svg.figures(svg.bar_chart(
               [f"F{number[r['key']]} {r['key']}" if r["key"] in number else r["key"] for r in s["functionalities"]],
               [(c, [r["detectors"][d["label"]]["accuracy"] for r in s["functionalities"]]) for c, d in zip(cols, dets)],
               ("HateCheck" if s["release"] else f"{s['source'].removeprefix('dataset:')} (HateCheck's layout)")
               + ": accuracy per functionality", "accuracy (decision matches the gold label)")),
           "<h3>Totals</h3>", table(["cases", "n", *cols], [[r["key"], r["n"], *cells(r)] for r in s["totals"]])]
    if s["targets"]:
        out += ["<h3>By target identity</h3>",
                table(["target", "n", *cols], [[r["key"], r["n"], *cells(r)] for r in s["targets"]])]
    return "".join(out)


SECTION = Section(key='hatecheck', title='8. HateCheck by functionality', method=METHOD, analyze=analyze, render=render)
