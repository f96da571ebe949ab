"""A split call's pieces tokenized on one producer thread while the caller runs the previous piece's
forward passes (`detectors.pieces`; on by default where calls are split, CUDA). Checked on the CPU with
CUDA's split forced, as tests/test_encoder_shapes.py forces CUDA's row padding: the thread changes no
score (the same forward passes, to the bit), a tokenizer error reaches the caller as it was raised,
a call never ends while its producer still tokenizes, close() stops the thread, and calls of at most
one piece (and every call on the CPU by default) take the path they always took."""
from __future__ import annotations

import threading
import time
from contextlib import closing, contextmanager

import numpy as np
import pytest

from modlens.detectors import registry
from modlens.detectors.base import DetectorUnavailable
from modlens.detectors.minilm import SentenceEncoder
from modlens.detectors.pieces import PieceTokenizer, piece_size, wants_overlap
from modlens.scale.sources import load_dataset
from test_detectors_hf import LABEL_MAP, save_tiny_bert
from test_encoder_shapes import recorded_passes


@pytest.fixture(scope="module")
def davidson() -> list[str]:
    return [it.text for it in load_dataset("davidson", None, "local").items[:300]]


def producers(name: str) -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith(name)]


@contextmanager
def split(target, *, overlap: bool, **settings):
    """`target` (encoder or classifier) with CUDA's split forced on the CPU, the producer on or off, and
    `settings` (batch_size, max_length: small and quick); all restored after, the producer stopped."""
    saved = {k: getattr(target, k) for k in ("split_calls", "overlap", *settings)}
    target.split_calls, target.overlap = True, overlap
    for k, v in settings.items():
        setattr(target, k, v)
    if "max_length" in settings:
        from modlens.detectors.minilm import pad_widths
        saved["widths"], target.widths = target.widths, pad_widths(settings["max_length"])
    try:
        yield target
    finally:
        for k, v in saved.items():
            setattr(target, k, v)
        target.producer.close()


# --- the producer alone ---------------------------------------------------------------------------

def test_the_next_piece_is_tokenized_on_the_producer_while_the_caller_holds_this_one():
    producer = PieceTokenizer("tokenize-test-a")
    started = {k: threading.Event() for k in range(4)}
    where: list[str] = []

    def tokenize(part):
        where.append(threading.current_thread().name)
        started[int(part[0])].set()
        return [t + "!" for t in part]

    texts = [str(i // 3) for i in range(11)]  # pieces of 3: starts 0, 3, 6, 9
    got = []
    with closing(producer.pieces(texts, tokenize, 3, True)) as pieces:
        for start, piece in pieces:
            k = start // 3
            if k < 3:  # while the caller holds piece k, piece k + 1 is under way
                assert started[k + 1].wait(5)
            got.append((start, piece))
    assert [s for s, _ in got] == [0, 3, 6, 9] and sum((p for _, p in got), []) == [t + "!" for t in texts]
    assert all(name.startswith("tokenize-test-a") for name in where) and len(where) == 4
    assert producer.running and producers("tokenize-test-a")
    producer.close()
    assert not producer.running and not producers("tokenize-test-a")


def test_calls_of_one_piece_and_unsplit_calls_are_tokenized_whole_on_the_callers_thread():
    producer = PieceTokenizer("tokenize-test-b")
    calls: list[tuple[list[str], str]] = []

    def tokenize(part):
        calls.append((list(part), threading.current_thread().name))
        return part

    for size in (0, 5):  # not split; at most one piece
        assert list(producer.pieces(["a", "b", "c", "d", "e"], tokenize, size, True)) == [(0, ["a", "b", "c", "d", "e"])]
    assert [c for c, _ in calls] == [["a", "b", "c", "d", "e"]] * 2
    assert {name for _, name in calls} == {threading.current_thread().name} and not producer.running
    calls.clear()
    assert [s for s, _ in producer.pieces(list("abcde"), tokenize, 2, False)] == [0, 2, 4]  # split, no thread
    assert {name for _, name in calls} == {threading.current_thread().name} and not producer.running


def test_a_tokenizer_error_in_a_later_piece_reaches_the_caller_as_raised_without_a_hang():
    producer = PieceTokenizer("tokenize-test-c")

    class Refused(ValueError):
        pass

    def tokenize(part):
        if "bad" in part:
            raise Refused("no")
        return part

    texts = ["a", "b", "c", "d", "bad", "f"]
    seen: list[int] = []
    box: dict[str, BaseException] = {}

    def call():
        try:
            with closing(producer.pieces(texts, tokenize, 2, True)) as pieces:
                for start, _ in pieces:
                    seen.append(start)
        except BaseException as err:  # noqa: BLE001 - the test reads what was raised
            box["err"] = err

    worker = threading.Thread(target=call)
    worker.start()
    worker.join(10)
    assert not worker.is_alive(), "the call hung"
    assert type(box.get("err")) is Refused and seen == [0, 2]
    # the producer is free again: the next call on it works
    assert [s for s, _ in producer.pieces(["x", "y", "z"], tokenize, 2, True)] == [0, 2]
    producer.close()


def test_a_call_stopped_early_ends_only_once_its_producer_is_done_with_the_tokenizer():
    producer = PieceTokenizer("tokenize-test-d")
    busy = threading.Lock()
    overlapping: list[bool] = []
    second = threading.Event()

    def tokenize(part):
        overlapping.append(not busy.acquire(blocking=False))
        try:
            if part[0] == "c":
                second.set()
                time.sleep(0.2)
            return part
        finally:
            busy.release()

    with pytest.raises(RuntimeError, match="forward failed"):
        with closing(producer.pieces(list("abcdefgh"), tokenize, 2, True)) as pieces:
            for _piece in pieces:
                assert second.wait(5)  # piece 1 is being tokenized now
                raise RuntimeError("forward failed")
    assert busy.acquire(blocking=False), "the producer was still tokenizing after the call ended"
    busy.release()
    assert overlapping == [False, False]  # pieces 0 and 1 only, never two at once
    producer.close()


def test_overlap_is_off_by_default_on_every_device_until_measured_on_one():
    # calls stay whole (today's scores) unless asked: the gain on CUDA is not measured yet
    assert not wants_overlap("auto", "cuda") and not wants_overlap("auto", "cuda:1") and not wants_overlap("auto", "cpu")
    assert wants_overlap(True, "cpu") and wants_overlap(True, "cuda") and not wants_overlap(False, "cuda")
    assert piece_size(True, 64) == 128 and piece_size(False, 64) == 0
    with pytest.raises(DetectorUnavailable, match="overlap_tokenize"):
        wants_overlap("yes", "cpu")


# --- the real encoder and classifier --------------------------------------------------------------

def test_minilm_embeddings_are_the_same_to_the_bit_with_the_producer_on_or_off(minilm, davidson):
    """96 real Davidson tweets (cut at 16 tokens: quick) through the session's MiniLM, in pieces of 32: the
    producer thread changes no bit; against the unsplit call (the CPU's default) only float noise
    from other texts sharing a pass."""
    encoder, texts = minilm.encoder, davidson[:96]
    with split(encoder, overlap=False, batch_size=16, max_length=16):
        inline = encoder.encode(texts)
        assert not encoder.producer.running
    with split(encoder, overlap=True, batch_size=16, max_length=16):
        with recorded_passes(encoder.model) as passes:
            threaded = encoder.encode(texts)
        assert encoder.producer.running
    assert np.array_equal(threaded, inline)
    assert sum(rows for rows, _, _ in passes) == len(texts)  # every text once, no filler rows on the CPU
    with split(encoder, overlap=False, batch_size=16, max_length=16):
        encoder.split_calls = False
        whole = encoder.encode(texts)
    np.testing.assert_allclose(whole, inline, atol=1e-6)


def test_word_logits_over_pieces_match_encode_and_the_producer_changes_no_bit(minilm, davidson):
    encoder, texts = minilm.encoder, davidson[:48]
    head = minilm.head
    out = {}
    for overlap in (False, True):
        with split(encoder, overlap=overlap, batch_size=8, max_length=32):
            out[overlap] = encoder.encode_with_word_logits(texts, head.weights, head.bias)
            plain = encoder.encode(texts)
        assert np.array_equal(out[overlap][0], plain)  # the same passes as encode's
    assert np.array_equal(out[True][0], out[False][0]) and out[True][1] == out[False][1]
    assert np.array_equal(out[True][2], out[False][2])


class RecordingTokenizer:
    """A tokenizer that notes how many texts each call tokenizes."""

    def __init__(self, tokenizer):
        self.tokenizer, self.calls = tokenizer, []

    def __call__(self, texts, **kwargs):
        self.calls.append(len(texts))
        return self.tokenizer(texts, **kwargs)

    def __getattr__(self, name):
        return getattr(self.tokenizer, name)


def test_the_default_tokenizes_a_call_whole_and_starts_no_thread(minilm, davidson):
    encoder = minilm.encoder
    assert not encoder.split_calls and not encoder.overlap
    saved = encoder.tokenizer, encoder.batch_size
    encoder.tokenizer, encoder.batch_size = RecordingTokenizer(saved[0]), 8
    try:
        minilm.score(davidson[:24])  # more than two passes of 8: overlap_tokenize would split it
        assert encoder.tokenizer.calls == [24] and not encoder.producer.running
    finally:
        encoder.tokenizer, encoder.batch_size = saved


def test_classifier_scores_are_the_same_to_the_bit_with_the_producer_on_or_off(tmp_path, davidson):
    det = registry.create("hf-classifier", model=str(save_tiny_bert(tmp_path / "tiny")), label_map=LABEL_MAP,
                          toxicity_label="rude", batch_size=8)
    whole = det.score(davidson)
    with split(det, overlap=False):
        inline = det.score(davidson)
    with split(det, overlap=True):
        threaded = det.score(davidson)
        assert det.producer.running and producers("tokenize-hf")
    assert threaded == inline
    assert all(abs(a[k] - b[k]) < 1e-6 for a, b in zip(whole, inline) for k in a)
    # a bad text in a later piece: the type the unsplit call raises, and the classifier goes on working
    bad = davidson[:40] + [None] + davidson[:5]
    with pytest.raises(Exception) as unsplit:
        _score_unchecked(det, bad)
    with split(det, overlap=True):
        with pytest.raises(unsplit.type):
            _score_unchecked(det, bad)
        assert det.score(davidson[:20]) == inline[:20]
    det.close()
    assert not producers("tokenize-hf") and det.model is None


def _score_unchecked(det, texts):
    """`score` past `check_texts` (which refuses a non-text before any tokenizer sees it)."""
    import modlens.detectors.huggingface as hf

    checked = hf.check_texts
    hf.check_texts = list
    try:
        return det.score(texts)
    finally:
        hf.check_texts = checked


def test_encoder_close_stops_the_producer(davidson):
    encoder = SentenceEncoder(device="cpu", batch_size=4, max_length=16, overlap_tokenize=True)
    assert encoder.split_calls and encoder.overlap  # the option splits calls and starts the producer
    encoder.encode(davidson[:20])
    assert encoder.producer.running and producers("tokenize-minilm")
    encoder.close()
    assert not encoder.producer.running and encoder.model is None
    assert not producers("tokenize-minilm")
