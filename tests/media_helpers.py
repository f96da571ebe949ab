"""Images and sounds for the media tests, made here with Pillow and the standard library, so a
test's expected words are known without any modlens renderer."""
from __future__ import annotations

import io
import struct


from modlens.media import MediaBlob
from realtools import need

FONT = "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf"


def text_image(text: str, *, size: tuple[int, int] = (640, 120), font_size: int = 40,
               background: tuple[int, int, int] = (255, 255, 255), fmt: str = "PNG") -> MediaBlob:
    """Black words on a plain background, one line: what OCR must read back exactly."""
    from PIL import Image, ImageDraw, ImageFont

    need("dejavu-font")
    font = ImageFont.truetype(FONT, font_size)
    im = Image.new("RGB", size, background)
    ImageDraw.Draw(im).text((20, (size[1] - font_size) // 2), text, fill=(0, 0, 0), font=font)
    buf = io.BytesIO()
    im.save(buf, format=fmt)
    return MediaBlob.from_bytes(buf.getvalue())


def blank_image(size: tuple[int, int] = (200, 100), color: tuple[int, int, int] = (240, 240, 240)) -> MediaBlob:
    from PIL import Image

    buf = io.BytesIO()
    Image.new("RGB", size, color).save(buf, format="PNG")
    return MediaBlob.from_bytes(buf.getvalue())


def silent_wav(seconds: float = 0.1, rate: int = 8000) -> MediaBlob:
    """A valid 16-bit mono WAV of silence."""
    frames = int(seconds * rate)
    data = b"\x00\x00" * frames
    header = b"RIFF" + struct.pack("<I", 36 + len(data)) + b"WAVE" + b"fmt " + struct.pack(
        "<IHHIIHH", 16, 1, 1, rate, rate * 2, 2, 16) + b"data" + struct.pack("<I", len(data))
    return MediaBlob(header + data, "audio/wav")
