"""The version of a file as the per-version caches key it (`stamp`), and when a result read from it may be
kept (`settled`): the data-set caches of what is read of a data file (its digest, its encoding and delimiter,
whether it has a line of megabytes) and the hash of a model folder in a detector's version
(`detectors.base.directory_hash`).

A stamp tells two versions apart only when a write between them moves a time it holds. Timestamps come
from a clock that may be coarse: one kernel tick on Linux before 6.13, two seconds on FAT. A same-size
rewrite in place within one tick of the version read keeps the whole stamp, and a cached result would be
the old version's (a run would record as `file_digest` bytes it did not read; a changed model's scores
would carry the old version). So, as git does with its racily clean entries, a result is kept only for a
version whose times are more than `RACY_NS` before the moment it was read: a later write then gets later
times, another stamp. A file changed within that window is read again at every ask until it has settled.

That holds on a local file system, whose times come from this machine's clock, the one `settled` compares
them with. On a network file system (NFS, SMB) they come from the server's clock, which may run behind
this one, and a client serves file attributes from its cache for seconds, so a same-size rewrite there
may keep its stamp past `RACY_NS` and its old version's result be served: read a copy on a local disk."""
from __future__ import annotations

import os
from functools import lru_cache, update_wrapper
from time import time_ns
from typing import Any, Callable, Generic, TypeVar

R = TypeVar("R")

RACY_NS = 2 * 10**9  # the coarsest timestamp resolution met (FAT's two seconds), in ns


def stamp(path: str | os.PathLike[str]) -> tuple[int, ...]:
    """What tells a version of the file from another, the key of the per-version caches. Modification time
    and size alone do not: a rewrite of the same size with its old time set back keeps both, and the old
    version's result would be served. A file renamed over it has another inode; a write or time set moves
    the change time, which no user can set (all in ns, not float seconds), but only by the clock's
    resolution: a same-size rewrite within one tick of a coarse clock keeps the whole stamp, so a version
    is cached only once its times are older than that (`settled`). Its last two fields are those times."""
    st = os.stat(path)
    return st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns


def settled(version: tuple[int, ...]) -> bool:
    """Whether no later write can leave `version` (a tuple ending as a `stamp` does: the modification and
    change time in ns) as it is: both are more than `RACY_NS` in the past."""
    return max(version[-2:]) < time_ns() - RACY_NS


class PerVersion(Generic[R]):
    """`fn(path, stamp, *args)`, cached per (path, stamp, *args) once the version is `settled`; a version
    changed within `RACY_NS` of the call is computed again every time."""

    def __init__(self, fn: Callable[..., R], maxsize: int):
        self.fn, self.cached = fn, lru_cache(maxsize=maxsize)(fn)
        update_wrapper(self, fn)

    def __call__(self, path: str, stamp: tuple[int, ...], *args: Any) -> R:
        return (self.cached if settled(stamp) else self.fn)(path, stamp, *args)

    def cache_clear(self) -> None:
        self.cached.cache_clear()


def per_version(maxsize: int) -> Callable[[Callable[..., R]], PerVersion[R]]:
    """The decorator of a per-file-version cache (`PerVersion`)."""
    return lambda fn: PerVersion(fn, maxsize)
