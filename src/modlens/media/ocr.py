"""Reading the text in an image with Tesseract (Debian `tesseract-ocr`), through its command
line: no Python binding to install, and the engine's own version goes into the detector version."""
from __future__ import annotations

import functools
from dataclasses import dataclass

from modlens.errors import ErrorKind, ModlensError
from modlens.media import MediaBlob
from modlens.media.programs import INSTALL_FIXES, program_version, run_program

INSTALL_FIX = INSTALL_FIXES["tesseract"]
TIMEOUT_S = 60


class OcrUnavailable(ModlensError, RuntimeError):
    kind = ErrorKind.FAILED
    fix: str    # always one

    def __init__(self, message: str, fix: str = INSTALL_FIX) -> None:
        super().__init__(message, fix)


@dataclass(frozen=True)
class OcrText:
    text: str                  # words in reading order, lines joined by spaces
    confidence: float | None   # mean word confidence in [0, 1]; None when no word was read
    n_words: int


@functools.lru_cache(maxsize=1)
def tesseract_version() -> str:
    """e.g. "5.3.0" (first line of `tesseract --version`)."""
    return program_version("tesseract", OcrUnavailable)


def read_text(image: MediaBlob | bytes, *, lang: str = "eng", psm: int = 11, grey: bool = False) -> OcrText:
    """The words Tesseract finds in an image. psm 11 ("sparse text") finds words anywhere on
    the picture, as in memes and captions over photos; 6 reads one uniform block. `grey`: the
    picture is converted to greyscale first (docs/FUSION.md measures when that reads better)."""
    data = image.data if isinstance(image, MediaBlob) else image
    if grey:
        data = greyscale_png(data)
    out = run_program("tesseract", ["stdin", "stdout", "-l", lang, "--psm", str(psm), "tsv"], stdin=data,
                      unavailable=OcrUnavailable, timeout_s=TIMEOUT_S, timeout_fix="use smaller images",
                      failure_fix=f"check that the tesseract language data for {lang!r} is installed "
                                  f"(apt-get install tesseract-ocr-{lang})")
    return parse_tsv(out.decode("utf-8", "replace"))


def parse_tsv(tsv: str) -> OcrText:
    """Tesseract's TSV (level 5 rows are words, with a 0-100 confidence) as text in reading order."""
    lines: dict[tuple[int, int, int, int], list[str]] = {}
    confs: list[float] = []
    for row in tsv.splitlines()[1:]:
        cols = row.split("\t")
        if len(cols) < 12 or cols[0] != "5" or not cols[11].strip():
            continue
        key = (int(cols[1]), int(cols[2]), int(cols[3]), int(cols[4]))
        lines.setdefault(key, []).append(cols[11].strip())
        conf = float(cols[10])
        if conf >= 0:
            confs.append(conf / 100)
    words = [w for key in sorted(lines) for w in lines[key]]
    return OcrText(" ".join(words), sum(confs) / len(confs) if confs else None, len(words))


def greyscale_png(data: bytes) -> bytes:
    """The picture as an 8-bit greyscale PNG (transparency flattened onto white)."""
    import io

    from PIL import Image

    with Image.open(io.BytesIO(data)) as im:
        rgba = im.convert("RGBA")
    flat = Image.new("RGBA", rgba.size, (255, 255, 255, 255))
    flat.alpha_composite(rgba)
    out = io.BytesIO()
    flat.convert("L").save(out, format="PNG")
    return out.getvalue()
