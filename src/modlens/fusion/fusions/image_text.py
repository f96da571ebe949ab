"""I+T: the paper's image case (DUO section 3.3.1): A's picture with the rest of the sentence
("are pigs") written into it by the paper's rules (size relative to the salient object, one of
nine positions overlapping it at most 30%, after A in reading order, outlined so it reads on any
background). No caption. A seed whose A has no picture, or whose text has no position left, is
skipped (the paper discards the pair too). The parts: A's picture alone, and a card of "are B"."""
from __future__ import annotations

import random

from modlens.fusion.case import FusedCase
from modlens.fusion.fusions.base import FusionContext, Skip, card, card_params, case, check_text_font, picture, png
from modlens.fusion.seeds import Seed
from modlens.media import MediaInput

NAMES = ("I+T",)
DESCRIPTIONS = {"I+T": "A's picture with \"are B\" written into it by the paper's placement rules; no caption"}


def check(name: str) -> None:
    check_text_font()


def build(name: str, seed: Seed, ctx: FusionContext, rng: random.Random) -> FusedCase:
    from modlens.fusion.render.text_image import place_text

    found = picture(seed.a, ctx, rng)
    if found is None:
        raise Skip(f"no picture for A {seed.a!r} (no --images label, no emoji)")
    placed = place_text(found.image, found.salient, seed.right, text_role="B", rng=rng)
    if placed is None:
        raise Skip(f"no position left for {seed.right!r} in the picture of {seed.a!r}")
    fused, placement = placed
    blob, alone_a, card_b = png(fused), png(found.image), png(card(seed.right, ctx))
    return case(seed, name, ctx, caption="", media=(blob,), part_a=MediaInput("", (alone_a,)),
                part_b=MediaInput("", (card_b,)),
                params={"image_a": found.source, "text": seed.right, "placement": placement.as_params(),
                        "part_b": card_params(seed.right, ctx)})
