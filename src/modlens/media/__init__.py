"""Media beside the text: the images, audio and video that a comment carries or that a fused
test case (DUO, docs/FUSION.md) is made of. A `MediaBlob` is bytes with their kind and MIME
type, identified by their SHA-256; a `MediaInput` is what a media-aware detector scores: a
text (a caption or comment, possibly empty) with the media shown beside it."""
from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from functools import cached_property
from typing import Literal

from modlens.errors import ModlensError

MediaKind = Literal["image", "audio", "video"]
MEDIA_KINDS: tuple[str, ...] = ("image", "audio", "video")

# MIME type -> (kind, file extension); the only types modlens reads or writes
MIME_TYPES: dict[str, tuple[str, str]] = {
    "image/png": ("image", ".png"),
    "image/jpeg": ("image", ".jpg"),
    "image/gif": ("image", ".gif"),
    "image/webp": ("image", ".webp"),
    "audio/wav": ("audio", ".wav"),
    "video/mp4": ("video", ".mp4"),
}

# leading bytes -> MIME type (checked in order; WebP and WAV share the RIFF prefix)
_MAGIC: tuple[tuple[bytes, int, str], ...] = (
    (b"\x89PNG\r\n\x1a\n", 0, "image/png"),
    (b"\xff\xd8\xff", 0, "image/jpeg"),
    (b"GIF87a", 0, "image/gif"),
    (b"GIF89a", 0, "image/gif"),
    (b"WEBP", 8, "image/webp"),
    (b"WAVE", 8, "audio/wav"),
    (b"ftyp", 4, "video/mp4"),
)


class MediaError(ModlensError, ValueError):
    """Bytes that are not a media type modlens handles, or over a size cap."""


def sniff_mime(data: bytes) -> str:
    """The MIME type from the bytes themselves (a page's or a file name's claim is not trusted)."""
    for magic, offset, mime in _MAGIC:
        if data[offset:offset + len(magic)] == magic:
            return mime
    raise MediaError(f"unrecognized media bytes (starts {data[:12]!r}); "
                     f"modlens reads {', '.join(MIME_TYPES)}")


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@dataclass(frozen=True)
class MediaBlob:
    """One image, sound or video. `mime` is checked against the bytes on creation."""
    data: bytes = field(repr=False)
    mime: str
    source_url: str | None = None  # where a page showed it (comment media); None for generated media

    def __post_init__(self) -> None:
        if self.mime not in MIME_TYPES:
            raise MediaError(f"unsupported media type {self.mime!r}; modlens reads {', '.join(MIME_TYPES)}")
        actual = sniff_mime(self.data)
        if actual != self.mime:
            raise MediaError(f"bytes are {actual}, not the declared {self.mime}")

    @classmethod
    def from_bytes(cls, data: bytes, source_url: str | None = None) -> "MediaBlob":
        return cls(data, sniff_mime(data), source_url)

    @property
    def kind(self) -> str:
        return MIME_TYPES[self.mime][0]

    @property
    def extension(self) -> str:
        return MIME_TYPES[self.mime][1]

    @cached_property
    def sha256(self) -> str:
        return sha256_hex(self.data)


@dataclass(frozen=True)
class MediaInput:
    """What a media-aware detector scores: a text with the media shown beside it. A plain text
    comment is `MediaInput(text)`; an image-only reply is `MediaInput("", (image,))`."""
    text: str = ""
    media: tuple[MediaBlob, ...] = ()

    def of_kind(self, kind: str) -> tuple[MediaBlob, ...]:
        return tuple(m for m in self.media if m.kind == kind)
