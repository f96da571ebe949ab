"""Finding the fonts the renderers draw with: a bold sans-serif for words (DejaVu Sans Bold,
Debian `fonts-dejavu-core`) and Noto Color Emoji (Debian `fonts-noto-color-emoji`). A missing
font raises FusionUnavailable naming the package to install, or the environment variable that
points modlens at another file. The font file's name and a hash of its bytes go into every
case's parameters: another font (or font version) draws other pixels."""
from __future__ import annotations

import functools
import hashlib
import os
from pathlib import Path

from PIL import ImageFont

from modlens.fusion.render import FusionUnavailable
from modlens.paths import hash_file

TEXT_FONT_ENV = "MODLENS_FONT"
EMOJI_FONT_ENV = "MODLENS_EMOJI_FONT"

# bold faces first: thick strokes survive resizing, busy backgrounds and OCR best
TEXT_FONT_NAMES = ("DejaVuSans-Bold.ttf", "DejaVuSans.ttf", "LiberationSans-Bold.ttf", "Arial Bold.ttf",
                   "Arial.ttf")
EMOJI_FONT_NAMES = ("NotoColorEmoji.ttf",)
# Noto Color Emoji is a CBDT bitmap font: FreeType loads it only at the size its bitmaps have
EMOJI_FONT_SIZE = 109

FONT_DIRS = (Path("/usr/share/fonts"), Path("/usr/local/share/fonts"), Path.home() / ".local/share/fonts",
             Path.home() / ".fonts", Path("/Library/Fonts"), Path("/System/Library/Fonts"))

TEXT_FONT_FIX = (f"install DejaVu fonts: apt-get install fonts-dejavu-core (macOS: brew install --cask "
                 f"font-dejavu), or set {TEXT_FONT_ENV}=/path/to/a/bold/font.ttf")
EMOJI_FONT_FIX = (f"install Noto Color Emoji: apt-get install fonts-noto-color-emoji, or set "
                  f"{EMOJI_FONT_ENV}=/path/to/NotoColorEmoji.ttf")


def find_font(names: tuple[str, ...], env: str, fix: str, *, dirs: tuple[Path, ...] = FONT_DIRS) -> Path:
    """The first of `names` under the font folders, or the file the environment variable names."""
    override = os.environ.get(env)
    if override:
        path = Path(override).expanduser()
        if not path.is_file():
            raise FusionUnavailable(f"{env} points at {path}, which is not a file", fix)
        return path
    found = _search(names, dirs)
    if found is None:
        raise FusionUnavailable(f"no font among {', '.join(names)} in {', '.join(str(d) for d in dirs)}", fix)
    return found


@functools.lru_cache(maxsize=16)
def _search(names: tuple[str, ...], dirs: tuple[Path, ...]) -> Path | None:
    """Walking the font folders takes a while: once per process (install a font, restart)."""
    for name in names:
        for folder in dirs:
            if not folder.is_dir():
                continue
            direct = folder / name
            if direct.is_file():
                return direct
            found = sorted(folder.rglob(name))
            if found:
                return found[0]
    return None


def text_font_path() -> Path:
    return find_font(TEXT_FONT_NAMES, TEXT_FONT_ENV, TEXT_FONT_FIX)


def emoji_font_path() -> Path:
    return find_font(EMOJI_FONT_NAMES, EMOJI_FONT_ENV, EMOJI_FONT_FIX)


@functools.lru_cache(maxsize=64)
def _truetype(path: str, size: int) -> ImageFont.FreeTypeFont:
    return ImageFont.truetype(path, size)


def text_font(size: int) -> ImageFont.FreeTypeFont:
    """The words' font at `size` pixels."""
    return _truetype(str(text_font_path()), max(1, int(size)))


def emoji_font() -> ImageFont.FreeTypeFont:
    path = emoji_font_path()
    try:
        return _truetype(str(path), EMOJI_FONT_SIZE)
    except OSError as exc:  # a non-bitmap or broken file at that path
        raise FusionUnavailable(f"cannot load the emoji font {path} at {EMOJI_FONT_SIZE} px: {exc}",
                                EMOJI_FONT_FIX) from None


@functools.lru_cache(maxsize=16)
def font_id(path: Path) -> str:
    """"DejaVuSans-Bold.ttf@1a2b3c4d": the file name and the start of its SHA-256."""
    return f"{path.name}@{hash_file(hashlib.sha256(), path).hexdigest()[:8]}"
