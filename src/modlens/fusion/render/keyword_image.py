"""A picture for a keyword (DUO section 3.2, visual modality): an image from the user's own
folder, laid out `folder/<label>/*.png|jpg`, or else the keyword's emoji drawn on a plain light
canvas. modlens never searches the web for pictures (the paper used an image search engine); a
study brings its own, so what was shown is known and can be shared.

The paper checks each picture with an object recogniser and keeps the salient object's box to
place the text around it. modlens's simple stand-in: the salient region of a folder image is the
bounding box of the pixels that differ clearly from the image's border colour (the object on a
plain or photographed background); for an emoji it is the emoji's own box."""
from __future__ import annotations

import hashlib
import random
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image, ImageChops, ImageFilter, ImageOps

from modlens.fusion.emoji import emoji_for, word_forms
from modlens.fusion.render.emoji_image import render_emoji
from modlens.fusion.render.fonts import emoji_font_path, font_id

Box = tuple[int, int, int, int]  # (left, top, right, bottom), pixels, right and bottom exclusive

IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg")
CANVAS_COLOUR = (245, 245, 245)  # the plain light background under an emoji
EMOJI_SHARE = 0.4                # emoji side as a share of the canvas's shorter side
# a pixel belongs to the object when a channel differs from the border colour by more than this
# (0-255); JPEG noise and soft shadows stay below it
SALIENT_THRESHOLD = 40
SPECKLE_FILTER = 5               # median filter size that removes isolated differing pixels


@dataclass(frozen=True, eq=False)
class KeywordImage:
    image: Image.Image                                    # RGB, the requested size
    salient: Box                                          # where the object is; text goes around it
    source: dict[str, Any] = field(default_factory=dict)  # what it was made from, for the case's parameters


def keyword_image(keyword: str, *, folder: Path | None, emoji_table: dict[str, str], rng: random.Random,
                  size: tuple[int, int] = (480, 360)) -> KeywordImage | None:
    """A picture of `keyword`: one of the folder's images for it (picked with `rng`), else its
    emoji on a plain canvas, else None (the pair cannot go to the visual modality)."""
    if folder is not None:
        files = folder_images(Path(folder), keyword)
        if files:
            return from_file(rng.choice(files), size=size, folder=Path(folder))
    emoji = emoji_for(keyword, emoji_table)
    if emoji is None:
        return None
    return from_emoji(emoji, size=size)


def folder_images(folder: Path, keyword: str) -> list[Path]:
    """The images under the label folder matching `keyword` (case-insensitive, singular or
    plural), sorted so a seeded pick is the same on every machine."""
    if not folder.is_dir():
        raise FileNotFoundError(f"no image folder at {folder} (expected {folder}/<label>/*.png|jpg)")
    labels = {d.name.lower(): d for d in sorted(folder.iterdir()) if d.is_dir()}
    for form in word_forms(keyword):
        if form in labels:
            return sorted(p for p in labels[form].iterdir()
                          if p.is_file() and p.suffix.lower() in IMAGE_SUFFIXES)
    return []


def from_file(path: Path, *, size: tuple[int, int], folder: Path | None = None) -> KeywordImage:
    """A folder image fitted into `size` (aspect kept, padded with its own border colour)."""
    data = path.read_bytes()
    with Image.open(path) as opened:
        picture = ImageOps.exif_transpose(opened).convert("RGB")
    border = border_colour(picture)
    fitted = ImageOps.pad(picture, size, method=Image.Resampling.LANCZOS, color=border)
    name = path.relative_to(folder).as_posix() if folder is not None and path.is_relative_to(folder) else path.name
    return KeywordImage(fitted, salient_box(fitted, border),
                        {"kind": "folder", "label": path.parent.name, "file": name,
                         "sha256": hashlib.sha256(data).hexdigest(), "salient": "border_difference",
                         "threshold": SALIENT_THRESHOLD})


def from_emoji(emoji: str, *, size: tuple[int, int]) -> KeywordImage:
    """The emoji centred on a plain light canvas; its box is the salient region."""
    side = max(1, round(min(size) * EMOJI_SHARE))
    glyph = render_emoji(emoji, side)
    canvas = Image.new("RGBA", size, (*CANVAS_COLOUR, 255))
    left, top = (size[0] - side) // 2, (size[1] - side) // 2
    canvas.alpha_composite(glyph, (left, top))
    inner = glyph.getbbox() or (0, 0, side, side)
    salient = (left + inner[0], top + inner[1], left + inner[2], top + inner[3])
    return KeywordImage(canvas.convert("RGB"), salient,
                        {"kind": "emoji", "emoji": emoji, "font": font_id(emoji_font_path()), "side": side})


def border_colour(image: Image.Image) -> tuple[int, int, int]:
    """The median colour of the outermost pixel ring: the background in most product shots."""
    pixels = np.asarray(image.convert("RGB"))
    ring = np.concatenate([pixels[0], pixels[-1], pixels[:, 0], pixels[:, -1]])
    r, g, b = (int(v) for v in np.median(ring, axis=0))
    return (r, g, b)

def salient_box(image: Image.Image, border: tuple[int, int, int]) -> Box:
    """The box of the pixels that differ clearly from `border`; the whole image when none do
    (no object found: every text position then overlaps it, and the pair is discarded)."""
    rgb = image.convert("RGB")
    diff = ImageChops.difference(rgb, Image.new("RGB", rgb.size, border))
    red, green, blue = diff.split()
    strongest = ImageChops.lighter(ImageChops.lighter(red, green), blue)
    mask = strongest.point(lambda v: 255 if v > SALIENT_THRESHOLD else 0).filter(ImageFilter.MedianFilter(SPECKLE_FILTER))
    box = mask.getbbox()
    return box if box is not None else (0, 0, rgb.width, rgb.height)
