"""hf-classifier: any Hugging Face AutoModelForSequenceClassification, by hub id or local path, CPU or GPU.

Options: model, revision, preset (see hf_presets.py), label_map (raw label -> our label),
toxicity_label (a label, or a list of labels whose probabilities are summed), max_length,
batch_size, device ("auto" | "cpu" | "cuda"), dtype ("auto" -> float16 on CUDA, else float32),
multi_label (sigmoid per label; default: from the model config, else softmax),
warm_shapes ("auto": on CUDA, run each forward-pass shape once at load; true; false),
overlap_tokenize (true: a call split into pieces has its next piece tokenized on a producer thread
while this one's forward passes run, which moves scores by float noise against an unsplit call;
"auto", the default: off, until a GPU run shows it pays; false),
local_files_only (never touch the network; default: HF_HUB_OFFLINE, and the local cache is
always tried first so a cached model loads without network calls).
"""
from __future__ import annotations

from contextlib import closing
from typing import Any, Iterable, Sequence

from modlens.detectors.base import FORWARDS_PER_CALL, Detector, DetectorUnavailable, LabelScores, check_texts
from modlens.detectors.hf_common import (LabelPlan, default_toxicity_label, load_pretrained, model_version,
                                         pick_dtype, probability_tensor, raw_labels)
from modlens.detectors.hf_presets import PRESETS, preset as preset_options
from modlens.detectors.pieces import SplitCalls
from modlens.paths import portable_model
from modlens.detectors.minilm import (WarmUp, filler_token, pad_widths, pick_device, shapes, sdpa_attention,
                                      sub_batches, takes_prepared_mask, wants_warm_up, warm_up)


class HFClassifier(SplitCalls, Detector):
    name = "hf-classifier"
    releases_gil = True  # the model's forward passes (torch)

    # model and tokenizer as transformers' Auto classes load them (typed as Any, as in hf_image: some
    # transformers releases annotate from_pretrained and some do not)
    def __init__(self, model: Any, tokenizer: Any, *, source: str, source_version: str, device: str, dtype: str,
                 label_map: dict[str, str], toxicity_label: str | list[str], max_length: int,
                 batch_size: int, multi_label: bool, warm_shapes: bool | str = "auto",
                 overlap_tokenize: bool | str = "auto") -> None:
        self.model, self.tokenizer = model, tokenizer
        self.source, self.device, self.dtype = source, device, dtype
        self.max_length, self.batch_size, self.multi_label = int(max_length), int(batch_size), bool(multi_label)
        warm = wants_warm_up(warm_shapes, device)
        # forward passes as the embedded encoder runs them: length buckets padded to fixed widths, row
        # counts padded to powers of two on CUDA (a bounded set of shapes, each run once at load there)
        self.widths, self.pad_rows = pad_widths(self.max_length), device.startswith("cuda")
        # and with `overlap_tokenize`, calls split into pieces, the next tokenized on a producer thread
        # meanwhile (`pieces.SplitCalls`)
        self.split_settings(overlap_tokenize, device, "tokenize-hf")
        self.pad_id = pad_token(tokenizer, source)
        self.max_batch = self.batch_size * FORWARDS_PER_CALL  # texts per call; forward passes stay batch_size rows
        self.label_map = dict(label_map)
        self.raw_labels = raw_labels(model.config)
        self.plan = LabelPlan.build(model.config, self.label_map, toxicity_label, source)
        self.labels, self.toxicity_label = self.plan.labels, self.plan.toxicity_label
        self.version = model_version(portable_model(source), source_version, self.config())
        self.token_id = filler_token(tokenizer, self.pad_id)
        # masks in the form SDPA takes where the model reads them alike (no wait for the card per sub-batch)
        self.prepared_mask = takes_prepared_mask(model, device, self.token_id, self.pad_id, lambda out: out.logits)
        self.warmed = self.warm_up() if warm else WarmUp()

    def shapes(self) -> list[tuple[int, int]]:
        """Every (rows, width) of the forward passes this classifier runs at its settings."""
        return shapes(self.batch_size, self.widths, self.pad_rows)

    def warm_up(self) -> WarmUp:
        """One pass per shape of `shapes()` through `score`'s path (at load on CUDA): a first pass over
        unseen texts then runs at the warm rate; scores are unchanged."""
        return warm_up(self._probabilities, self.shapes(), self.token_id)

    def config(self) -> dict[str, Any]:
        # device is left out on purpose: where a model runs must not change its version
        return {"model": portable_model(self.source), "label_map": self.label_map, **self.plan.config(), "max_length": self.max_length,
                "multi_label": self.multi_label, "dtype": self.dtype}

    def score(self, texts: Sequence[str]) -> list[LabelScores | None]:
        texts = check_texts(texts)
        if not texts:
            return []
        # tokenized unpadded, whole or in pieces; `sub_batches` sorts a piece by token count and pads each bucket
        def tokenize(part: list[str]) -> list[list[int]]:
            ids: list[list[int]] = self.tokenizer(part, truncation=True, max_length=self.max_length,
                                                  return_attention_mask=False, return_token_type_ids=False)["input_ids"]
            return ids

        # closed here, even on an error: the producer is done with the tokenizer before the caller goes on
        with closing(self.tokenized_pieces(texts, tokenize)) as pieces:
            return [self.plan.scores(row) for row in self._piece_probabilities(pieces, len(texts))]

    def _probabilities(self, ids: Sequence[Sequence[int]]) -> list[list[float]]:
        """Label probabilities of tokenized texts, in their order, as one piece."""
        return self._piece_probabilities([(0, ids)], len(ids))

    def _piece_probabilities(self, pieces: Iterable[tuple[int, Sequence[Sequence[int]]]], n: int) -> list[list[float]]:
        """Label probabilities of `n` tokenized texts, in their order, from (start, token lists) pieces, each
        in sub-batches of its own. They stay on the device until the last sub-batch is queued: one copy
        back, the call's one wait for the device."""
        import torch

        parts: list[Any] = []
        order: list[int] = []
        with torch.inference_mode():
            for start, ids in pieces:
                for sub in sub_batches(ids, max_rows=self.batch_size, widths=self.widths, pad_rows=self.pad_rows,
                                       pad_id=self.pad_id, device=self.device,
                                       prepared=self.prepared_mask and sdpa_attention(self.model)):
                    logits = self.model(input_ids=sub.input_ids, attention_mask=sub.mask).logits
                    parts.append(probability_tensor(logits[:len(sub.idx)], self.multi_label))
                    order.extend(start + i for i in sub.idx)
            rows: list[list[float]] = torch.cat(parts).cpu().tolist() if parts else []
        out: list[list[float]] = [[] for _ in range(n)]
        for i, row in zip(order, rows):
            out[i] = row
        return out

    def close(self) -> None:
        self.producer.close()
        self.model = None


def pad_token(tokenizer: Any, source: str) -> int:
    """The id rows are padded with. Texts go to the model without token type ids (the model's default,
    all zeros, is what a tokenizer gives one text), so a tokenizer that gives one text other types is
    refused rather than scored differently."""
    if tokenizer.pad_token_id is None:
        raise DetectorUnavailable("error", f"{source}'s tokenizer has no padding token, so texts cannot be batched",
                                  "use a model whose tokenizer sets pad_token")
    types = tokenizer(["a b"], return_token_type_ids=True).get("token_type_ids") or [[]]
    if any(types[0]):
        raise DetectorUnavailable("error", f"{source}'s tokenizer gives one text token types {types[0]}; "
                                  "hf-classifier sends none", "use a BERT- or RoBERTa-style classifier")
    return int(tokenizer.pad_token_id)


def _load(model: str, revision: str | None, local_files_only: bool | None) -> tuple[Any, Any, str]:
    """(model, tokenizer, version). Cache first, then the hub unless offline; a miss is a status."""
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    def load(name: str, **kw: Any) -> tuple[Any, Any]:
        return AutoModelForSequenceClassification.from_pretrained(name, **kw), AutoTokenizer.from_pretrained(name, **kw)

    return load_pretrained(model, revision, local_files_only, load)


def create(*, model: str | None = None, preset: str | None = None, revision: str | None = None,
           label_map: dict[str, str] | None = None, toxicity_label: str | list[str] | None = None,
           max_length: int = 256, batch_size: int = 32, device: str = "auto", dtype: str = "auto",
           multi_label: bool | None = None, local_files_only: bool | None = None,
           threshold: float | None = None, warm_shapes: bool | str = "auto",
           overlap_tokenize: bool | str = "auto") -> HFClassifier:
    try:
        import torch
        import transformers  # noqa: F401
    except ModuleNotFoundError as err:
        raise DetectorUnavailable("missing_dependency", f"hf-classifier needs {err.name}",
                                  f"pip install {err.name}") from err
    base: dict[str, Any] = {}
    if preset:
        try:
            base = preset_options(preset)
        except KeyError as err:
            raise DetectorUnavailable("error", str(err), f"use one of: {', '.join(PRESETS)}") from err
    model = model or base.get("model")
    if not model:
        raise DetectorUnavailable.needs_options("hf-classifier", ["model (or preset)"],
                                                f'set options.preset or options.model, e.g. options = '
                                                f'{{preset = "{next(iter(PRESETS))}"}}')
    if model in PRESETS and not preset:  # a bare hub id that has a preset gets its labels too
        base = preset_options(model)
    label_map = label_map if label_map is not None else base.get("label_map", {})
    toxicity_label = toxicity_label if toxicity_label is not None else base.get("toxicity_label")
    dev = pick_device(device)
    dtype_name = pick_dtype(dev, dtype)
    m, tok, source_version = _load(model, revision, local_files_only)
    if multi_label is None:
        multi_label = base.get("multi_label", m.config.problem_type == "multi_label_classification")
    if toxicity_label is None:  # no preset: a binary model's second label is the usual convention
        toxicity_label = default_toxicity_label(m.config, label_map, model)
    limit = getattr(tok, "model_max_length", None)
    if isinstance(limit, int) and 0 < limit < 100_000:  # past it, position embeddings run out
        max_length = min(int(max_length), limit)
    positions = getattr(m.config, "max_position_embeddings", None)
    if isinstance(positions, int) and 0 < positions < max_length:  # a tokenizer that does not say its limit
        max_length = positions
    m = m.to(device=dev, dtype=getattr(torch, dtype_name)).eval()
    det = HFClassifier(m, tok, source=model, source_version=source_version, device=dev, dtype=dtype_name,
                       label_map=label_map, toxicity_label=toxicity_label, max_length=max_length,
                       batch_size=batch_size, multi_label=multi_label, warm_shapes=warm_shapes,
                       overlap_tokenize=overlap_tokenize)
    if threshold is not None:
        det.threshold = float(threshold)
    return det
