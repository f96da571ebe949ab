"""Words drawn into a picture (DUO section 3.3.1, image generation): one half of the seed as
text, the other half as the picture's object, e.g. a pig photo with "women are" above it.

The paper's three rules, as modlens applies them (docs/FUSION.md "Rendering"):
- size: the text's box covers 0.8-1.2x the salient object's area (drawn with `rng`), shrunk
  when that would not fit inside the image, and never below a legible minimum;
- place: nine candidate positions (top_left ... bottom_right); a position is dropped when more
  than 30% of the text's box lies on the salient object, or when it breaks reading order (the
  template's A is read before B: text A must be above or left of the object, text B below or
  right of it). One of the positions left is drawn with `rng`; none left -> None (the paper
  discards the pair);
- colour: a fill that contrasts with the picture under the text, outlined with a stroke of the
  opposite colour (the paper's webkit text stroke), so the words read on any background.
`render_text_card` draws a whole text on a plain card (image-only replies, video text cards)."""
from __future__ import annotations

import math
import random
from dataclasses import dataclass, field
from typing import Any, Literal

from PIL import Image, ImageDraw, ImageFont, ImageStat

from modlens.fusion.render.fonts import font_id, text_font, text_font_path
from modlens.fusion.render.keyword_image import Box

RGB = tuple[int, int, int]
TextRole = Literal["A", "B"]

POSITIONS = ("top_left", "top_middle", "top_right",
             "middle_left", "middle_middle", "middle_right",
             "bottom_left", "bottom_middle", "bottom_right")
MAX_OVERLAP = 0.30          # the paper's rule: a position overlapping the object more than this is dropped
AREA_RATIO = (0.8, 1.2)     # text box area / salient object area, the paper's range
MARGIN_SHARE = 0.03         # gap between text and image edge, share of the shorter side
MIN_FONT_PX = 14            # below this, words in a 480 x 360 picture stop being legible (and OCR-able)
STROKE_SHARE = 0.04         # stroke width as a share of the font size (at least 1 px)
LIGHT = 140                 # mean luminance above which the picture under the text counts as light
WHITE: RGB = (255, 255, 255)
BLACK: RGB = (0, 0, 0)


@dataclass(frozen=True)
class Placement:
    """Where and how a text was drawn; `as_params()` goes into the case's parameters."""
    position: str                   # one of POSITIONS
    box: Box                        # the text's ink box, stroke included
    font_size: int
    overlap: float                  # share of the text box lying on the salient region (<= MAX_OVERLAP)
    stroke_width: int
    fill: RGB
    stroke_fill: RGB
    text_role: str = "A"
    area_ratio: float = 1.0         # text box area / salient area, as drawn (after fitting)
    candidates: tuple[str, ...] = ()  # the positions that passed both rules; `position` is one of them
    font: str = ""                  # font file name and hash (fonts.font_id)
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def colours(self) -> dict[str, RGB]:
        return {"fill": self.fill, "stroke": self.stroke_fill}

    def as_params(self) -> dict[str, Any]:
        return {"position": self.position, "box": list(self.box), "font_size": self.font_size,
                "overlap": round(self.overlap, 4), "stroke_width": self.stroke_width,
                "fill": _hex(self.fill), "stroke_fill": _hex(self.stroke_fill), "text_role": self.text_role,
                "area_ratio": round(self.area_ratio, 4), "candidates": list(self.candidates), "font": self.font,
                **self.extra}


def position_box(name: str, image_size: tuple[int, int], text_size: tuple[int, int]) -> Box:
    """The box of a `text_size` text at candidate position `name`, `margin` from the edges."""
    (width, height), (w, h) = image_size, text_size
    margin = margin_px(image_size)
    row, col = name.split("_")
    x = {"left": margin, "middle": (width - w) // 2, "right": width - w - margin}[col]
    y = {"top": margin, "middle": (height - h) // 2, "bottom": height - h - margin}[row]
    return (x, y, x + w, y + h)


def margin_px(image_size: tuple[int, int]) -> int:
    return max(2, round(min(image_size) * MARGIN_SHARE))


def overlap_share(box: Box, salient: Box) -> float:
    """The share of `box`'s area that lies on `salient` (0 none, 1 all of it)."""
    area = (box[2] - box[0]) * (box[3] - box[1])
    if area <= 0:
        return 0.0
    w = min(box[2], salient[2]) - max(box[0], salient[0])
    h = min(box[3], salient[3]) - max(box[1], salient[1])
    return max(0, w) * max(0, h) / area


def reads_in_order(box: Box, salient: Box, text_role: str) -> bool:
    """The reading-order rule. Along each axis the text's centre is before the object (left of
    its left edge / above its top), after it (right of its right edge / below its bottom) or
    level with it. Text A must come first: before on one axis and after on neither; text B
    after on one axis and before on neither. For a centred object, B may go middle_right,
    bottom_middle or bottom_right, as in the paper's example."""
    cx, cy = (box[0] + box[2]) / 2, (box[1] + box[3]) / 2
    sides = [_side(cx, salient[0], salient[2]), _side(cy, salient[1], salient[3])]
    if text_role == "A":
        return "before" in sides and "after" not in sides
    if text_role == "B":
        return "after" in sides and "before" not in sides
    raise ValueError(f"text_role must be 'A' or 'B', not {text_role!r}")


def _side(centre: float, start: int, end: int) -> str:
    return "before" if centre < start else "after" if centre > end else "level"


def candidate_positions(image_size: tuple[int, int], text_size: tuple[int, int], salient: Box,
                        text_role: TextRole | str) -> list[tuple[str, Box, float]]:
    """The positions (name, text box, overlap share) that pass both rules, in POSITIONS order."""
    if text_role not in ("A", "B"):
        raise ValueError(f"text_role must be 'A' or 'B', not {text_role!r}")
    kept = []
    for name in POSITIONS:
        box = position_box(name, image_size, text_size)
        if box[0] < 0 or box[1] < 0 or box[2] > image_size[0] or box[3] > image_size[1]:
            continue  # the text does not fit there
        overlap = overlap_share(box, salient)
        if overlap <= MAX_OVERLAP and reads_in_order(box, salient, text_role):
            kept.append((name, box, overlap))
    return kept


def place_text(image: Image.Image, salient: Box, text: str, *, text_role: TextRole | str, rng: random.Random,
               area_ratio: tuple[float, float] = AREA_RATIO) -> tuple[Image.Image, Placement] | None:
    """`text` drawn onto a copy of `image` by the paper's rules, with where and how; None when
    no position is left (or the text cannot be drawn legibly in the picture at all)."""
    text = " ".join(text.split())
    if not text:
        raise ValueError("no text to draw")
    salient = _clip_box(salient, image.size)
    salient_area = (salient[2] - salient[0]) * (salient[3] - salient[1])
    lo, hi = area_ratio
    if not 0 < lo <= hi:
        raise ValueError(f"area_ratio must be (low, high) with 0 < low <= high, not {area_ratio}")
    target_area = rng.uniform(lo, hi) * salient_area
    margin = margin_px(image.size)
    fitted = fit_font(text, target_area, (image.width - 2 * margin, image.height - 2 * margin))
    if fitted is None:
        return None
    font_size, stroke, (w, h) = fitted
    candidates = candidate_positions(image.size, (w, h), salient, text_role)
    if not candidates:
        return None
    position, box, overlap = rng.choice(candidates)
    picture = image.convert("RGB")  # a new image: the caller's stays as it was
    fill = BLACK if luminance(picture, box) > LIGHT else WHITE
    stroke_fill = WHITE if fill == BLACK else BLACK
    draw_text(picture, text, box, font_size=font_size, stroke_width=stroke, fill=fill, stroke_fill=stroke_fill)
    placement = Placement(position, box, font_size, overlap, stroke, fill, stroke_fill, text_role=str(text_role),
                          area_ratio=w * h / salient_area, candidates=tuple(c[0] for c in candidates),
                          font=font_id(text_font_path()), extra={"target_area_ratio": round(target_area / salient_area, 4)})
    return picture, placement


def fit_font(text: str, target_area: float, room: tuple[int, int]) -> tuple[int, int, tuple[int, int]] | None:
    """(font size, stroke width, text box size) for a one-line text whose box covers about
    `target_area`, shrunk to fit `room` and never below MIN_FONT_PX; None when even that is too big."""
    ref_size = 100
    ref_w, ref_h = text_size(text, ref_size)
    # a box's area grows with the square of the font size
    size = max(MIN_FONT_PX, int(ref_size * math.sqrt(max(target_area, 1.0) / (ref_w * ref_h))))
    while size >= MIN_FONT_PX:
        w, h = text_size(text, size)
        if w <= room[0] and h <= room[1]:
            return size, stroke_width(size), (w, h)
        # shrink in proportion to the overshoot, at least one pixel a step
        size = min(size - 1, int(size * min(room[0] / w, room[1] / h)))
    return None


def stroke_width(font_size: int) -> int:
    return max(1, round(font_size * STROKE_SHARE))


def text_size(text: str, font_size: int) -> tuple[int, int]:
    """The ink box of one line at `font_size`, its stroke included."""
    left, top, right, bottom = text_font(font_size).getbbox(text, stroke_width=stroke_width(font_size))
    return int(math.ceil(right - left)), int(math.ceil(bottom - top))


def draw_text(picture: Image.Image, text: str, box: Box, *, font_size: int, stroke_width: int,
              fill: RGB, stroke_fill: RGB) -> None:
    """Draw one line so that its ink box (stroke included) starts at box's top-left corner."""
    font = text_font(font_size)
    left, top, _, _ = font.getbbox(text, stroke_width=stroke_width)
    ImageDraw.Draw(picture).text((box[0] - left, box[1] - top), text, font=font, fill=fill,
                                 stroke_width=stroke_width, stroke_fill=stroke_fill)


def luminance(picture: Image.Image, box: Box) -> float:
    """Mean luminance (0-255) of the picture under `box`."""
    return float(ImageStat.Stat(picture.convert("L").crop(box)).mean[0])


def render_text_card(text: str, size: tuple[int, int] = (480, 360), *,
                     background: RGB = WHITE) -> Image.Image:
    """The whole text, wrapped and centred, as large as fits on a plain `size` card: black on a
    light background, white on a dark one."""
    words = text.split()
    if not words:
        raise ValueError("no text to draw")
    width, height = size
    room = (int(width * 0.88), int(height * 0.85))
    colour = BLACK if sum(c * w for c, w in zip(background, (0.299, 0.587, 0.114))) > LIGHT else WHITE
    card = Image.new("RGB", size, background)
    draw = ImageDraw.Draw(card)
    for font_size in range(max(MIN_FONT_PX, height // 3), 7, -2):
        font = text_font(font_size)
        lines = _wrap(words, font, room[0])
        if lines is None:
            continue
        spacing = font_size // 4
        block = "\n".join(lines)
        left, top, right, bottom = draw.multiline_textbbox((0, 0), block, font=font, spacing=spacing, align="center")
        if bottom - top <= room[1]:
            origin = ((width - (right - left)) / 2 - left, (height - (bottom - top)) / 2 - top)
            draw.multiline_text(origin, block, font=font, fill=colour, spacing=spacing, align="center")
            return card
    raise ValueError(f"the text is too long for a {width} x {height} card: {text[:60]!r}...")


def _wrap(words: list[str], font: ImageFont.FreeTypeFont, max_width: int) -> list[str] | None:
    """Greedy line breaking at spaces; None when one word alone is wider than the line."""
    lines: list[str] = []
    for word in words:
        if font.getlength(word) > max_width:
            return None
        if lines and font.getlength(f"{lines[-1]} {word}") <= max_width:
            lines[-1] = f"{lines[-1]} {word}"
        else:
            lines.append(word)
    return lines


def _clip_box(box: Box, image_size: tuple[int, int]) -> Box:
    left, top = max(0, int(box[0])), max(0, int(box[1]))
    right, bottom = min(image_size[0], int(box[2])), min(image_size[1], int(box[3]))
    if right <= left or bottom <= top:
        raise ValueError(f"salient box {box} is empty or outside the {image_size[0]} x {image_size[1]} image")
    return (left, top, right, bottom)


def _hex(colour: RGB) -> str:
    return "#{:02x}{:02x}{:02x}".format(*colour)
