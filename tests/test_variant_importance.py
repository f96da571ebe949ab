"""Word importance from one forward pass ("pooled"), recorded in each variant's params,
and the bounded set of padded widths the embedded model sees."""
from __future__ import annotations

import asyncio
import random

import numpy as np
import pytest

from modlens.chunks.steps import generator_identity
from modlens.config import PerturbationConfig, StudyConfig
from modlens.detectors import registry
from modlens.detectors.base import Detector
from modlens.detectors.minilm import length_buckets, pad_widths, padded_rows, padded_width
from modlens.engine import Engine
from modlens.perturb.importance import detector_score_fn, word_importance

PLANTED = ["thanks for the recipe idiot it worked well",
           "the meeting starts at nine so bring your notes retard",
           "we met at the station and you bitch took the train"]


@pytest.fixture(scope="module")
def detector():
    det = registry.create("minilm-toxicity")
    yield det
    det.close()


def study(method: str, threshold: float = 0.0) -> StudyConfig:
    return StudyConfig(study_id="t", detectors=[{"name": "minilm-toxicity"}],
                       perturbation={"importance_method": method, "importance_threshold": threshold,
                                     "strategies": ["mixed_case", "repeat_char"], "budget": 2})


def test_pooled_importance_ranks_a_planted_insult_first(detector):
    for text, got in zip(PLANTED, detector.word_importance_pooled(PLANTED)):
        words = text.split()
        assert len(got) == len(words)
        assert words[max(range(len(words)), key=got.__getitem__)] in {"idiot", "retard", "bitch"}, (text, got)


def test_pooled_importance_is_in_leave_one_out_units(detector):
    """Both are toxicity drops: the planted word's pooled drop has the sign and rough size of
    re-scoring the text without it."""
    text = PLANTED[0]
    loo = word_importance(text, detector_score_fn(detector))
    pooled = detector.word_importance_pooled([text])[0]
    i = text.split().index("idiot")
    assert loo[i] > 0.1 and pooled[i] > 0.1
    assert abs(pooled[i] - loo[i]) < 0.3


def test_variants_record_the_importance_method(detector):
    async def run(method: str):
        engine = Engine(study(method), {"minilm-toxicity": detector})
        try:
            return engine.importance_method(), await engine.variants(PLANTED[0])
        finally:
            await engine.close(detectors=False)

    method, variants = asyncio.run(run("pooled"))
    assert method == "pooled" and variants
    assert all(v.params["importance_method"] == "pooled" and v.params["ranking"] == "importance" for v in variants)
    method, variants = asyncio.run(run("leave_one_out"))
    assert method == "leave_one_out" and variants
    assert all("importance_method" not in v.params for v in variants)  # the default: params as before


class _Plain(Detector):
    """A local detector without `word_importance_pooled`."""
    name, version, labels, toxicity_label = "plain", "1", ("toxic",), "toxic"

    def score(self, texts):
        return [{"toxic": 0.9 if "idiot" in t else 0.1} for t in texts]


def test_pooled_falls_back_to_leave_one_out_where_the_target_cannot():
    async def run():
        engine = Engine(study("pooled"), {"plain": _Plain()})
        try:
            return engine.importance_method(), await engine.variants(PLANTED[0])
        finally:
            await engine.close()

    method, variants = asyncio.run(run())
    assert method == "leave_one_out" and variants
    assert all("importance_method" not in v.params for v in variants)


def test_the_method_is_part_of_the_generator_version():
    assert generator_identity(PerturbationConfig()) != generator_identity(PerturbationConfig(importance_method="pooled"))
    with pytest.raises(ValueError):
        PerturbationConfig(importance_method="gradient")


def test_pad_widths_are_a_small_fixed_set():
    assert pad_widths(128) == (*range(4, 65, 4), 80, 96, 112, 128)
    assert pad_widths(100)[-1] == 100 and all(w < 100 for w in pad_widths(100)[:-1])
    assert pad_widths(10) == (4, 8, 10)
    assert [padded_width(n, pad_widths(128)) for n in (1, 8, 9, 13, 65, 97, 128)] == [4, 8, 12, 16, 80, 112, 128]
    with pytest.raises(ValueError):
        padded_width(129, pad_widths(128))
    # the split still covers every text once, in order, with at most max_rows per sub-batch
    lengths = sorted(random.Random(1).randint(1, 128) for _ in range(300))
    spans = length_buckets(lengths, 64, widths=pad_widths(128))
    assert spans[0][0] == 0 and spans[-1][1] == 300
    assert all(a < b <= a + 64 for a, b in spans) and all(spans[k][1] == spans[k + 1][0] for k in range(len(spans) - 1))


def test_the_model_sees_only_the_fixed_widths(detector):
    """Over random batches of random lengths, from one token to past `max_length`, every forward
    pass is padded to one of `pad_widths`: the set of widths cannot grow with the traffic. Six
    seeded batches reach eight widths (steps of 4 and of 16, and 128 for the truncated texts);
    padding each sub-batch to its own longest text instead puts 12 widths outside the set here."""
    model = detector.encoder.model
    seen: set[tuple[int, int]] = set()
    hook = model.register_forward_pre_hook(
        lambda _m, args, kwargs: seen.add(tuple((kwargs.get("input_ids") if kwargs.get("input_ids") is not None
                                                 else args[0]).shape)), with_kwargs=True)
    rng = random.Random(7)
    vocab = "you are such a total idiot and the weather is nice today my friend".split()
    try:
        for _ in range(6):
            texts = [" ".join(rng.choice(vocab) for _ in range(rng.randint(1, 150))) for _ in range(rng.randint(1, 12))]
            detector.score(texts)
            detector.word_importance_pooled(texts[:2])
    finally:
        hook.remove()
    widths = {w for _, w in seen}
    assert widths <= set(pad_widths(detector.encoder.max_length)), sorted(widths)
    assert len(widths) > 2  # the batches did reach several buckets


def test_padded_row_counts_keep_scores_and_bound_the_shapes(detector):
    """With row padding (the CUDA default; forced here on the CPU) every forward pass has a power-of-two
    row count (or the batch size), the filler rows are dropped, and scores, embeddings and pooled
    importance equal the unpadded ones."""
    assert [padded_rows(n, 64) for n in (1, 2, 3, 5, 17, 63, 64, 65)] == [1, 2, 4, 8, 32, 64, 64, 64]
    encoder = detector.encoder
    rng = random.Random(3)
    vocab = "you are such a total idiot and the weather is nice today my friend".split()
    texts = [" ".join(rng.choice(vocab) for _ in range(rng.randint(1, 40))) for _ in range(75)]
    assert not encoder.pad_rows  # CPU: exact row counts
    plain_scores, plain_emb = detector.score(texts), encoder.encode(texts)
    plain_importance = detector.word_importance_pooled(texts[:5])
    rows: list[int] = []
    hook = encoder.model.register_forward_pre_hook(
        lambda _m, args, kwargs: rows.append(int((kwargs.get("input_ids") if kwargs.get("input_ids") is not None
                                                  else args[0]).shape[0])), with_kwargs=True)
    encoder.pad_rows = True
    try:
        padded_scores, padded_emb = detector.score(texts), encoder.encode(texts)
        padded_importance = detector.word_importance_pooled(texts[:5])
    finally:
        encoder.pad_rows = False
        hook.remove()
    allowed = {1 << k for k in range(7)} | {encoder.batch_size}
    assert rows and set(rows) <= allowed, sorted(set(rows))
    assert any(r > 1 and r & (r - 1) == 0 for r in rows)
    assert np.allclose(plain_emb, padded_emb, atol=1e-5)
    for a, b in zip(plain_scores, padded_scores):
        assert a == pytest.approx(b, abs=1e-5)
    for a, b in zip(plain_importance, padded_importance):
        assert a == pytest.approx(b, abs=1e-4)


def _forwards(detector):
    """Counts the encoder's forward passes while in use."""
    calls = []
    hook = detector.encoder.model.register_forward_pre_hook(lambda *_: calls.append(1))
    return calls, hook


def test_scoring_keeps_the_pooled_importance_without_changing_a_score(detector):
    texts = [*PLANTED, "a perfectly ordinary remark about the weather"]
    before = detector.score(texts)
    fresh = detector.word_importance_pooled(texts)
    detector.keep_word_importance(16)
    try:
        assert detector.score(texts) == before  # the same forward passes, the same embeddings: equal, not close
        calls, hook = _forwards(detector)
        try:
            kept = detector.word_importance_pooled(texts)
        finally:
            hook.remove()
        assert calls == [] and detector.importance_reused >= len(texts)
        for a, b in zip(kept, fresh):
            assert a == pytest.approx(b, abs=1e-6)
        detector.keep_word_importance(2)  # bounded: the least recently scored go first
        detector.score(texts)
        calls, hook = _forwards(detector)
        try:
            again = detector.word_importance_pooled(texts[:2])
        finally:
            hook.remove()
        assert calls and again[0] == pytest.approx(fresh[0], abs=1e-6)
    finally:
        detector.keep_word_importance(0)


def test_a_live_comment_s_variants_take_no_forward_pass_for_its_importance(detector):
    """The engine asks the target to keep importance when the study's method is pooled: after a
    page is scored, its comments' importance costs no model call; leave-one-out studies are as before."""
    async def run(method: str) -> tuple[int, int]:
        engine = Engine(study(method, threshold=0.1), {"minilm-toxicity": detector})
        try:
            await engine.score(PLANTED)
            calls, hook = _forwards(detector)
            try:
                await engine.word_importance_many(PLANTED)
            finally:
                hook.remove()
            return len(calls), detector._importance_size
        finally:
            await engine.close(detectors=False)

    assert asyncio.run(run("pooled")) == (0, 8192)
    forwards, kept = asyncio.run(run("leave_one_out"))
    assert forwards > 0 and kept == 0
    assert detector._importance is None  # handed back as it came
