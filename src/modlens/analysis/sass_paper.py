"""SASS's Tables 3 and 5 (Piedras, Rosenblatt and Wilkins 2022) as the paper prints them, and the
same figures from the log beside them: per system (Perspective, GPT-3 zero/one/few-shot) precision,
recall and F1 against the human gold (Table 3), and per category the mean human score, the mean
Perspective score and the share of texts GPT-3 called toxic (Table 5), with the system's F1 in
that category. A figure differs when, rounded to the digits the paper prints, it is not the
paper's; the comparison then says by how much and why (`NOTES`).

The paper's values are kept as printed (strings), so the digits they carry set the tolerance."""
from __future__ import annotations

from decimal import Decimal
from typing import Any

# system (a detector name, or its prefix before "-": `perspective-toxicity_score`) -> the paper's row name
SYSTEMS = {"perspective": "PERSPECTIVE", "gpt-3-zero-shot": "GPT-3-ZERO", "gpt-3-one-shot": "GPT-3-ONE",
           "gpt-3-few-shot": "GPT-3-FEW"}
HUMAN = "human"
PAPER_TEXTS = 250  # the benchmark's texts, 25 per category; 72.4% toxic under the human gold
TABLE_3 = {"perspective": ("0.26", "0.05", "0.08"), "gpt-3-zero-shot": ("0.83", "0.19", "0.31"),
           "gpt-3-one-shot": ("0.77", "0.11", "0.19"), "gpt-3-few-shot": ("0.73", "0.52", "0.61")}
TABLE_3_METRICS = ("precision", "recall", "f1")
# category -> human, PERSPECTIVE, GPT-3-ZERO, GPT-3-ONE, GPT-3-FEW (percent)
TABLE_5 = {
    "Blackmail": ("68.2", "15.7", "40", "40", "69"),
    "Classism": ("78.7", "19.3", "20.8", "0", "54.2"),
    "Exclusionary": ("83.6", "23.4", "12", "24", "64"),
    "Gaslighting": ("56.5", "15.5", "16", "0", "44"),
    "Misogyny": ("78.7", "22.2", "29.2", "8.3", "58.3"),
    "Sarcasm": ("66.5", "33.7", "8", "0", "32"),
    "Sexual Harassment": ("80", "21.9", "16", "4", "32"),
    "Stereotyping": ("81.4", "31.7", "12", "0", "40"),
    "Neutral": ("0.7", "10.4", "0", "0", "28"),
    "False Positive": ("5.4", "80.9", "25", "25", "79.2"),
}
TABLE_5_COLUMNS = (HUMAN, *SYSTEMS)
# Why the released data can differ from the printed tables (checked against the released files by
# tests/test_report_sass_paper.py when they are present)
SHORT_ROWS = ("Classism", "Misogyny", "False Positive")
NOTES = {
    "short_row": ("the paper's {category} row averages 24 texts (its GPT-3 shares are multiples of 1/24, and its "
                  "human and Perspective means are the released file's with one text left out); the file has 25"),
    "gpt_table_5": ("Table 5's GPT-3 shares are not those of the GPT-3 answers the released file records, while "
                    "Table 3, computed from the same answers, agrees with them to the printed digits"),
    "texts": "the log holds {n} texts with a gold label in these categories; the paper's tables use 250",
}


def system_of(detector: str) -> str | None:
    """The paper's system a detector's name stands for (None: not one of the paper's)."""
    return next((s for s in SYSTEMS if detector == s or detector.startswith(s + "-")), None)


def _cell(ours: float | None, printed: str, scale: float = 1.0) -> dict[str, Any]:
    """Our figure beside the paper's; `differs` when ours, rounded to the paper's digits, is not it."""
    paper = Decimal(printed)
    if ours is None:
        return {"ours": None, "paper": float(paper), "printed": printed, "diff": None, "differs": True}
    value = Decimal(repr(ours * scale)).quantize(Decimal(1).scaleb(paper.as_tuple().exponent))  # type: ignore[arg-type]
    return {"ours": ours * scale, "paper": float(paper), "printed": printed, "diff": ours * scale - float(paper),
            "differs": value != paper}


def _pick(detectors: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Per system, the detector column that scored the most gold texts."""
    out: dict[str, dict[str, Any]] = {}
    for d in detectors:
        system = system_of(d["detector"])
        if system and (system not in out or d["n"] > out[system]["n"]):
            out[system] = d
    return out


def compare(section: dict[str, Any]) -> dict[str, Any] | None:
    """Tables 3 and 5 of the paper beside the section's figures (`sass.analyze`'s output with gold);
    None when no detector column is one of the paper's systems."""
    picked = _pick(section["detectors"])
    if not picked:
        return None
    table3 = [{"system": s, "paper_name": SYSTEMS[s], "detector": d["detector"], "version": d["version"], "n": d["n"],
               "cells": {m: _cell(d[m], p) for m, p in zip(TABLE_3_METRICS, TABLE_3[s])}}
              for s, d in picked.items()]
    rows = []
    for category, printed in TABLE_5.items():
        if category not in section["categories"]:
            continue
        by_cat = {s: next((c for c in d["by_category"] if c["category"] == category), None) for s, d in picked.items()}
        ours = {HUMAN: section["human_mean_by_category"].get(category),
                **{s: picked[s]["mean_by_category"].get(category) for s in picked}}
        rows.append({"category": category, "n": max((c["n"] for c in by_cat.values() if c), default=0),
                     "cells": {col: _cell(ours[col], p, 100) for col, p in zip(TABLE_5_COLUMNS, printed) if col in ours},
                     "f1": {s: (c["metrics"]["f1"]["value"] if c else None) for s, c in by_cat.items()}})
    return {"table3": table3, "table5": {"columns": [c for c in TABLE_5_COLUMNS if c == HUMAN or c in picked],
                                        "rows": rows},
            "notes": _notes(section, table3, rows)}


def _notes(section: dict[str, Any], table3: list[dict[str, Any]], rows: list[dict[str, Any]]) -> list[str]:
    """Why figures differ: only for the differences the comparison found."""
    notes = []
    n = sum(r["n"] for r in rows)
    if n != PAPER_TEXTS and (any(c["differs"] for r in table3 for c in r["cells"].values())
                             or any(c["differs"] for r in rows for c in r["cells"].values())):
        notes.append(NOTES["texts"].format(n=n))
    for r in rows:
        if r["category"] in SHORT_ROWS and r["n"] == 25 and any(c["differs"] for c in r["cells"].values()):
            notes.append(NOTES["short_row"].format(category=r["category"]))
    if any(c["differs"] for r in rows for col, c in r["cells"].items() if col.startswith("gpt-3")):
        notes.append(NOTES["gpt_table_5"])
    return notes
