"""Ray's variant actors and the local engine build their variant generator in one place
(`modlens.services.variant_setup`): a Ray audit and a local audit of the same file write the same
variants, and both refuse a remote target the study did not name, on a real local Ray."""
from __future__ import annotations

import asyncio
import csv
import sqlite3
from pathlib import Path
from typing import Any, Sequence

import pytest
import ray_local


from modlens.audit import run_audit  # noqa: E402
from modlens.config import PerturbationConfig, StudyConfig  # noqa: E402
from modlens.detectors.base import Detector  # noqa: E402
from modlens.scale.actors import VariantActor  # noqa: E402
from modlens.services.errors import SetupError  # noqa: E402
from modlens.services.variant_setup import RemoteTargetRefused  # noqa: E402

pytestmark = pytest.mark.slow

BAD = {"idiot", "stupid", "trash", "moron"}


class RemoteApi(Detector):
    """Stands for an HTTP detector (`remote = True`) that also offers pooled importance, so the
    engines' choice of importance method shows in the variants they write."""
    name, version, labels, toxicity_label = "remote-api", "1", ("toxic",), "toxic"
    remote = True

    def score(self, texts: Sequence[str]) -> list[dict[str, float] | None]:
        return [{"toxic": sum(w in BAD for w in t.split()) / max(1, len(t.split()))} for t in texts]

    async def ascore(self, texts: Sequence[str]) -> list[dict[str, float] | None]:
        await asyncio.sleep(0)
        return self.score(texts)

    def word_importance_pooled(self, texts: Sequence[str]) -> list[list[float]]:
        return [[1.0] * len(t.split()) for t in texts]  # not what leave-one-out finds


@pytest.fixture(scope="module", autouse=True)
def local_ray():
    with ray_local.local_ray(__name__):  # the test detectors travel to the workers by value
        yield


def comments(path: Path) -> Path:
    with open(path, "w", newline="") as fh:
        csv.writer(fh).writerows([["text"], *[[f"you are a stupid idiot and this post is trash number {i}"]
                                               for i in range(12)]])
    return path


def variants(db: Path) -> list[tuple[Any, ...]]:
    con = sqlite3.connect(db)
    try:
        return con.execute(
            "SELECT c.comment_key, t.text, v.strategy, v.params_json, v.seed, v.positions_json, v.target_detector "
            "FROM variants v JOIN comments c USING (comment_id) JOIN texts t ON t.text_id = v.text_id "
            "ORDER BY 1, 2, 3, 4").fetchall()
    finally:
        con.close()


def study(target: str | None) -> StudyConfig:
    p = PerturbationConfig(target=target, importance_method="pooled", importance_threshold=0.0, budget=2)
    return StudyConfig().model_copy(update={"perturbation": p})


def test_ray_and_local_audits_make_the_same_variants_and_refuse_the_same_target(tmp_path):
    data = comments(tmp_path / "c.csv")
    # named as the target: accepted. Pooled importance needs a local model, so both use leave-one-out
    got = {}
    for engine in ("local", "ray"):
        db = tmp_path / f"{engine}.sqlite"
        res = run_audit(str(data), db=db, study=study("api"), detector_objects={"api": RemoteApi()},
                        perturb=["mixed_case", "repeat_char"], progress=False, engine=engine)
        assert res.n_items == 12 and res.n_missing == 0
        got[engine] = variants(db)
    assert got["local"], "the audit made variants"
    assert all('"importance_method"' not in row[3] and row[6] == "api" for row in got["local"])
    assert got["local"] == got["ray"]

    # not named: the remote detector may score comments, but no word-importance texts go to it
    for engine in ("local", "ray"):
        with pytest.raises(SetupError, match="remote"):
            run_audit(str(data), db=tmp_path / f"refused-{engine}.sqlite", study=study(None),
                      detector_objects={"api": RemoteApi()}, perturb=["mixed_case"], progress=False, engine=engine)
    with pytest.raises(RemoteTargetRefused):  # an actor started by hand refuses it too
        VariantActor(study(None).perturbation, "api", RemoteApi())
