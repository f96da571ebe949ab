"""The one variant generator setup (`modlens.services.variant_setup`) as the local engine uses it:
which detector guides the edits, and a remote one only when the study names it."""
from __future__ import annotations

import asyncio
from typing import Sequence

import pytest

from modlens.config import PerturbationConfig, StudyConfig
from modlens.detectors.base import Detector
from modlens.engine import Engine
from modlens.services.variant_setup import RemoteTargetRefused, build_variant_setup


class Words(Detector):
    """Toxicity: the share of words in BAD; `remote` set per instance."""
    name, version, labels, toxicity_label = "words", "1", ("toxic",), "toxic"

    def __init__(self, remote: bool) -> None:
        self.remote = remote
        self.seen: list[str] = []

    def score(self, texts: Sequence[str]) -> list[dict[str, float] | None]:
        self.seen += texts
        return [{"toxic": sum(w in {"idiot", "trash"} for w in t.split()) / max(1, len(t.split()))} for t in texts]

    async def ascore(self, texts: Sequence[str]) -> list[dict[str, float] | None]:
        return self.score(texts)


def perturbation(target: str | None) -> PerturbationConfig:
    return PerturbationConfig(target=target, strategies=["mixed_case"], budget=2, importance_threshold=0.0)


def test_an_unnamed_remote_detector_never_guides_the_edits():
    api, local = Words(remote=True), Words(remote=False)
    study = StudyConfig().model_copy(update={"perturbation": perturbation(None)})

    async def run() -> list[str]:
        engine = Engine(study, detectors={"api": api, "local": local})  # the remote one first
        try:
            assert engine.target_key() == "local"
            return [v.target_detector or "" for v in await engine.variants("you idiot this is trash")]
        finally:
            await engine.close()

    assert set(asyncio.run(run())) == {"local"}
    assert not api.seen, "no word-importance text went to the remote detector"
    with pytest.raises(RemoteTargetRefused, match="perturbation.target"):
        build_variant_setup(perturbation(None), {"api": api})


def test_a_named_remote_target_is_accepted_with_leave_one_out():
    setup = build_variant_setup(perturbation("api").model_copy(update={"importance_method": "pooled"}),
                                {"api": Words(remote=True)})
    assert setup is not None and setup.target == "api" and setup.importance_method == "leave_one_out"


def test_variants_off_build_nothing():
    assert build_variant_setup(perturbation(None).model_copy(update={"budget": 0}), {"x": Words(False)}) is None
    assert build_variant_setup(perturbation(None).model_copy(update={"enabled": False}), {"x": Words(False)}) is None


def test_a_variant_ranked_by_the_heuristic_names_no_target(tmp_path):
    """The engine's variants (the daemon's and the audit's) named the study's target as the detector
    that guided their edits even where it had no score for the word removals and the heuristic
    ranked the words instead; they now name none (`variants.target_detector` NULL)."""
    import json
    import sqlite3

    from modlens.audit import run_audit

    data = tmp_path / "c.csv"
    data.write_text("text\nyou are a stupid idiot\n", encoding="utf-8")
    (tmp_path / "t.csv").write_text("text,score\nyou are a stupid idiot,0.9\n", encoding="utf-8")
    from modlens.detectors import registry
    table = registry.create("cached", path=str(tmp_path / "t.csv"), mappings=[["text", "score"]], name="tbl")
    run_audit(str(data), db=tmp_path / "l.sqlite", detector_objects={"tbl": table}, perturb=["repeat_char"],
              progress=False)
    con = sqlite3.connect(tmp_path / "l.sqlite")
    try:
        rows = con.execute("SELECT params_json, target_detector FROM variants").fetchall()
    finally:
        con.close()
    assert rows and all(json.loads(p)["ranking"] == "heuristic" for p, _ in rows), rows
    assert [t for _, t in rows] == [None] * len(rows)
