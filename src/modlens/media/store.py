"""Content-addressed media files under a study's data folder: `<root>/<sha[:2]>/<sha><ext>`.
The same bytes are stored once whoever brings them (a generated case, a comment's image)."""
from __future__ import annotations

import os
import tempfile
from pathlib import Path

from modlens.errors import ErrorKind
from modlens.media import MIME_TYPES, MediaBlob, MediaError, sniff_mime
from modlens.paths import home
from modlens.studylog.connection import file_permissions


def default_media_root() -> Path:
    return home() / "media"


class MediaFolderRefused(MediaError):
    """The media folder's mode or owner refuses this user: no free space would help. Names the folder
    that refused (the parent of what the OS named), its owner and mode, and who modlens runs as."""
    kind = ErrorKind.FAILED

    def __init__(self, root: Path, err: PermissionError) -> None:
        folder = Path(err.filename).parent if err.filename else root
        permissions, user = file_permissions(folder)
        super().__init__(f"the media folder {root} is not writable by this user ({folder}: {permissions}; modlens "
                         f"runs as {user})", fix="give this user write access to it (`chmod u+w`, `chown`)")


class MediaStore:
    def __init__(self, root: str | Path | None = None) -> None:
        self.root = Path(root) if root is not None else default_media_root()

    def relative_path(self, blob: MediaBlob) -> str:
        """The path the study log records (relative, so a study folder can move)."""
        return f"{blob.sha256[:2]}/{blob.sha256}{blob.extension}"

    def path(self, blob: MediaBlob) -> Path:
        return self.root / self.relative_path(blob)

    def put(self, blob: MediaBlob) -> Path:
        """Writes the bytes once (atomically: a crash leaves no half file) and returns the path;
        MediaFolderRefused when the folder's mode or owner refuses this user."""
        target = self.path(blob)
        if target.exists():
            return target
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=".tmp-")
        except PermissionError as err:
            raise MediaFolderRefused(self.root, err) from None
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(blob.data)
            os.replace(tmp, target)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        return target

    def get(self, sha256: str) -> MediaBlob:
        """The stored blob with this hash; MediaError when this store does not hold it."""
        folder = self.root / sha256[:2]
        for ext in {e for _, e in MIME_TYPES.values()}:
            p = folder / f"{sha256}{ext}"
            if p.is_file():
                data = p.read_bytes()
                return MediaBlob(data, sniff_mime(data))
        raise MediaError(f"no media {sha256[:12]}… under {self.root}")
