"""Presets for `hf-classifier`: hub models the papers modlens follows and peer tools use.

Label names and activations follow each model card / config as published; `label_map` covers
both the named labels and the generic LABEL_i names older revisions ship with. A preset only
fills defaults: any option given in the study config wins. Pin `revision` for a study.
"""
from __future__ import annotations

from typing import Any

PRESETS: dict[str, dict[str, Any]] = {
    # TweetEval offensive (OffensEval 2019): 0 not offensive, 1 offensive; softmax.
    "cardiffnlp/twitter-roberta-base-offensive": {
        "label_map": {"LABEL_0": "not_offensive", "LABEL_1": "offensive",
                      "non-offensive": "not_offensive", "offensive": "offensive"},
        "toxicity_label": "offensive", "multi_label": False,
    },
    # SuperTweetEval hate (binary): NOT-HATE / HATE; softmax.
    "cardiffnlp/twitter-roberta-base-hate-latest": {
        "label_map": {"LABEL_0": "not_hate", "LABEL_1": "hate", "NOT-HATE": "not_hate", "HATE": "hate"},
        "toxicity_label": "hate", "multi_label": False,
    },
    # Detoxify "original" (Jigsaw 2018): six independent labels; sigmoid.
    "unitary/toxic-bert": {
        "label_map": {}, "toxicity_label": "toxic", "multi_label": True,
    },
    # Detoxify "unbiased" (Civil Comments): toxicity, subtypes and identity mentions; sigmoid.
    "unitary/unbiased-toxic-roberta": {
        "label_map": {}, "toxicity_label": "toxicity", "multi_label": True,
    },
    # ParaDetox's classifier (Jigsaw): neutral / toxic; softmax.
    "s-nlp/roberta_toxicity_classifier": {
        "label_map": {"LABEL_0": "neutral", "LABEL_1": "toxic"},
        "toxicity_label": "toxic", "multi_label": False,
    },
    # ToxiGen RoBERTa: LABEL_0 benign, LABEL_1 toxic; softmax.
    "tomh/toxigen_roberta": {
        "label_map": {"LABEL_0": "benign", "LABEL_1": "toxic"},
        "toxicity_label": "toxic", "multi_label": False,
    },
    # Dynabench R4 hate (Vidgen et al.): nothate / hate; softmax.
    "facebook/roberta-hate-speech-dynabench-r4-target": {
        "label_map": {"LABEL_0": "not_hate", "LABEL_1": "hate", "nothate": "not_hate", "hate": "hate"},
        "toxicity_label": "hate", "multi_label": False,
    },
}


def preset(name: str) -> dict[str, Any]:
    """A copy of the preset's options, with `model` set to the preset's hub id."""
    if name not in PRESETS:
        raise KeyError(f"unknown hf-classifier preset {name!r}; known: {', '.join(PRESETS)}")
    return {"model": name, **{k: (dict(v) if isinstance(v, dict) else v) for k, v in PRESETS[name].items()}}
