"""The live service with its resources, for a daemon's lifetime: started in order and stopped in
reverse, the study-log writer (drained last), the engine (its detectors and batchers), the
service itself (study, detectors, calibration items and the item set recorded), and recovery
(`recovery.py`). `check_study` refuses what would fail there before anything starts."""
from __future__ import annotations

import asyncio
import atexit
import logging
import os
import shutil
import stat
import tempfile
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, AsyncIterator

from modlens.config import StudyConfig
from modlens.detectors.base import Detector
from modlens.engine import Engine
from modlens.live.recovery import recovering
from modlens.live.service import LiveService
from modlens.media.store import MediaStore
from modlens.services.detectors import describe
from modlens.study import assignment, calibration, itemset
from modlens.studylog.store import LogWriter

if TYPE_CHECKING:
    from modlens.live.join import StartedOn

# the daemon's log: its lines pass the daemon's secret scrubber (`modlens.protocol.security`)
log = logging.getLogger("modlens.daemon")

# The daemon's study-log page cache, MiB. The writer's 64 MiB (`studylog.connection.CACHE_SIZE_KIB`) is
# sized for corpus-scale ingest; in the daemon it filled for as long as the log grew, at 6 MiB a minute
# per 100 comments/s, so RSS still rose 20 minutes into a soak at GPU rates (docs/PERFORMANCE.md
# "What grows in a soak"). The daemon's transactions are a page's rows; 16 MiB fills in its first minutes.
DAEMON_CACHE_MIB = 16


@dataclass
class LiveOptions:
    """How the service runs (`modlens.daemon.app.create_app` builds it from its keyword arguments)."""
    db_path: Path
    detectors: dict[str, Detector] | None = None  # None: load the study's detectors
    engine: Engine | None = None                  # a prebuilt engine (not closed by the service)
    batch_delay_ms: float = 10.0
    writer_max_batch: int = 256
    writer_max_delay_ms: float = 20.0
    writer_cache_mib: int = DAEMON_CACHE_MIB  # the writer's SQLite page cache (see DAEMON_CACHE_MIB)
    variant_concurrency: int = 1
    # where comment images are kept when the study keeps their bytes (None: `media/` beside the log)
    media_root: Path | None = None
    # the folder of the study file: its itemset.json + assignment.json, if any (study/assignment.py)
    study_dir: Path | None = None
    # study_dir's item set and assignment as `check_study` read them (None: read them at start)
    plan: assignment.Plan | None = None


def check_study(study: StudyConfig, study_dir: Path | None) -> assignment.Plan | None:
    """Refuse, before any resource starts, calibration items and an item set that do not fit the study;
    the item set and assignment checked (None: none), which the service can start on unread again."""
    calibration.calibration_items(study)
    return assignment.load_plan(study_dir, study) if study_dir is not None else None


@asynccontextmanager
async def running(study: StudyConfig, options: LiveOptions) -> AsyncIterator[LiveService]:
    """The service with its resources, for as long as the block runs (this module's docstring)."""
    writer = LogWriter(options.db_path, max_batch=options.writer_max_batch, max_delay_ms=options.writer_max_delay_ms,
                       cache_kib=max(1, options.writer_cache_mib) * 1024)
    await writer.start()
    try:
        engine = options.engine
        if engine is None:  # loading models blocks for seconds; keep the loop free meanwhile
            engine = await asyncio.get_running_loop().run_in_executor(
                None, lambda: Engine(study, options.detectors, max_delay_ms=options.batch_delay_ms))
        try:
            for s in engine.statuses:
                if s.status != "loaded":
                    log.warning("detector %s not loaded (%s): %s", s.name, s.status, describe(s))
            plan = options.plan  # as checked (create_app); else read now
            if plan is None and options.study_dir is not None:
                plan = assignment.load_plan(options.study_dir, study)
            service = LiveService(study, engine, writer, variant_concurrency=options.variant_concurrency,
                                  media_store=MediaStore(options.media_root or options.db_path.parent / "media"),
                                  plan=plan)
            try:
                await service.prepare()
                async with recovering(service):
                    yield service
            finally:
                await service.close()  # the variant worker, before the engine's batchers stop
        finally:
            if options.engine is None:
                await engine.close()
    finally:
        await writer.stop()  # drains queued writes and commits before the process exits


def served_study(config: str | None, *,
                 perspective_only: bool = False) -> tuple[StudyConfig, Path | None, list[str], StartedOn | None]:
    """The study `modlens serve` serves, the folder whose itemset.json and assignment.json go with
    it, what to print about it (where it came from, then what is off), and the joined pack it comes
    from (`live.join.StartedOn`, None: no joined study): the --config study (a
    study.toml or its folder, read with its side files), else the joined one (`modlens join` writes
    the pack's set beside it), else the embedded defaults (no folder). Without --config,
    `perspective_only` adds every production attribute of the Perspective API (all offline).

    A modlens home's files (the joined study's, or a home given as --config) are read as one snapshot
    under the join's lock (`study.join_recovery.settled`): no join lands between these reads, and the folder
    returned holds copies of the item set and assignment taken then (`_snapshot`), which the daemon
    loads when its app starts, whatever a join changed in the home since. A joined home is served as
    joined whatever names it (`study.join.as_joined`, with the joined-study.json read in the snapshot):
    remote detectors the participant did not accept stay off, and the consent text says so. The
    StartedOn returned is made from that same record, so it names the pack of the study served even
    when a join lands right before or after the snapshot."""
    import modlens.study
    from modlens import paths
    from modlens.live.join import started_on
    from modlens.study.folder import load_folder
    from modlens.study.join import as_joined, joined, joined_study_file
    from modlens.study.join_recovery import is_joined_home, settled

    if config is not None:
        root = Path(config)
        home = root if root.is_dir() else root.parent
        if not is_joined_home(home):
            folder = load_folder(config)
            return folder.study, folder.path, [], None
    else:
        home = paths.home()
    with settled(home):
        record = joined(home)
        source = Path(config) if config is not None else joined_study_file()
        study, study_dir, lines, pack = modlens.study.load(source), None, [], None
        if source is not None and record is not None:
            pack = started_on(record)
            # a pack's: remote detectors the participant did not accept stay off, and the consent text says so
            study, off = as_joined(study, str(source), record)
            lines = [f"study from {source} (modlens join)", *off]
        if source is not None:
            check_study(study, home)  # a refusal names the home's files, not the copies
            study_dir = _snapshot(home)
    if perspective_only and config is None:
        from modlens.perspective.attributes import with_every_production_attribute

        study = with_every_production_attribute(study)
    return study, study_dir, lines, pack


SNAPSHOT_PREFIX = "modlens-joined-study-"  # then the pid of the daemon that made it, '-' and mkdtemp's suffix


def _snapshot(home: Path) -> Path | None:
    """Copies of the item set and assignment in `home` (the caller holds the join's lock), in a folder
    named after this process (one per start: a restart on a join makes another), removed when it
    exits (atexit); a daemon killed (SIGKILL) leaves its folders, which the next snapshot of this
    user removes (`_remove_snapshots_of_the_dead`). None: the home has neither."""
    files = {name: (home / name).read_bytes() for name in (itemset.FILE, assignment.FILE) if (home / name).is_file()}
    if not files:
        return None
    _remove_snapshots_of_the_dead()
    snapshot = Path(tempfile.mkdtemp(prefix=f"{SNAPSHOT_PREFIX}{os.getpid()}-"))
    atexit.register(shutil.rmtree, snapshot, True)
    for name, data in files.items():
        (snapshot / name).write_bytes(data)
    return snapshot


def _remove_snapshots_of_the_dead() -> None:
    """Remove this user's snapshot folders whose daemon is gone (no process has its pid). A folder
    of a live process, of another user, or named otherwise (an older modlens's) is left."""
    for folder in Path(tempfile.gettempdir()).glob(f"{SNAPSHOT_PREFIX}*-*"):
        pid = folder.name[len(SNAPSHOT_PREFIX):].partition("-")[0]
        try:
            st = folder.lstat()
            if not pid.isdigit() or st.st_uid != os.getuid() or not stat.S_ISDIR(st.st_mode):
                continue
            os.kill(int(pid), 0)
        except ProcessLookupError:  # its daemon is gone: it never ran its atexit
            shutil.rmtree(folder, ignore_errors=True)
        except (OSError, OverflowError):  # alive (another user's pid), gone meanwhile, or digits no pid can be
            continue
