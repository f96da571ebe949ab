"""A study pack joined from the extension's options page (`join_study`): the message's answer, or
the `join_refused` error naming what to do. The policy (only signed packs, remote detectors off)
is `modlens.study.join`'s; the transport sends the answer, then restarts on the new study when
the answer says `restarting`."""
from __future__ import annotations

import logging

from modlens import protocol as p
from modlens.config import StudyConfig
from modlens.errors import with_fix
from modlens.protocol import ErrorCode, ProtocolError
from modlens.study.join import JoinError, join_from_extension

log = logging.getLogger("modlens.daemon")


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
