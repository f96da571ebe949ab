"""Fused test cases built in the tests themselves: text cards rendered with Pillow (real PNG
bytes), a short silent WAV, and recording a case with its media the way `modlens fuse` does
(media into the content-addressed store, rows through `studylog.records.media`)."""
from __future__ import annotations

import io
import wave

from modlens.fusion.case import FusedCase
from modlens.media import MediaBlob, MediaInput
from modlens.media.store import MediaStore
from modlens.studylog.records import media as media_records
from modlens.studylog.store import StudyLog


def card(text: str) -> MediaBlob:
    """Black words on a white card, large enough for Tesseract to read back."""
    from PIL import Image, ImageDraw, ImageFont

    font = ImageFont.load_default(size=56)
    width = int(ImageDraw.Draw(Image.new("RGB", (1, 1))).textlength(text, font=font)) + 80
    img = Image.new("RGB", (width, 140), "white")
    ImageDraw.Draw(img).text((40, 35), text, fill="black", font=font)
    buf = io.BytesIO()
    img.save(buf, format="PNG")
    return MediaBlob(buf.getvalue(), "image/png")


def wav(seconds: float = 0.2) -> MediaBlob:
    buf = io.BytesIO()
    with wave.open(buf, "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(8000)
        w.writeframes(b"\x00\x00" * int(8000 * seconds))
    return MediaBlob(buf.getvalue(), "audio/wav")


def text_image(content_type: str, a: str, middle: str, b: str, *, image_half: str = "b") -> FusedCase:
    """"A middle" as the caption and B on a card (image_half="b", fusion T+I), or A on a card and
    "middle B" as the caption (image_half="a", fusion I+T)."""
    seed = f"{a}{middle} {b}" if middle == ":" else f"{a} {middle} {b}"
    if image_half == "b":
        img = card(b)
        return FusedCase(content_type, "template", a, middle, b, seed, "T+I", f"{a} {middle}".replace(" :", ":"),
                         (img,), MediaInput(a), MediaInput("", (img,)), {"font_size": 56})
    img = card(a)
    return FusedCase(content_type, "template", a, middle, b, seed, "I+T", f"{middle} {b}", (img,),
                     MediaInput("", (img,)), MediaInput(b), {"font_size": 56})


def record(log: StudyLog, store: MediaStore, case: FusedCase) -> int:
    def ids(blobs: tuple[MediaBlob, ...]) -> list[int]:
        out = []
        for blob in blobs:
            store.put(blob)
            out.append(media_records.add_media(log, blob, path=store.relative_path(blob)))
        return out
    return media_records.add_fused_case(log, case, {"case": ids(case.media), "part_a": ids(case.part_a.media),
                                                 "part_b": ids(case.part_b.media)}, None)
