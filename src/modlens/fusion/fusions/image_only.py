"""I: a reply that is only a picture of the whole seed text (a text card, no caption), the way
people post a screenshot of words to get past text filters. The parts: a card of "A middle" and
a card of B."""
from __future__ import annotations

import random

from modlens.fusion.case import FusedCase
from modlens.fusion.fusions.base import FusionContext, card, card_params, case, check_text_font, png
from modlens.fusion.seeds import Seed
from modlens.media import MediaInput

NAMES = ("I",)
DESCRIPTIONS = {"I": "a reply that is only a picture of the whole seed text"}


def check(name: str) -> None:
    check_text_font()


def build(name: str, seed: Seed, ctx: FusionContext, rng: random.Random) -> FusedCase:
    whole, left, right = png(card(seed.text, ctx)), png(card(seed.left, ctx)), png(card(seed.b, ctx))
    return case(seed, name, ctx, caption="", media=(whole,), part_a=MediaInput("", (left,)),
                part_b=MediaInput("", (right,)),
                params={"card": card_params(seed.text, ctx), "part_a": card_params(seed.left, ctx),
                        "part_b": card_params(seed.b, ctx)})
