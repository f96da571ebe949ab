"""A model call's texts tokenized in pieces, the next piece on one producer thread while the caller
runs this piece's forward passes (the embedded MiniLM encoder and hf-classifier).

On a GPU the forward passes of a call are queued without waiting for the card, but a call starts
only once its texts are tokenized: the card idles meanwhile. A split call's pieces are each bucketed
by length on their own (`minilm.sub_batches`), so which texts share a forward pass depends on the
split, never on whether a thread tokenizes: with or without the producer a split call runs the same
forward passes in the same order, and its scores are the same to the bit.
"""
from __future__ import annotations

from collections.abc import Callable, Generator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor, wait
from typing import TypeVar

from modlens.detectors.base import auto_choice

T = TypeVar("T")

# Forward passes per piece. Two keep length bucketing a choice of widths inside each piece (one pass a
# piece would pad every text of it to its longest), and at a detector's own call size (4 passes,
# `base.FORWARDS_PER_CALL`) still make two pieces, so half of each call's tokenizing runs behind the
# card's work. Calls of at most one piece are not split: there is nothing to overlap.
PIECE_PASSES = 2


def wants_overlap(overlap: bool | str, device: str) -> bool:
    """`overlap_tokenize` ("auto", true, false): whether calls are split into pieces, the next tokenized
    on the producer thread. "auto" is off on every device for now: on the CPU the forward passes are
    the call's time (tokenizing 4,096 Davidson tweets took ~110 ms against ~13 s of MiniLM there) and
    pieces pad more (5-7% slower, bench/bench_tokenize_overlap.py); on CUDA the gain is not measured
    yet (`bench/gpu_check.py`'s overlap row compares the two), and pieces move scores by float noise
    against an unsplit call (which texts share a forward pass changes), so the unsplit call, today's
    scores, stays the default until a device run shows the overlap pays. `device` is where that
    measured default will be decided."""
    return auto_choice("overlap_tokenize", overlap) or False


def piece_size(split: bool, batch_size: int) -> int:
    """Texts per piece (0: calls are not split), from the detector's current `batch_size`."""
    return PIECE_PASSES * int(batch_size) if split else 0


class PieceTokenizer:
    """One producer thread, started on the first split call and stopped by `close()`. The tokenizer is
    only ever used by one thread at a time (a fast tokenizer used from two at once fails): the
    producer tokenizes every piece of a split call, the caller none, and a call does not end, even on an
    error, while its producer's piece is still being tokenized."""

    def __init__(self, name: str) -> None:
        self.name = name
        self._pool: ThreadPoolExecutor | None = None

    def pieces(self, texts: Sequence[str], tokenize: Callable[[list[str]], T], size: int,
               overlap: bool) -> Generator[tuple[int, T], None, None]:
        """(start, `tokenize(texts[start:start + size])`) for each piece in order; one piece, the whole
        call, when `size` is 0 or the call has at most `size` texts. With `overlap`, piece i + 1 is
        tokenized on the producer thread while the caller works on piece i; a tokenizer error is raised
        to the caller as it was raised. Close the iterator when done (`contextlib.closing`): an
        abandoned one waits for its producer's piece there."""
        texts = list(texts)
        if not size or len(texts) <= size:
            yield 0, tokenize(texts)
            return
        starts = range(0, len(texts), size)
        if not overlap:
            for start in starts:
                yield start, tokenize(texts[start:start + size])
            return
        pool = self._producer()
        pending: Future[T] | None = pool.submit(tokenize, texts[:size])
        try:
            for k, start in enumerate(starts):
                assert pending is not None
                piece = pending.result()
                pending = None
                if k + 1 < len(starts):
                    following = starts[k + 1]
                    pending = pool.submit(tokenize, texts[following:following + size])
                yield start, piece
        finally:
            if pending is not None and not pending.cancel():
                wait([pending])  # the caller may tokenize again once this returns: the producer must be done

    def _producer(self) -> ThreadPoolExecutor:
        if self._pool is None:
            self._pool = ThreadPoolExecutor(1, thread_name_prefix=self.name)
        return self._pool

    @property
    def running(self) -> bool:
        """Whether the producer thread has been started and not closed."""
        return self._pool is not None

    def close(self) -> None:
        """Stop the producer thread (a later split call starts a new one)."""
        pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)


class SplitCalls:
    """The piece settings of a model that tokenizes in pieces (the embedded MiniLM encoder and
    hf-classifier), set once by `split_settings`: `overlap` (the `overlap_tokenize` option, decided by
    `wants_overlap`), `split_calls` (calls run in pieces; without `overlap`, on the caller's thread: for
    tests and benches only) and `producer`, the `PieceTokenizer` whose thread `close()` stops."""

    batch_size: int
    overlap: bool
    split_calls: bool
    producer: PieceTokenizer

    def split_settings(self, overlap_tokenize: bool | str, device: str, thread_name: str) -> None:
        self.overlap = wants_overlap(overlap_tokenize, device)
        self.split_calls = self.overlap
        self.producer = PieceTokenizer(thread_name)

    def tokenized_pieces(self, texts: Sequence[str],
                         tokenize: Callable[[list[str]], T]) -> Generator[tuple[int, T], None, None]:
        """`PieceTokenizer.pieces` at these settings, pieces of `piece_size` at the current `batch_size`;
        close it when done (`contextlib.closing`)."""
        return self.producer.pieces(texts, tokenize, piece_size(self.split_calls, self.batch_size), self.overlap)
