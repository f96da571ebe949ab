"""What a benchmark ran on, read from the detector itself: device, dtype, rows per forward pass
(`batch`), texts per call (`call`), and the model's forward FLOPs per token from its config.

The device lives where the model does: `minilm-toxicity` keeps it on its encoder (`det.encoder`),
`hf-classifier` on the detector; reading `det.device` alone printed `cpu` for a MiniLM that ran
on CUDA (as `bench_detectors` did before it read the device here)."""
from __future__ import annotations

from typing import Any


def holder(det: Any) -> Any:
    """The object that holds the model: the encoder where there is one, else the detector."""
    return getattr(det, "encoder", None) or det


def model_of(det: Any) -> Any:
    return getattr(holder(det), "model", None)


def runs_on(det: Any) -> dict[str, Any]:
    """{"device", "dtype", "batch", "call"} of a loaded detector ("cpu"/"-" where it has no model)."""
    h, model = holder(det), model_of(det)
    device, dtype = getattr(h, "device", None), getattr(h, "dtype", None)
    params = next(iter(model.parameters()), None) if model is not None and hasattr(model, "parameters") else None
    if params is not None:  # the weights say where they are, whatever the attribute claims
        device, dtype = str(params.device), str(params.dtype).removeprefix("torch.")
    return {"device": str(device or "cpu"), "dtype": str(dtype or "-"),
            "batch": getattr(h, "batch_size", None) or getattr(det, "batch_size", None) or "-",
            "call": det.max_batch}


def flops_per_token(det: Any, tokens_per_text: float) -> float | None:
    """Forward FLOPs per token of a transformer encoder, from its config: per layer the Q, K, V and
    output projections (4 d^2 multiply-adds), the feed-forward (2 d f) and attention over the
    sequence (2 d s for QK^T and AV), times 2 FLOPs per multiply-add. None without a config."""
    config = getattr(model_of(det), "config", None)
    if config is None or not hasattr(config, "hidden_size"):
        return None
    d, f, layers = config.hidden_size, config.intermediate_size, config.num_hidden_layers
    return 2.0 * layers * (4 * d * d + 2 * d * f + 2 * d * tokens_per_text)


def count_tokens(det: Any, texts: list[str]) -> int | None:
    """Tokens the model runs over (padding excluded), None for a detector without a tokenizer."""
    h = holder(det)
    tokenizer = getattr(h, "tokenizer", None)
    if tokenizer is None:
        return None
    max_length = getattr(h, "max_length", None) or getattr(det, "max_length", 512)
    return sum(len(ids) for ids in tokenizer(texts, truncation=True, max_length=max_length)["input_ids"])
