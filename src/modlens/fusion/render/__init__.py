"""Rendering the media of fused test cases (DUO section 3.3, docs/FUSION.md "Rendering"): words
drawn into images, emoji and keyword pictures, text cards, speech and video. Every transform is a
small module of its own; this file holds what they share: the error a transform raises when the
machine lacks a font or program, and the one way an image becomes PNG bytes. It imports none of
them (they import it), so the package has no import cycle."""
from __future__ import annotations

import io

from PIL import Image

from modlens.errors import ErrorKind, ModlensError
from modlens.media import MediaBlob

# zlib level for every PNG modlens writes: fixed, so the same pixels give the same bytes
PNG_COMPRESS_LEVEL = 6


class FusionUnavailable(ModlensError, RuntimeError):
    """A transform cannot run here (a program or font is missing); `.fix` says what to install."""

    kind = ErrorKind.FAILED
    fix: str    # always one


def to_png_blob(image: Image.Image) -> MediaBlob:
    """The image as PNG bytes that depend on its pixels only: the same image gives the same
    SHA-256 (a case's key and its content-addressed file name rest on that). Metadata the image
    picked up on the way (text chunks, ICC profile, DPI, EXIF) is left out."""
    if image.mode not in ("RGB", "RGBA", "L", "LA"):
        image = image.convert("RGBA" if "A" in image.getbands() or "transparency" in image.info else "RGB")
    # a fresh image from the raw pixels carries no .info, so the encoder writes no extra chunks
    clean = Image.frombytes(image.mode, image.size, image.tobytes())
    out = io.BytesIO()
    clean.save(out, format="PNG", compress_level=PNG_COMPRESS_LEVEL, optimize=False)
    return MediaBlob(out.getvalue(), "image/png")

