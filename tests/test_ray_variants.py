"""Ray's variant actors and the local engine build their variant generator in one place
(`modlens.services.variant_setup`): a Ray audit and a local audit of the same file write the same
variants, and both refuse a remote target the study did not name, on a real local Ray."""
from __future__ import annotations

import asyncio
import csv
import os
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


class DiesOnAProbe(Detector):
    """A local model whose process dies on a word-importance text only a variant actor sends (no
    comment is that text): `ALWAYS` kills it every time, `ONCE` only the first time (a marker file
    remembers it across the restart), as an out-of-memory crash that a restart cures."""
    name, version, labels, toxicity_label = "dies", "1", ("toxic",), "toxic"
    # word removals (`importance_texts`) of the comments "stupid idiot always dies here", "stupid idiot dies once here"
    ALWAYS, ONCE = "idiot always dies here", "idiot dies once here"

    def __init__(self, marker: str):
        self.marker = marker

    def score(self, texts: Sequence[str]) -> list[dict[str, float] | None]:
        if self.ALWAYS in texts:
            os._exit(1)
        if self.ONCE in texts and not os.path.exists(self.marker):
            Path(self.marker).touch()
            os._exit(1)
        return [{"toxic": sum(w in BAD for w in t.split()) / max(1, len(t.split()))} for t in texts]


def test_a_variant_actor_that_dies_is_restarted_and_its_texts_retried_as_a_detector_actors_are(tmp_path):
    """A variant actor that died stopped the audit (RayActorError out of run_audit) while a detector
    actor's death is retried: now both go through the pool's one retry, so a crash a restart cures
    costs nothing, and texts that kill the actor every time are recorded as the step's errors (as a
    generator that raises for a text is) while the audit goes on."""
    rows = [f"you are a stupid idiot number {i}" for i in range(8)]
    rows[1], rows[6] = "stupid idiot dies once here", "stupid idiot always dies here"  # chunks of 4: [0-3] [4-7], each in 2 parts
    data = tmp_path / "c.csv"
    with open(data, "w", newline="") as fh:
        csv.writer(fh).writerows([["text"], *[[r] for r in rows]])
    db = tmp_path / "l.sqlite"
    p = PerturbationConfig(target="dies", importance_threshold=0.0, budget=2)
    res = run_audit(str(data), db=db, study=StudyConfig().model_copy(update={"perturbation": p}),
                    detector_objects={"dies": DiesOnAProbe(str(tmp_path / "died-once"))},
                    perturb=["mixed_case", "repeat_char"], progress=False, engine="ray", chunk_size=4)
    assert res.n_items == 8 and (tmp_path / "died-once").exists()  # it did die once
    con = sqlite3.connect(db)
    try:
        failed = dict(con.execute("SELECT t.text, e.message FROM step_errors e JOIN texts t USING (text_id) "
                                  "WHERE e.step = 'variants'").fetchall())
        made = {t for (t,) in con.execute("SELECT DISTINCT s.text FROM variants v "
                                          "JOIN texts s ON s.text_id = v.source_text_id").fetchall()}
    finally:
        con.close()
    # the part (2 texts) holding ALWAYS's comment killed its actor every time: its texts' variants are errors
    assert set(failed) == {rows[6], rows[7]}, failed
    # and the audit says so (`modlens audit` exits 1 on it): the step, its texts, the first error
    assert res.step_errors["variants"]["errors"] == 2 and res.step_errors["variants"]["first"] in failed.values()
    assert all(m.startswith(("ActorDiedError", "ActorUnavailableError", "RayActorError")) for m in failed.values())
    assert made == set(rows) - set(failed)  # every other text has its variants, ONCE's included
