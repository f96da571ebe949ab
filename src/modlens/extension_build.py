"""The browser extension as shipped: where its files are, and the store archives built from them.

Both stores get the same code; only manifest.json differs. Chromium runs the background as a
service worker and warns on Firefox's keys; Firefox runs MV3 backgrounds as event pages
(`background.scripts`), ignores `service_worker`, and needs `browser_specific_settings.gecko.id`.
"""
from __future__ import annotations

import copy
import json
import os
import zipfile
from importlib import resources
from pathlib import Path
from typing import Any

from modlens.errors import ErrorKind, ModlensError

# manifest.json as json.loads gives it: an object whose values are any JSON
Manifest = dict[str, Any]

BROWSERS = ("chromium", "firefox")
ARCHIVE_SUFFIX = {"chromium": "zip", "firefox": "xpi"}
# never shipped: tests and tooling, and seed.json (written per profile by `modlens browse`: it holds a token)
EXCLUDED_DIRS = {"test", "tests", "node_modules"}
EXCLUDED_FILES = {"seed.json"}
# earliest time a zip can hold: with it (and sorted entries) two builds give the same bytes
FIXED_TIME = (1980, 1, 1, 0, 0, 0)


def source_folder() -> Path:
    """The unpacked extension: package data `modlens/extension/` in an installed wheel, else
    `extension/` of the checkout these sources sit in (editable installs)."""
    try:
        manifest = resources.files("modlens.extension").joinpath("manifest.json")
        if isinstance(manifest, Path) and manifest.is_file():
            return manifest.parent
    except ModuleNotFoundError:  # setuptools' editable finder cannot import a data-only folder mapped from outside src/
        pass
    for parent in Path(__file__).resolve().parents:
        if (parent / "extension" / "manifest.json").is_file():
            return parent / "extension"
    raise FileNotFoundError("the extension is not installed with modlens and no extension/ folder is next to "
                            "its sources; reinstall modlens or pass the extension folder explicitly")


def check_source(source: Path) -> None:
    if not (source / "manifest.json").is_file():
        raise FileNotFoundError(f"{source} is not an unpacked extension (no manifest.json)")


def package_files(source: Path) -> list[str]:
    """Relative POSIX paths of the files that ship, sorted (dotfiles, tests and seed.json left out)."""
    check_source(source)
    found = []
    for path in source.rglob("*"):
        rel = path.relative_to(source)
        if (path.is_file() and not any(part.startswith(".") for part in rel.parts)
                and not EXCLUDED_DIRS.intersection(rel.parts[:-1]) and rel.name not in EXCLUDED_FILES):
            found.append(rel.as_posix())
    return sorted(found)


def manifest_for(browser: str, manifest: Manifest) -> Manifest:
    """The source manifest as `browser`'s store wants it."""
    result = copy.deepcopy(manifest)
    background = result.get("background", {})
    if browser == "chromium":
        # Chromium warns on Firefox-only keys; an MV3 background there is one service worker
        result.pop("browser_specific_settings", None)
        if background:
            if "service_worker" not in background:
                raise ValueError("manifest.json: background.service_worker is missing (Chromium needs it)")
            background.pop("scripts", None)
    elif browser == "firefox":
        if not result.get("browser_specific_settings", {}).get("gecko", {}).get("id"):
            raise ValueError("manifest.json: browser_specific_settings.gecko.id is missing (Firefox needs it)")
        if background:
            worker = background.pop("service_worker", None)  # ignored by Firefox, and lint warns
            if worker and not background.get("scripts") and not background.get("page"):
                background["scripts"] = [worker]
    else:
        raise ValueError(f"unknown browser {browser!r}; expected one of {', '.join(BROWSERS)}")
    return result


def archive_name(browser: str, manifest: Manifest) -> str:
    return f"modlens-extension-{manifest.get('version', '0')}-{browser}.{ARCHIVE_SUFFIX[browser]}"


class ArchiveNotWritten(ModlensError):
    """An archive that could not be written whole: which file, and that what was at its name is kept."""
    kind = ErrorKind.FAILED


def write_archive(source: Path, target: Path, browser: str) -> Path:
    """One store archive: every shipped file as is, manifest.json rewritten for `browser`. Written
    beside `target` and renamed once whole, so a build that stops part-way (a file it cannot read,
    a full disk) leaves no truncated archive under the store name, and the one built before whole."""
    manifest = json.loads((source / "manifest.json").read_text(encoding="utf-8"))
    tweaked = (json.dumps(manifest_for(browser, manifest), indent=2, ensure_ascii=False) + "\n").encode()
    partial = target.with_name(target.name + ".part")
    reading: Path | None = None  # the source file being read, when a read is what failed
    try:
        with zipfile.ZipFile(partial, "w") as archive:
            for rel in package_files(source):
                info = zipfile.ZipInfo(rel, date_time=FIXED_TIME)
                info.compress_type = zipfile.ZIP_DEFLATED
                info.create_system = 3  # unix, whatever builds it, so the mode bits below mean the same
                info.external_attr = 0o644 << 16
                reading = source / rel
                data = tweaked if rel == "manifest.json" else reading.read_bytes()
                reading = None
                archive.writestr(info, data)
        os.replace(partial, target)
    except OSError as err:
        partial.unlink(missing_ok=True)
        kept = "the archive there before was left as it was" if target.exists() else "nothing was written there"
        what = f"cannot read {reading}" if reading else f"cannot write {target}"
        raise ArchiveNotWritten(f"{what}: {err.strerror or err}; {kept}") from err
    return target


def build(source: Path, out: Path, browsers: tuple[str, ...] = BROWSERS) -> list[Path]:
    """Write one archive per browser into `out` (created if missing); returns their paths."""
    check_source(source)
    if out.exists() and not out.is_dir():
        raise NotADirectoryError(f"{out} exists and is not a folder")
    out.mkdir(parents=True, exist_ok=True)
    manifest = json.loads((source / "manifest.json").read_text(encoding="utf-8"))
    return [write_archive(source, out / archive_name(b, manifest), b) for b in browsers]
