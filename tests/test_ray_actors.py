"""What Ray's actors run, without Ray (the actor classes are plain classes): torch
threads per CPU actor, and the study's word-importance method in the variant actor."""
from __future__ import annotations

import pytest

from modlens.config import PerturbationConfig
from modlens.detectors import registry
from modlens.scale.actors import DetectorActor, VariantActor
from modlens.scale.ray_audit import Plan, RayOptions


@pytest.fixture(scope="module")
def detector():
    det = registry.create("minilm-toxicity")
    yield det
    det.close()


def test_the_plan_gives_cpu_actors_the_cpus_as_threads():
    assert Plan.of(2, 0, 1, False, RayOptions()).threads == 2   # one MiniLM actor on 2 CPUs: both cores
    assert Plan.of(16, 0, 1, False, RayOptions()).threads == 2  # 8 actors on 16 CPUs
    assert Plan.of(2, 0, 3, True, RayOptions()).threads == 1    # more actors than CPUs: at least 1


def test_a_cpu_actor_sets_torch_threads(detector):
    import torch

    before = torch.get_num_threads()
    try:
        torch.set_num_threads(1)
        DetectorActor(detector, False, None, 2)
        assert torch.get_num_threads() == 2
        DetectorActor(detector, False, None, None)  # no plan: left as it is
        assert torch.get_num_threads() == 2
    finally:
        torch.set_num_threads(before)


def test_the_variant_actor_uses_the_study_importance_method(detector):
    p = PerturbationConfig(importance_method="pooled", importance_threshold=0.0, strategies=["mixed_case"], budget=2)
    got = VariantActor(p, "minilm-toxicity", detector).variants(["thanks for the recipe idiot it worked well"])[0]
    assert isinstance(got, list) and got
    assert all(v.params["importance_method"] == "pooled" for v in got)
    loo = VariantActor(p.model_copy(update={"importance_method": "leave_one_out"}), "minilm-toxicity", detector)
    got = loo.variants(["thanks for the recipe idiot it worked well"])[0]
    assert isinstance(got, list) and got and all("importance_method" not in v.params for v in got)
