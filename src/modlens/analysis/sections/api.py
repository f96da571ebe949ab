"""Section: traffic of the Perspective-compatible API per community (`analysis/api_traffic.py`)."""
from __future__ import annotations

from typing import Any

from modlens.analysis import api_traffic
from modlens.analysis.data import StudyData
from modlens.analysis.sections.base import Section
from modlens.analysis.sections.html import detector, fewer, table
from modlens.analysis.skip import Skip

METHOD = ("Calls to the Perspective-compatible endpoint (`POST /v1alpha1/comments:analyze`, `comments:suggestscore`) "
          "as the daemon logged them: one comment of platform `api` per call, grouped by the request's "
          "`communityId`. Calls sent with `doNotStore: true` are not logged and not counted. Mean scores are each "
          "detector's toxicity score of the analysed comments (analyze calls; a suggestscore call is not scored), "
          "uncalibrated (docs/PERSPECTIVE.md), over the calls it scored: '(k of n analysed)' when a call has no "
          "score (a detector's error, or a daemon stopped before the call's scores were written).")


def analyze(data: StudyData) -> dict[str, Any] | Skip:
    return api_traffic.analyze(data) or Skip("no Perspective API call in this log (or every call said doNotStore)")


def render(s: dict[str, Any]) -> str:
    detectors = sorted({d for r in s["communities"].values() for d in r["mean_score"]})
    scored = s.get("scored") or {}  # a report's JSON from before the counts has none

    def mean(name: str, r: dict[str, Any], d: str) -> Any:
        """The mean, and over how many of the community's analyze calls when the detector scored fewer."""
        value, suffix = r["mean_score"].get(d), fewer(scored.get(name, {}).get(d), r["analyze"], "analysed")
        return f"{value:.3f}{suffix}" if value is not None and suffix else value
    rows = [[name, r["analyze"], r["suggestscore"], r["client_tokens"], r["sessions"], r["calibrated"],
             *(mean(name, r, d) for d in detectors)] for name, r in s["communities"].items()]
    return (f"<p>{s['n_calls']} logged calls.</p>"
            + table(["community", "analyze", "suggestscore", "client tokens", "sessions", "calibrated",
                     *(f"mean {detector(*d.split('@', 1))}" for d in detectors)], rows))


SECTION = Section(key="api", title="10. Perspective API traffic", method=METHOD, analyze=analyze, render=render)
