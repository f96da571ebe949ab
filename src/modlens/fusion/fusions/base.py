"""What every fusion shares: the settings of a generation run (`FusionContext`), the way a fusion
says that a seed cannot be fused (`Skip`, not an error), and the pictures and cards the image
and video fusions draw. A fusion module defines `NAMES` (the fusion types it builds),
`DESCRIPTIONS`, `check(name)` (raises FusionUnavailable when this machine lacks a font or
program) and `build(name, seed, ctx, rng) -> FusedCase`."""
from __future__ import annotations

import random
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from PIL import Image

from modlens.errors import ModlensError
from modlens.fusion.case import FusedCase
from modlens.fusion.render import FusionUnavailable, to_png_blob
from modlens.fusion.seeds import Seed
from modlens.media import MediaBlob, MediaInput

DEFAULT_SIZE = (480, 360)
# espeak-ng's Klatt formant voice at 130 words/min: the lowest word error rate of pocketsphinx (the
# offline asr default) among the settings bench/bench_fusion.py tries (docs/FUSION.md "Choosing the voice")
DEFAULT_VOICE = "en-us+klatt4"
DEFAULT_WPM = 130


class Skip(ModlensError):
    """This seed cannot take this fusion (no emoji or picture for its keyword, no free position
    for the text): the case is left out and the reason reported, the run goes on."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@dataclass(frozen=True)
class FusionContext:
    """A run's settings, the same for every case."""
    emoji_table: dict[str, str]
    images: Path | None = None              # label -> images folder (--images)
    size: tuple[int, int] = DEFAULT_SIZE    # pictures, cards and video frames
    voice: str = DEFAULT_VOICE
    speed_wpm: int = DEFAULT_WPM
    pitch: int = 50
    run_seed: int = 0
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, eq=False)
class Picture:
    """A keyword's picture (folder image or emoji), or None when it has none."""
    image: Image.Image
    salient: tuple[int, int, int, int]
    source: dict[str, Any]


def picture(keyword: str, ctx: FusionContext, rng: random.Random) -> Picture | None:
    """The keyword's picture: a folder image of its label, else its emoji drawn on a canvas."""
    from modlens.fusion.render.keyword_image import keyword_image

    try:
        found = keyword_image(keyword, folder=ctx.images, emoji_table=ctx.emoji_table, rng=rng, size=ctx.size)
    except ValueError as err:  # an emoji the font cannot draw: this keyword has no picture here
        raise Skip(f"no picture for {keyword!r}: {err}") from None
    if found is None:
        return None
    return Picture(found.image, found.salient, {"keyword": keyword, **found.source})


def card(text: str, ctx: FusionContext) -> Image.Image:
    """The text on a plain card (render_text_card)."""
    from modlens.fusion.render.text_image import render_text_card

    return render_text_card(text, ctx.size)


def card_params(text: str, ctx: FusionContext) -> dict[str, Any]:
    from modlens.fusion.render.fonts import font_id, text_font_path

    return {"kind": "text_card", "text": text, "size": list(ctx.size), "font": font_id(text_font_path())}


def png(image: Image.Image) -> MediaBlob:
    return to_png_blob(image)


def check_text_font() -> None:
    from modlens.fusion.render.fonts import text_font_path

    text_font_path()


def case(seed: Seed, fusion: str, ctx: FusionContext, *, caption: str, media: tuple[MediaBlob, ...],
         part_a: MediaInput, part_b: MediaInput, params: dict[str, Any]) -> FusedCase:
    """The FusedCase of `seed`, its parameters completed with the run seed and the size."""
    full = {"fusion": fusion, "size": list(ctx.size), **params}
    return FusedCase(seed.content_type, seed.template, seed.a, seed.middle, seed.b, seed.text, fusion, caption,
                     media, part_a, part_b, full, ctx.run_seed)


__all__ = ["FusionContext", "FusionUnavailable", "Picture", "Skip", "card", "card_params", "case",
           "check_text_font", "picture", "png"]
