"""A study pack joined from the extension's options page (`join_study`): the message's answer, or
the `join_refused` error naming what to do. The policy (only signed packs, remote detectors off)
is `modlens.study.join`'s; the transport sends the answer, then restarts on the new study when
the answer says `restarting`: when the pack differs from the one the daemon started on (`StartedOn`,
read with the study it serves, in one snapshot: `live.run.served_study`), not from the one joined
on disk, which a `modlens join` at a terminal may have changed since."""
from __future__ import annotations

import logging
import re
from dataclasses import dataclass, field
from typing import Any

from modlens import protocol as p
from modlens.config import StudyConfig
from modlens.errors import with_fix
from modlens.protocol import ErrorCode, ProtocolError
from modlens.study.folder import changed_study_files
from modlens.study.join import all_destinations, join_from_extension
from modlens.study.join_recovery import JoinError
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


@dataclass(frozen=True)
class StartedOn:
    """The joined pack a daemon serves: its sha256 and the remote destinations accepted for it, as
    `joined-study.json` said in the snapshot the daemon's study was read from. A join of this very pack (with the same
    destinations) changes nothing the daemon runs; any other one needs a restart. `study_files`: the
    digests of the study's files taken before the daemon read them (`study.folder.study_file_digests`;
    empty: not known): a join that leaves them otherwise (a hand edit the daemon read, written over
    with the pack's own files) needs a restart too."""
    pack_sha256: str
    accepted_remote: tuple[str, ...]
    study_files: dict[str, str | None] = field(default_factory=dict, compare=False, hash=False)


def started_on(record: dict[str, Any] | None) -> StartedOn | None:
    """The pack a daemon serving the joined study `record` describes started on (None: no joined
    study). `record` is the joined-study.json read under the join's lock with the study files
    served (`live.run.served_study`), never apart from them: a join landing between two reads would
    make the daemon serve one pack while it takes itself to run another."""
    if record is None:
        return None
    return StartedOn(record["pack_sha256"], tuple(sorted(record.get("accepted_remote") or [])))


def join_study(msg: p.JoinStudy, running: StudyConfig, *, can_join: bool,
               running_pack: StartedOn | None = None) -> p.JoinStudyOk:
    """Join the pack in `msg` while `running` is served, started on `running_pack` (None: on no
    joined pack). `can_join` False: the study is fixed (`modlens serve --config`), so joining is
    refused with how to change it."""
    if not can_join:
        raise ProtocolError(ErrorCode.join_refused, f"this daemon serves study {running.study_id!r} given with "
                            "--config; stop it, run `modlens join STUDY.modlens` and start `modlens serve` "
                            "without --config", msg.id)
    try:
        joined = join_from_extension(msg.pack, msg.file_name, replace=msg.replace)
    except JoinError as err:
        raise ProtocolError(ErrorCode.join_refused, with_fix(err), msg.id) from None
    pack = joined.pack
    # what the join wrote, against what the daemon runs (in memory, since its start), not against
    # the files on disk: a terminal join may have changed them meanwhile
    now = StartedOn(pack.sha256, tuple(sorted(all_destinations(pack.study) - set(joined.remote_off))))
    # and the study's files, which the join wrote, against those the daemon read at its start
    restarting = now != running_pack or bool(running_pack and changed_study_files(running_pack.study_files))
    log.info("joined study %s from the extension (%s)", pack.study_id, "restarting" if restarting else "unchanged")
    return p.JoinStudyOk(id=msg.id, study_id=pack.study_id, title=pack.study.title, tasks=len(pack.study.tasks),
                         restarting=restarting, signer=joined.signer, remote_off=joined.remote_off)
