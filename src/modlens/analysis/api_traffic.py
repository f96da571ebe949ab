"""API traffic per community: the calls the Perspective-compatible endpoint logged (platform `api`,
labels of source `api`, `modlens.perspective.service`). Calls with `doNotStore` are not in the log."""
from __future__ import annotations

from statistics import mean
from typing import Any

from modlens.analysis.data import StudyData

PLATFORM = "api"
NO_COMMUNITY = "(no communityId)"


def analyze(data: StudyData) -> dict[str, Any] | None:
    """community -> calls, suggestions, distinct client tokens and sessions, calibrated calls and
    each detector's mean score of the analysed comments (the analyze calls it scored: a suggestscore
    call's text may carry another call's score, scores being per text), and in `scored` over how many;
    None when the log has no API call."""
    calls = [(cid, c) for cid, c in data.comments.items() if c["platform"] == PLATFORM]
    if not calls:
        return None
    rows: dict[str, dict[str, Any]] = {}
    for cid, c in calls:
        labels = data.labels.get(cid, {})
        row = rows.setdefault(labels.get("api.community_id", NO_COMMUNITY), {
            "analyze": 0, "suggestscore": 0, "client_tokens": set(), "sessions": set(), "calibrated": 0, "scores": {}})
        endpoint = labels.get("api.endpoint", "analyze")
        endpoint = endpoint if endpoint in ("analyze", "suggestscore") else "analyze"
        row[endpoint] += 1
        if "api.client_token" in labels:
            row["client_tokens"].add(labels["api.client_token"])
        if "api.session_id" in labels:
            row["sessions"].add(labels["api.session_id"])
        row["calibrated"] += labels.get("api.calibrated") in ("true", "1", "True")
        for det_id, det in data.detectors.items():
            value = data.score(c["text_id"], det_id) if endpoint == "analyze" else None
            if value is not None:
                row["scores"].setdefault(f"{det.name}@{det.version}", []).append(value)
    return {"n_calls": len(calls), "communities": {
        name: {"analyze": r["analyze"], "suggestscore": r["suggestscore"], "client_tokens": len(r["client_tokens"]),
               "sessions": len(r["sessions"]), "calibrated": r["calibrated"],
               "mean_score": {d: round(mean(v), 4) for d, v in sorted(r["scores"].items())}}
        for name, r in sorted(rows.items())},
        "scored": {name: {d: len(v) for d, v in sorted(r["scores"].items())} for name, r in sorted(rows.items())}}
