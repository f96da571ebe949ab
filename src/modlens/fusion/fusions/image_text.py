"""I+T: the paper's image case (DUO section 3.3.1): A's picture with the rest of the sentence
("are pigs") written into it by the paper's rules (size relative to the salient object, one of
nine positions overlapping it at most 30%, after A in reading order, outlined so it reads on any
background). No caption. When A has no picture (a group name: the emoji table has none) but B
has one, the paper's other order: "A are" written before B's picture (text role A), so I+T runs
out of the box without `--images`. A seed with no picture for either keyword, or whose text has
no position left, is skipped with its reason (the paper discards the pair too). The parts: the
picture alone and a card of the written words (A's half first)."""
from __future__ import annotations

import random

from modlens.fusion.case import FusedCase
from modlens.fusion.fusions.base import FusionContext, Skip, card, card_params, case, check_text_font, picture, png
from modlens.fusion.seeds import Seed
from modlens.media import MediaInput

NAMES = ("I+T",)
DESCRIPTIONS = {"I+T": "A's picture with \"are B\" written into it (or \"A are\" before B's picture) by the paper's placement rules; no caption"}


def check(name: str) -> None:
    check_text_font()


def build(name: str, seed: Seed, ctx: FusionContext, rng: random.Random) -> FusedCase:
    from modlens.fusion.render.text_image import place_text

    found, role = picture(seed.a, ctx, rng), "A"
    if found is None:
        found, role = picture(seed.b, ctx, rng), "B"
    if found is None:
        raise Skip(f"no picture for A {seed.a!r} or B {seed.b!r} (no --images label, no emoji)")
    keyword, text = (seed.a, seed.right) if role == "A" else (seed.b, seed.left)
    # the words go after a picture of A (text role B), before a picture of B (text role A)
    placed = place_text(found.image, found.salient, text, text_role="B" if role == "A" else "A", rng=rng)
    if placed is None:
        raise Skip(f"no position left for {text!r} in the picture of {keyword!r}")
    fused, placement = placed
    blob, alone, words = png(fused), MediaInput("", (png(found.image),)), MediaInput("", (png(card(text, ctx)),))
    params = {"text": text, "placement": placement.as_params(), "text_card": card_params(text, ctx)}
    if role == "A":  # the keys of A-picture cases as before, so their case keys do not change
        params = {"image_a": found.source, "text": text, "placement": placement.as_params(),
                  "part_b": card_params(text, ctx)}
        return case(seed, name, ctx, caption="", media=(blob,), part_a=alone, part_b=words, params=params)
    return case(seed, name, ctx, caption="", media=(blob,), part_a=words, part_b=alone,
                params={**params, "picture": "B", "image_b": found.source})
