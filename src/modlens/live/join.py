"""A study pack joined from the extension's options page (`join_study`): the message's answer, or
the `join_refused` error naming what to do. The policy (only signed packs, remote detectors off)
is `modlens.study.join`'s; the transport sends the answer, then restarts on the new study when
the answer says `restarting`."""
from __future__ import annotations

import logging
import re

from modlens import protocol as p
from modlens.config import StudyConfig
from modlens.errors import with_fix
from modlens.protocol import ErrorCode, ProtocolError
from modlens.study.join import JoinError, join_from_extension
from modlens.study.pack import PACK_MAX_BYTES

log = logging.getLogger("modlens.daemon")

# The options page sends a whole pack in one `join_study`, which `modlens join` reads up to
# PACK_MAX_BYTES: the pack is a JSON string inside the frame, where escaping (\" \\ \n) at most
# doubles its bytes, plus room for the id and file name
JOIN_FRAME_BYTES = 2 * PACK_MAX_BYTES + 64 * 1024
# the message's first key, as the extension's builder writes it: a `type` nested further in,
# or a message of another type, never gets the larger limit
_JOIN_START = re.compile(r'\A\s*\{\s*"type"\s*:\s*"join_study"')


def is_join_frame(raw: str | bytes) -> bool:
    """Whether a frame starts as a `join_study` message (looks at its first bytes only)."""
    head = raw[:256]
    if isinstance(head, bytes):
        head = head.decode("utf-8", "replace")
    return bool(_JOIN_START.match(head))


def join_study(msg: p.JoinStudy, running: StudyConfig, *, can_join: bool) -> p.JoinStudyOk:
    """Join the pack in `msg` while `running` is served. `can_join` False: the study is fixed
    (`modlens serve --config`), so joining is refused with how to change it."""
    if not can_join:
        raise ProtocolError(ErrorCode.join_refused, f"this daemon serves study {running.study_id!r} given with "
                            "--config; stop it, run `modlens join STUDY.modlens` and start `modlens serve` "
                            "without --config", msg.id)
    try:
        joined = join_from_extension(msg.pack, msg.file_name, replace=msg.replace, running_study_id=running.study_id)
    except JoinError as err:
        raise ProtocolError(ErrorCode.join_refused, with_fix(err), msg.id) from None
    pack = joined.pack
    log.info("joined study %s from the extension (%s)", pack.study_id, "unchanged" if joined.unchanged else "restarting")
    return p.JoinStudyOk(id=msg.id, study_id=pack.study_id, title=pack.study.title, tasks=len(pack.study.tasks),
                         restarting=not joined.unchanged, signer=joined.signer, remote_off=joined.remote_off)
