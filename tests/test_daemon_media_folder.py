"""A study that keeps comment images (`media.keep_bytes`) writes them under the media folder beside the
log. A folder the daemon's user may not write was answered `internal` with a bare PermissionError, as
if modlens had a bug: the answer now says which folder, its permissions and who the daemon runs as,
stores nothing, and the same image is stored once the folder can be written (the client resends
`unavailable`). The folder's mode is real; as root, the daemon's worker threads run without
CAP_DAC_OVERRIDE, so they meet it as any user does."""
from __future__ import annotations

import asyncio
import base64
import ctypes
import hashlib
import io
import os
from concurrent.futures import ThreadPoolExecutor

from PIL import Image

from modlens.config import parse_study

from daemon_helpers import Client, comments_msg, connect, running_daemon
from log_helpers import rows

CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH = 1, 2
LINUX_CAPABILITY_VERSION_3 = 0x20080522


class _CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _CapData(ctypes.Structure):
    _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32), ("inheritable", ctypes.c_uint32)]


def _meet_file_modes() -> None:
    """This thread (capabilities are per thread) without the two capabilities that let root pass any
    file mode; kept in its permitted set, so nothing else about the process changes."""
    libc = ctypes.CDLL(None, use_errno=True)
    header, data = _CapHeader(LINUX_CAPABILITY_VERSION_3, 0), (_CapData * 2)()
    if libc.capget(ctypes.byref(header), data) != 0:
        raise OSError(ctypes.get_errno(), "capget")
    data[0].effective &= ~((1 << CAP_DAC_OVERRIDE) | (1 << CAP_DAC_READ_SEARCH))
    if libc.capset(ctypes.byref(header), data) != 0:
        raise OSError(ctypes.get_errno(), "capset")


def _png() -> bytes:
    out = io.BytesIO()
    Image.new("RGB", (8, 8), "white").save(out, "PNG")
    return out.getvalue()


def _media_msg(mid: str, data: bytes) -> dict:
    return {"type": "comment_media", "id": mid, "platform": "youtube", "comment_key": "c1",
            "items": [{"mime": "image/png", "sha256": hashlib.sha256(data).hexdigest(),
                       "data_b64": base64.b64encode(data).decode(), "url": None, "position": 0}]}


async def test_a_media_folder_the_daemon_may_not_write_is_said_and_nothing_is_stored(tmp_path):
    loop = asyncio.get_running_loop()
    loop.set_default_executor(ThreadPoolExecutor(initializer=_meet_file_modes if os.geteuid() == 0 else None))
    cfg = parse_study({"study_id": "media-folder", "detectors": [{"name": "profanity-check", "id": "wordlist"}],
                       "normalizer": {"enabled": False}, "perturbation": {"enabled": False},
                       "media": {"collect": True, "keep_bytes": True}})
    folder, png = tmp_path / "media", _png()
    folder.mkdir()
    folder.chmod(0o500)
    try:
        async with running_daemon(tmp_path, cfg) as (url, _app):
            async with connect(url) as ws:
                c = Client(ws)
                await c.hello()
                await c.request(comments_msg("m1", [("c1", "look at this")]), "comments_ok")
                refused = await c.request(_media_msg("x1", png))
                status = await c.request({"type": "status", "id": "s1"}, "status_ok")
                held = rows(tmp_path / "study.sqlite", "SELECT (SELECT count(*) FROM media), "
                                                       "(SELECT count(*) FROM comment_media)")
                folder.chmod(0o700)
                stored = await c.request(_media_msg("x2", png), "comment_media_ok")
    finally:
        folder.chmod(0o700)
    assert refused["type"] == "error" and refused["code"] == "unavailable", refused
    message = refused["message"]
    assert "nothing was stored" in message and f"the media folder {folder}" in message, message
    assert "not writable by this user" in message and "mode 0500" in message, message
    assert "; fix: give this user write access" in message, message  # as the CLI says a fix
    assert "PermissionError" not in message, message
    assert held == [(0, 0)]
    assert status["study_log"]["writable"] is True  # the log itself took every write
    assert stored["media"][0]["kept"] is True
    sha = hashlib.sha256(png).hexdigest()
    assert (folder / sha[:2] / f"{sha}.png").read_bytes() == png
