"""Read-only access to a study log for analysis, through the study log's one read-only opener
(`StudyLog(path, readonly=True)`: `mode=ro`, so a report never blocks or changes the daemon
writing the same file, and a log of another schema version is refused). Everything is loaded
into small tidy structures once; each report section takes what it needs."""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from modlens.studylog.store import StudyLog, StudyLogError

LogError = StudyLogError  # the file is missing, not a study log, or of another schema version


@dataclass
class DetectorRow:
    detector_id: int
    name: str
    version: str
    toxicity_label: str | None
    threshold: float
    config: dict[str, Any]

    @property
    def label(self) -> str:
        return f"{self.name}@{self.version}"


@dataclass
class StudyData:
    path: Path
    detectors: dict[int, DetectorRow]
    comments: dict[int, dict[str, Any]]            # comment_id -> {platform, key, text_id, page_id}
    labels: dict[int, dict[str, str]]              # comment_id -> {name: value}
    scores: dict[tuple[int, int], float | None]    # (text_id, detector_id) -> toxicity (None: error/missing)
    variants: list[dict[str, Any]]
    normalizations: dict[int, list[dict[str, Any]]]  # source text_id -> [{normalizer, version, result_text_id, edits}]
    texts: dict[int, str]
    ratings: list[dict[str, Any]]                  # with "values": {attribute: level}
    studies: list[dict[str, Any]]
    runs: list[dict[str, Any]] = field(default_factory=list)

    def score(self, text_id: int, detector_id: int) -> float | None:
        return self.scores.get((text_id, detector_id))

    def platforms(self) -> list[str]:
        return sorted({c["platform"] for c in self.comments.values()})


def _loads(raw: str | None, default: Any) -> Any:
    if raw in (None, ""):
        return default
    try:
        return json.loads(raw)
    except (TypeError, json.JSONDecodeError):
        return default


def load(path: str | Path) -> StudyData:
    log = StudyLog(path, readonly=True)
    try:
        q = log.query
        detectors = {
            r["detector_id"]: DetectorRow(r["detector_id"], r["name"], r["version"], r["toxicity_label"],
                                          0.5 if r["threshold"] is None else float(r["threshold"]),
                                          _loads(r["config_json"], {}))
            for r in q("SELECT * FROM detectors")
        }
        comments = {r["comment_id"]: {"platform": r["platform"], "key": r["comment_key"], "text_id": r["text_id"],
                                      "page_id": r["page_id"]}
                    for r in q("SELECT comment_id, platform, comment_key, text_id, page_id FROM comments")}
        labels: dict[int, dict[str, str]] = {}
        for r in q("SELECT comment_id, name, value FROM labels ORDER BY source"):
            labels.setdefault(r["comment_id"], {})[r["name"]] = r["value"]
        scores = {(r["text_id"], r["detector_id"]): (None if r["error"] else r["toxicity"])
                  for r in q("SELECT text_id, detector_id, toxicity, error FROM scores")}
        variants = []
        for r in q("SELECT * FROM variants ORDER BY variant_id"):
            r["params"] = _loads(r.pop("params_json"), {})
            r["attack"] = _loads(r.pop("attack_json"), None)
            variants.append(r)
        normalizations: dict[int, list[dict[str, Any]]] = {}
        for r in q("SELECT * FROM normalizations"):
            r["edits"] = _loads(r.pop("edits_json"), [])
            normalizations.setdefault(r["source_text_id"], []).append(r)
        texts = {r["text_id"]: r["text"] for r in q("SELECT text_id, text FROM texts")}
        values: dict[int, dict[str, str]] = {}
        for r in q("SELECT rating_id, attribute, value FROM rating_values"):
            values.setdefault(r["rating_id"], {})[r["attribute"]] = r["value"]
        ratings = []
        for r in q("SELECT * FROM ratings ORDER BY rating_id"):
            r["values"] = values.get(r["rating_id"]) or _loads(r.get("values_json"), {})
            r["anchors"] = _loads(r.pop("anchors_json", None), None)
            ratings.append(r)
        studies = [dict(r, config=_loads(r.pop("config_json"), {})) for r in q("SELECT * FROM studies")]
        runs = q("SELECT * FROM audit_runs ORDER BY run_id")
    finally:
        log.close()
    return StudyData(Path(path), detectors, comments, labels, scores, variants, normalizations, texts,
                     ratings, studies, runs)
