"""An emoji as a picture (a keyword drawn as 🐷): Noto Color Emoji's bitmap, drawn at the one
size the font has (109 px), cropped to the glyph and resized, on a transparent background."""
from __future__ import annotations

import functools

from PIL import Image, ImageDraw

from modlens.fusion.render import FusionUnavailable
from modlens.fusion.render.fonts import EMOJI_FONT_FIX, emoji_font, emoji_font_path

CANVAS = 200  # room around the 136 x 128 glyph cell, so no part of a wide glyph is clipped


def render_emoji(emoji: str, size: int = 160) -> Image.Image:
    """`emoji` as a `size` x `size` RGBA image, the glyph centred and scaled to fill it. Raises
    FusionUnavailable when the font is missing, ValueError when it has no picture for `emoji`."""
    if size < 1:
        raise ValueError(f"size must be a positive number of pixels, not {size}")
    return _render(emoji, size, str(emoji_font_path())).copy()


@functools.lru_cache(maxsize=256)
def _render(emoji: str, size: int, font_path: str) -> Image.Image:
    # font_path is part of the cache key: another font draws other pixels
    font = emoji_font()
    glyph = Image.new("RGBA", (CANVAS, CANVAS), (0, 0, 0, 0))
    try:
        ImageDraw.Draw(glyph).text((CANVAS // 2, CANVAS // 2), emoji, font=font, anchor="mm", embedded_color=True)
    except OSError as exc:  # FreeType refusing the bitmap font (a Pillow built without PNG/CBDT support)
        raise FusionUnavailable(f"cannot draw {emoji!r} with the emoji font: {exc}", EMOJI_FONT_FIX) from None
    box = glyph.getbbox()  # of the non-transparent pixels
    if box is None:  # FreeType draws nothing (no .notdef box) for a code point the font lacks
        raise ValueError(f"the emoji font has no picture for {emoji!r} (code points "
                         f"{' '.join(f'U+{ord(c):04X}' for c in emoji)}); use another emoji in the table")
    glyph = glyph.crop(box)
    scale = size / max(glyph.size)
    scaled = glyph.resize((max(1, round(glyph.width * scale)), max(1, round(glyph.height * scale))),
                          Image.Resampling.LANCZOS)
    out = Image.new("RGBA", (size, size), (0, 0, 0, 0))
    out.alpha_composite(scaled, ((size - scaled.width) // 2, (size - scaled.height) // 2))
    return out

