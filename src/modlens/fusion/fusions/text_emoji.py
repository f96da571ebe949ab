"""T+E: a text comment with an emoji in place of a keyword ("women are 🐷"), the comment-native
fusion of text and emoji. B is replaced when the emoji table has an emoji for it, else A; a
seed with neither is skipped. The parts: the remaining text half alone, and the emoji alone."""
from __future__ import annotations

import random

from modlens.fusion.case import FusedCase
from modlens.fusion.emoji import emoji_for
from modlens.fusion.fusions.base import FusionContext, Skip, case
from modlens.fusion.seeds import Seed
from modlens.media import MediaInput

NAMES = ("T+E",)
DESCRIPTIONS = {"T+E": "text with an emoji in place of keyword B (or A): \"women are 🐷\""}


def check(name: str) -> None:
    """Text only: runs everywhere."""


def code_points(emoji: str) -> list[str]:
    return [f"U+{ord(c):04X}" for c in emoji]


def build(name: str, seed: Seed, ctx: FusionContext, rng: random.Random) -> FusedCase:
    for role, keyword in (("B", seed.b), ("A", seed.a)):
        emoji = emoji_for(keyword, ctx.emoji_table)
        if emoji is None:
            continue
        if role == "B":
            caption = seed.refill(seed.a, emoji)
            part_a, part_b = MediaInput(seed.left), MediaInput(emoji)
        else:
            caption = seed.refill(emoji, seed.b)
            part_a, part_b = MediaInput(emoji), MediaInput(seed.right)
        return case(seed, name, ctx, caption=caption, media=(), part_a=part_a, part_b=part_b,
                    params={"replaced": role, "keyword": keyword, "emoji": emoji, "code_points": code_points(emoji)})
    raise Skip(f"no emoji for {seed.b!r} or {seed.a!r} in the emoji table")
