"""T+I: a comment whose text carries A and whose attached image carries B ("women are" + a
picture of a pig), the comment-native fusion of text and image. The image is B's picture (a
folder image or its emoji) when there is one, else B written on a plain card. The parts: the
caption alone, and the image alone."""
from __future__ import annotations

import random

from modlens.fusion.case import FusedCase
from modlens.fusion.fusions.base import FusionContext, card, card_params, case, check_text_font, picture, png
from modlens.fusion.seeds import Seed
from modlens.media import MediaInput

NAMES = ("T+I",)
DESCRIPTIONS = {"T+I": "caption \"women are\" with an attached image carrying B (its picture, else a text card)"}


def check(name: str) -> None:
    check_text_font()


def build(name: str, seed: Seed, ctx: FusionContext, rng: random.Random) -> FusedCase:
    found = picture(seed.b, ctx, rng)
    if found is not None:
        image, source = found.image, found.source
    else:
        image, source = card(seed.b, ctx), card_params(seed.b, ctx)
    blob = png(image)
    return case(seed, name, ctx, caption=seed.left, media=(blob,), part_a=MediaInput(seed.left),
                part_b=MediaInput("", (blob,)), params={"caption": seed.left, "image_b": source})
