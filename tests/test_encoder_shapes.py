"""The fixed set of forward-pass shapes, warmed at load on CUDA: the embedded MiniLM encoder and
hf-classifier run every shape they can produce once (`warm_up`), so a first pass over unseen texts
meets no new shape. The logic is the same on every device, so it is checked here on the CPU with
CUDA's settings forced (padded row counts, warm-up on): the shapes warmed are exactly the set, every
shape real traffic produces is in it, scores do not change, and a call copies its results back once."""
from __future__ import annotations

import random
from contextlib import contextmanager

import numpy as np
import pytest
import torch

from modlens.detectors import registry
from modlens.detectors.base import DetectorUnavailable
from modlens.detectors.minilm import (SentenceEncoder, length_buckets, pad_widths, padded_width, shapes,
                                      wants_warm_up)
from test_detectors_hf import LABEL_MAP, save_tiny_bert

VOCAB = "you are such a total idiot and the weather is nice today my friend".split()


def random_texts(seed: int, n: int, most_words: int) -> list[str]:
    rng = random.Random(seed)
    return [" ".join(rng.choice(VOCAB) for _ in range(rng.randint(1, most_words))) for _ in range(n)]


@contextmanager
def recorded_passes(model):
    """(rows, width, masked) of every forward pass `model` runs inside the block."""
    seen: list[tuple[int, int, bool]] = []

    def record(_module, args, kwargs):
        ids = kwargs.get("input_ids") if kwargs.get("input_ids") is not None else args[0]
        seen.append((int(ids.shape[0]), int(ids.shape[1]), kwargs.get("attention_mask") is not None))

    hook = model.register_forward_pre_hook(record, with_kwargs=True)
    try:
        yield seen
    finally:
        hook.remove()


@contextmanager
def cuda_settings(target, *, batch_size: int, max_length: int):
    """The encoder or classifier with CUDA's row padding and small settings (a quick warm-up on the CPU)."""
    saved = {k: getattr(target, k) for k in ("batch_size", "max_length", "widths", "pad_rows")}
    target.batch_size, target.max_length, target.widths, target.pad_rows = (
        batch_size, max_length, pad_widths(max_length), True)
    try:
        yield target
    finally:
        for k, v in saved.items():
            setattr(target, k, v)


@contextmanager
def tensor_calls(method: str):
    """How many times `Tensor.<method>` runs inside the block (`cpu`: a copy to the host; `all`:
    transformers' full-mask check): on a GPU each of those is a wait for the device."""
    calls: list[int] = []
    plain = getattr(torch.Tensor, method)

    def counted(self, *args, **kwargs):
        calls.append(1)
        return plain(self, *args, **kwargs)

    setattr(torch.Tensor, method, counted)
    try:
        yield calls
    finally:
        setattr(torch.Tensor, method, plain)


def expected_warm_passes(all_shapes):
    return {(r, w, masked) for r, w in all_shapes for masked in (False, True) if w > 1 or not masked}


def check_warm_up(target, model, run, texts):
    """Warm `target` (CUDA settings forced): it visits exactly its shapes, each with and without a
    mask; traffic afterwards stays inside them; scores are the same before and after."""
    before = run(texts)
    with recorded_passes(model) as warmed:
        report = target.warm_up()
    assert report.passes == len(warmed) and report.seconds > 0
    assert set(warmed) == expected_warm_passes(target.shapes()) and len(warmed) == len(set(warmed))
    assert {r for r, _, _ in warmed} == {1, 2, 4} and {w for _, w, _ in warmed} == set(target.widths)
    with recorded_passes(model) as traffic:
        after = run(texts)
        for seed in range(3):
            run(random_texts(seed, random.Random(seed).randint(1, 7), 20))
    assert traffic and set(traffic) <= set(warmed), sorted(set(traffic) - set(warmed))
    # the traffic did reach several row counts, both mask paths and text cut at max_length
    assert len({r for r, _, _ in traffic}) > 1 and {m for _, _, m in traffic} == {False, True}
    assert max(w for _, w, _ in traffic) == target.max_length
    return before, after


@pytest.mark.slow  # MiniLM over every shape, and loaded again to warm at load: 0.6 s quiet, 7-11 s at load 5-6
def test_encoder_warm_up_visits_every_shape_and_keeps_embeddings(minilm):
    encoder = minilm.encoder
    texts = random_texts(11, 13, 20)
    with cuda_settings(encoder, batch_size=4, max_length=16):
        before, after = check_warm_up(encoder, encoder.model, encoder.encode, texts)
    assert np.array_equal(before, after)
    forced = SentenceEncoder(device="cpu", batch_size=2, max_length=6, warm_shapes=True)
    assert forced.shapes() == [(2, 6), (2, 4), (1, 6), (1, 4)] and forced.warmed.passes == 8


def test_classifier_warm_up_visits_every_shape_and_keeps_scores(tmp_path):
    model_dir = save_tiny_bert(tmp_path / "tiny")
    det = registry.create("hf-classifier", model=str(model_dir), label_map=LABEL_MAP, toxicity_label="rude",
                          warm_shapes=False)
    assert det.max_length == 64  # the tokenizer names no limit: the model's 64 positions are it
    texts = random_texts(12, 13, 20)
    with cuda_settings(det, batch_size=4, max_length=16):
        before, after = check_warm_up(det, det.model, det.score, texts)
    assert before == after


def test_warm_up_at_load_is_cuda_only_unless_asked(tmp_path):
    assert wants_warm_up("auto", "cuda") and wants_warm_up("auto", "cuda:1") and not wants_warm_up("auto", "cpu")
    assert wants_warm_up(True, "cpu") and not wants_warm_up(False, "cuda")
    with pytest.raises(DetectorUnavailable, match="warm_shapes"):
        wants_warm_up("yes", "cpu")
    model_dir = save_tiny_bert(tmp_path / "tiny")
    plain = registry.create("hf-classifier", model=str(model_dir), toxicity_label="LABEL_1", batch_size=2, max_length=8)
    assert plain.warmed.passes == 0  # the CPU: nothing warmed
    with recorded_passes(plain.model) as seen:  # warm-up at load cannot be watched; its count can
        warm = registry.create("hf-classifier", model=str(model_dir), toxicity_label="LABEL_1", batch_size=2,
                               max_length=8, warm_shapes=True)
    assert not seen and warm.warmed.passes == len(expected_warm_passes(warm.shapes())) == 4 * 2
    assert warm.shapes() == [(2, 8), (2, 4), (1, 8), (1, 4)]  # exact row counts on the CPU, largest first
    assert warm.score(["you are a stupid idiot"]) == plain.score(["you are a stupid idiot"])


def test_a_call_copies_its_results_back_once(minilm, tmp_path):
    """Results stay on the device until a call's last sub-batch is queued; on a GPU each copy back
    is a wait, so one per call leaves the card fed while the CPU pads the next sub-batch."""
    texts = random_texts(5, 16, 20)
    encoder = minilm.encoder
    with cuda_settings(encoder, batch_size=2, max_length=16), recorded_passes(encoder.model) as passes, \
            tensor_calls("cpu") as copies:
        encoder.encode(texts)
    assert len(passes) >= 8 and len(copies) == 1
    det = registry.create("hf-classifier", model=str(save_tiny_bert(tmp_path / "tiny")), label_map=LABEL_MAP,
                          toxicity_label="rude", batch_size=2)
    with recorded_passes(det.model) as passes, tensor_calls("cpu") as copies:
        det.score(texts)
    assert len(passes) >= 8 and len(copies) == 1


def test_length_buckets_match_the_plain_search():
    """The buckets (vectorised over start points) are the cheapest split, the first one found as a plain
    loop over start points finds it, on random lengths, row limits and widths."""
    def plain(lengths, max_rows, call_cost=48, widths=None):
        n = len(lengths)
        best, cut = [0.0] + [float("inf")] * n, [0] * (n + 1)
        for end in range(1, n + 1):
            longest = lengths[end - 1] if widths is None else padded_width(lengths[end - 1], widths)
            for start in range(max(0, end - max_rows), end):
                cost = best[start] + call_cost + (end - start) * longest
                if cost < best[end]:
                    best[end], cut[end] = cost, start
        spans, end = [], n
        while end > 0:
            spans.append((cut[end], end))
            end = cut[end]
        return spans[::-1]

    rng = random.Random(4)
    for _ in range(60):
        lengths = sorted(rng.randint(1, 128) for _ in range(rng.randint(1, 300)))
        max_rows = rng.choice([1, 2, 3, 7, 64, 256])
        for widths in (None, pad_widths(128)):
            assert length_buckets(lengths, max_rows, widths=widths) == plain(lengths, max_rows, widths=widths)


def test_the_shape_set():
    assert shapes(64, pad_widths(128), True)[0] == (64, 128) and len(shapes(64, pad_widths(128), True)) == 7 * 20
    assert {r for r, _ in shapes(48, (4, 8), True)} == {1, 2, 4, 8, 16, 32, 48}
    assert len(shapes(5, (4, 8), False)) == 10
