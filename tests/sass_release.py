"""Stand-ins for SASS's released files. SASS has no licence, so no copy ships, and tests write files
in its released layouts instead; but a file is the data set `sass` only with the released bytes (the
catalog pins their SHA-256, `datasets.base.catalog_name`), and any other is named by its content.
A test whose files stand in for the release pins their hashes for its duration with `as_released`."""
from __future__ import annotations

import dataclasses
import hashlib
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator
from unittest import mock

from modlens.datasets.catalog import CATALOG


@contextmanager
def as_released(*paths: Path) -> Iterator[None]:
    """While inside: the catalog takes these files' bytes (as they are now) for SASS's own."""
    entry = CATALOG["sass"]
    pins = tuple((Path(p).name, hashlib.sha256(Path(p).read_bytes()).hexdigest()) for p in paths)
    with mock.patch.dict(CATALOG, {"sass": dataclasses.replace(entry, shipped_sha256=entry.shipped_sha256 + pins)}):
        yield
