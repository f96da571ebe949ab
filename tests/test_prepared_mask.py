"""Masks in the form SDPA takes (`minilm.prepared_mask`): where a model reads them as it reads a 0/1 mask
(checked at load, `takes_prepared_mask`), the encoder and hf-classifier hand them over, and transformers
no longer asks the device whether each masked sub-batch is full (`.all()`: on a GPU a wait for the card
per sub-batch). Scores must not move."""
from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch

from modlens.detectors import registry
from modlens.detectors.minilm import takes_prepared_mask
from modlens.scale.sources import load_dataset
from realtools import requires
from test_detectors_hf import save_tiny_bert
from test_encoder_shapes import tensor_calls


@pytest.fixture(scope="module")
def davidson() -> list[str]:
    return [it.text for it in load_dataset("davidson", None, "local").items[:64]]


def test_minilm_takes_prepared_masks_with_the_same_embeddings_and_no_full_mask_checks(minilm, davidson):
    encoder = minilm.encoder
    assert encoder.prepared_mask  # SDPA: checked at load
    try:
        with tensor_calls("all") as prepared_checks:
            prepared = encoder.encode(davidson)
        encoder.prepared_mask = False
        with tensor_calls("all") as plain_checks:
            plain = encoder.encode(davidson)
    finally:
        encoder.prepared_mask = True
    assert np.array_equal(prepared, plain)
    assert plain_checks and not prepared_checks  # the 0/1 mask is checked per masked sub-batch


def test_hf_classifier_takes_them_where_the_model_reads_them_alike(tmp_path, davidson):
    det = registry.create("hf-classifier", model=str(save_tiny_bert(tmp_path / "tiny")), toxicity_label="LABEL_1",
                          batch_size=8)
    assert det.prepared_mask
    with tensor_calls("all") as checks:
        prepared = det.score(davidson)
    assert not checks
    det.prepared_mask = False
    assert det.score(davidson) == prepared


def test_a_model_that_reads_masks_another_way_keeps_the_0_1_mask(tmp_path, davidson):
    from transformers import AutoModelForSequenceClassification

    path = save_tiny_bert(tmp_path / "tiny")
    eager = AutoModelForSequenceClassification.from_pretrained(str(path), attn_implementation="eager").eval()
    # eager attention adds the mask to its scores: a boolean 4D mask would mask nothing
    assert not takes_prepared_mask(eager, "cpu", 5, 0, lambda out: out.logits)
    det = registry.create("hf-classifier", model=str(path), toxicity_label="LABEL_1", batch_size=8)
    det.model = eager  # (a model that loaded with eager attention: scored as before, through the 0/1 mask)
    det.prepared_mask = takes_prepared_mask(eager, "cpu", det.token_id, det.pad_id, lambda out: out.logits)
    assert not det.prepared_mask
    eager_scores = det.score(davidson)
    det.model, det.prepared_mask = sdpa_model(path), True
    assert all(abs(a[k] - b[k]) < 1e-6 for a, b in zip(eager_scores, det.score(davidson)) for k in a)
    sdpa = sdpa_model(path)
    assert takes_prepared_mask(sdpa, "cpu", 5, 0, lambda out: out.logits)

    class Refuses(torch.nn.Module):  # an architecture that takes only 2D masks
        config = sdpa.config

        def forward(self, input_ids, attention_mask):
            if attention_mask.dim() != 2:
                raise ValueError("2D masks only")
            return sdpa(input_ids=input_ids, attention_mask=attention_mask)

    assert not takes_prepared_mask(Refuses(), "cpu", 5, 0, lambda out: out.logits)


def sdpa_model(path):
    from transformers import AutoModelForSequenceClassification

    return AutoModelForSequenceClassification.from_pretrained(str(path), attn_implementation="sdpa").eval()


def test_a_model_switched_to_eager_attention_after_load_gets_the_0_1_mask_again(tmp_path, davidson):
    """An ONNX export (`minilm_onnx.build`) switches the loaded torch model to eager attention; the
    detector goes on scoring with it, so whether a mask is prepared is asked at each call."""
    det = registry.create("hf-classifier", model=str(save_tiny_bert(tmp_path / "tiny")), toxicity_label="LABEL_1",
                          batch_size=8)
    want, dims = det.score(davidson), mask_dims(det)
    assert dims == {4}
    det.model.set_attn_implementation("eager")
    assert det.prepared_mask  # decided at load; the call asks again
    got, dims = det.score(davidson), mask_dims(det)
    assert dims == {2}  # the 0/1 mask (a boolean 4D one, added to eager's scores, would mask nothing)
    assert all(abs(a[k] - b[k]) < 1e-6 for a, b in zip(want, got) for k in a)


def mask_dims(det) -> set[int]:
    """The dimensions of the masks `det`'s model was handed in a score of a few padded texts."""
    seen: set[int] = set()
    forward = det.model.forward

    def recording(*args, **kwargs):
        if kwargs.get("attention_mask") is not None:
            seen.add(kwargs["attention_mask"].dim())
        return forward(*args, **kwargs)

    det.model.forward = recording
    try:
        det.score(["short", "a somewhat longer text than that", "and a third one here"])
    finally:
        del det.model.forward
    return seen


@requires("gpu")
def test_cuda_encode_waits_for_the_card_less_than_once_per_masked_sub_batch(davidson):
    """On CUDA (run by bench/gpu_check.py): the synchronizing operations of one encode, counted by
    torch's sync debug mode, with the 0/1 mask (one wait per masked sub-batch at least) and prepared."""
    from modlens.detectors.minilm import SentenceEncoder

    encoder = SentenceEncoder(device="cuda", batch_size=8, warm_shapes=False)
    assert encoder.prepared_mask
    encoder.encode(davidson)  # kernels loaded, allocator warm
    syncs = {}
    for prepared in (False, True):
        encoder.prepared_mask = prepared
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            torch.cuda.set_sync_debug_mode("warn")
            try:
                encoder.encode(davidson)
            finally:
                torch.cuda.set_sync_debug_mode(0)
        syncs[prepared] = sum("synchroniz" in str(w.message) for w in caught)
    assert syncs[True] < syncs[False], syncs
    assert syncs[True] <= 2, syncs  # the copy back (and at most one more), not one per sub-batch
