"""Images attached to live comments (`comment_media`, docs/EXTENSION.md "Comment media"): the
checks the daemon makes before anything is written, and the choice of detectors that score them.
The extension fetched the images itself; the daemon never fetches from the web, and trusts
nothing it is told about the bytes: the type comes from their magic numbers, the hash is redone.
"""
from __future__ import annotations

import base64
import binascii
import re

from modlens.config import MediaConfig, StudyConfig
from modlens.detectors.base import Detector
from modlens.media import MediaBlob, MediaError

from modlens import protocol as p
from modlens.protocol import ErrorCode, ProtocolError

# room for the JSON around one image's base64 (ids, key, url, hash)
FRAME_OVERHEAD_BYTES = 64 * 1024
_MEDIA_TYPE = re.compile(r'"type"\s*:\s*"comment_media"')


def b64_len(n_bytes: int) -> int:
    return 4 * ((n_bytes + 2) // 3)


def media_frame_bytes(study: StudyConfig) -> int:
    """The largest frame accepted: a `comment_media` frame of a study that collects media may
    carry one image of `media.max_bytes` (base64); every other frame keeps `max_message_bytes`."""
    limit = study.limits.max_message_bytes
    if not study.media.collect:
        return limit
    return max(limit, b64_len(study.media.max_bytes) + FRAME_OVERHEAD_BYTES)


def is_media_frame(raw: str | bytes) -> bool:
    """Whether a frame says it is a `comment_media` message (looks at its first 4 KiB only)."""
    head = raw[:4096]
    if isinstance(head, bytes):
        head = head.decode("utf-8", "replace")
    return bool(_MEDIA_TYPE.search(head))


def decode_items(msg: p.CommentMedia, media: MediaConfig) -> list[tuple[int, MediaBlob]]:
    """(position, blob) of each item, or the ProtocolError that says what is wrong with which."""
    if not media.collect:
        raise ProtocolError(ErrorCode.media_not_collected,
                            "this study does not collect images attached to comments (media.collect is off); "
                            "nothing was logged", msg.id)
    if len(msg.items) > media.max_per_comment:
        raise ProtocolError(ErrorCode.invalid_fields, f"items: {len(msg.items)} images, the study takes at most "
                            f"{media.max_per_comment} per comment (media.max_per_comment)", msg.id)
    positions = [it.position for it in msg.items]
    if len(set(positions)) != len(positions):
        raise ProtocolError(ErrorCode.invalid_fields, f"items: positions {positions} repeat", msg.id)
    out = []
    for i, item in enumerate(msg.items):
        if len(item.data_b64) > b64_len(media.max_bytes) + 4:
            raise ProtocolError(ErrorCode.too_large, f"items.{i}.data_b64: the image is over the study's "
                                f"{media.max_bytes} bytes (media.max_bytes)", msg.id)
        try:
            data = base64.b64decode(item.data_b64, validate=True)
        except (binascii.Error, ValueError):
            raise ProtocolError(ErrorCode.invalid_fields, f"items.{i}.data_b64: not valid base64", msg.id) from None
        if len(data) > media.max_bytes:
            raise ProtocolError(ErrorCode.too_large, f"items.{i}.data_b64: {len(data)} bytes, the study takes at "
                                f"most {media.max_bytes} (media.max_bytes)", msg.id)
        url = None if item.url is None or item.url.startswith("data:") else item.url
        try:
            blob = MediaBlob(data, item.mime, url)
        except MediaError as err:
            raise ProtocolError(ErrorCode.invalid_fields, f"items.{i}.mime: {err}", msg.id) from None
        if blob.sha256 != item.sha256:
            raise ProtocolError(ErrorCode.invalid_fields, f"items.{i}.sha256: the bytes hash to {blob.sha256}, "
                                f"not {item.sha256} (damaged in transit?)", msg.id)
        out.append((item.position, blob))
    return out


def media_detector_keys(media: MediaConfig, detectors: dict[str, Detector]) -> list[str]:
    """`media.detectors` (those loaded), else every loaded detector that reads images."""
    if media.detectors is not None:
        return [k for k in media.detectors if k in detectors]
    return [k for k, d in detectors.items() if "image" in getattr(d, "modalities", ("text",))]
