"""`modlens extension build`: the store archives hold exactly the shipped files, each browser gets
the manifest its store wants, two builds give the same bytes, and Mozilla's linter finds no error."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import zipfile
from pathlib import Path

import pytest

from modlens import extension_build
from modlens.cli import main
from realtools import requires

REPO = Path(__file__).resolve().parents[1]
SOURCE = REPO / "extension"
WEB_EXT = REPO / "node_modules" / ".bin" / "web-ext"


def build(tmp_path: Path, source: Path = SOURCE, name: str = "out") -> dict[str, Path]:
    archives = extension_build.build(source, tmp_path / name)
    return {a.suffix: a for a in archives}


def manifest_in(archive: Path) -> dict:
    with zipfile.ZipFile(archive) as z:
        return json.loads(z.read("manifest.json"))


def referenced_files(manifest: dict) -> set[str]:
    """Every file the manifest points at: background, content scripts, pages, icons."""
    background = manifest.get("background", {})
    files = set(background.get("scripts", [])) | ({background["service_worker"]} if "service_worker" in background else set())
    for script in manifest.get("content_scripts", []):
        files |= set(script.get("js", [])) | set(script.get("css", []))
    files |= {manifest["action"]["default_popup"], manifest["options_ui"]["page"], *manifest["icons"].values()}
    return files


def test_cli_writes_both_archives_and_prints_paths_and_sizes(tmp_path, capsys):
    assert main(["extension", "build", "--out", str(tmp_path / "dist")]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    version = json.loads((SOURCE / "manifest.json").read_text())["version"]
    names = sorted(Path(line.split("\t")[0]).name for line in lines)
    assert names == [f"modlens-extension-{version}-chromium.zip", f"modlens-extension-{version}-firefox.xpi"]
    for line in lines:
        path, size = line.split("\t")
        assert size == f"{Path(path).stat().st_size:,} bytes"


def test_cli_builds_one_browser_on_request(tmp_path, capsys):
    assert main(["extension", "build", "--out", str(tmp_path / "out"), "--browser", "firefox"]) == 0
    assert [p.suffix for p in (tmp_path / "out").iterdir()] == [".xpi"]


def test_archives_hold_every_shipped_file_and_nothing_else(tmp_path):
    source = tmp_path / "extension"
    shutil.copytree(SOURCE, source)
    (source / "seed.json").write_text('{"token": "secret"}')  # what `modlens browse` leaves in a profile copy
    (source / "test").mkdir(exist_ok=True)
    (source / "test" / "extra.test.js").write_text("// test only")
    (source / "node_modules" / "pkg").mkdir(parents=True)
    (source / "node_modules" / "pkg" / "index.js").write_text("// tooling")
    (source / ".DS_Store").write_bytes(b"\0")
    expected = sorted(p.relative_to(SOURCE).as_posix() for p in SOURCE.rglob("*")
                      if p.is_file() and "test" not in p.relative_to(SOURCE).parts[:-1])
    for archive in build(tmp_path, source).values():
        with zipfile.ZipFile(archive) as z:
            names = z.namelist()
            assert names == expected  # sorted, no seed.json, tests, node_modules or dotfiles
            assert z.testzip() is None
            for name in names:
                if name != "manifest.json":
                    assert z.read(name) == (SOURCE / name).read_bytes()
            assert referenced_files(json.loads(z.read("manifest.json"))) <= set(names)


def test_each_browser_gets_the_manifest_its_store_wants(tmp_path):
    source = json.loads((SOURCE / "manifest.json").read_text())
    archives = build(tmp_path)
    chromium, firefox = manifest_in(archives[".zip"]), manifest_in(archives[".xpi"])

    assert "browser_specific_settings" not in chromium
    assert chromium["background"] == {k: v for k, v in source["background"].items() if k != "scripts"}
    assert "service_worker" in chromium["background"]

    assert firefox["browser_specific_settings"]["gecko"]["id"] == source["browser_specific_settings"]["gecko"]["id"]
    assert "service_worker" not in firefox["background"]
    assert firefox["background"]["scripts"][-1] == source["background"]["service_worker"]

    # everything else is the same code and the same permissions in both
    for key in set(source) - {"background", "browser_specific_settings"}:
        assert chromium[key] == firefox[key] == source[key], key


def test_manifest_tweaks_cover_a_service_worker_only_manifest_and_refuse_what_a_store_rejects():
    worker_only = {"manifest_version": 3, "background": {"service_worker": "bg.js"},
                   "browser_specific_settings": {"gecko": {"id": "x@example.org"}}}
    assert extension_build.manifest_for("firefox", worker_only)["background"] == {"scripts": ["bg.js"]}
    assert worker_only["background"] == {"service_worker": "bg.js"}  # the source manifest is left alone
    with pytest.raises(ValueError, match="gecko.id"):
        extension_build.manifest_for("firefox", {"background": {"scripts": ["bg.js"]}})
    with pytest.raises(ValueError, match="service_worker"):
        extension_build.manifest_for("chromium", {"background": {"scripts": ["bg.js"]}})
    with pytest.raises(ValueError, match="unknown browser"):
        extension_build.manifest_for("safari", worker_only)


def test_build_is_reproducible_whatever_the_file_times(tmp_path):
    first = build(tmp_path, name="first")
    source = tmp_path / "extension"
    shutil.copytree(SOURCE, source)
    for path in source.rglob("*"):
        os.utime(path, (1_900_000_000, 1_900_000_000))
    second = build(tmp_path, source, name="second")
    for suffix in (".zip", ".xpi"):
        assert first[suffix].read_bytes() == second[suffix].read_bytes()


def test_bad_input_gives_a_clear_error(tmp_path, capsys):
    not_a_folder = tmp_path / "file.txt"
    not_a_folder.write_text("x")
    assert main(["extension", "build", "--out", str(not_a_folder)]) == 2
    assert "is not a folder" in capsys.readouterr().err
    assert main(["extension", "build", "--out", str(tmp_path / "o"), "--source", str(tmp_path)]) == 2
    assert "no manifest.json" in capsys.readouterr().err
    assert not (tmp_path / "o").exists()


def test_path_prints_the_extension_this_install_uses(capsys):
    assert main(["extension", "path"]) == 0
    assert (Path(capsys.readouterr().out.strip()) / "manifest.json").is_file()


@requires("web-ext")
def test_web_ext_lint_finds_no_error_in_the_firefox_build(tmp_path):
    """Mozilla's own linter (what addons.mozilla.org runs on a submission) on the .xpi's contents."""
    unpacked = tmp_path / "firefox"
    with zipfile.ZipFile(build(tmp_path)[".xpi"]) as z:
        z.extractall(unpacked)
    quiet = {**os.environ, "NO_UPDATE_NOTIFIER": "1"}  # no network check for a newer web-ext
    done = subprocess.run([str(WEB_EXT), "lint", "--source-dir", str(unpacked), "--output", "json",
                           "--no-config-discovery"], capture_output=True, text=True, timeout=120, env=quiet)
    try:
        report = json.loads(done.stdout)
    except json.JSONDecodeError:
        pytest.fail(f"web-ext lint gave no JSON report (exit {done.returncode}):\n{done.stdout}\n{done.stderr}")
    errors = [f"{m['code']} {m.get('file', '')}: {m['message']}" for m in report["errors"]]
    assert errors == [], "web-ext lint errors in the Firefox build:\n" + "\n".join(errors)
    assert report["summary"]["errors"] == 0


def test_a_build_that_fails_part_way_leaves_the_archive_that_was_there_whole(tmp_path, capsys):
    """A file that could not be read part-way through an archive stopped the build with the archive
    written up to that file under its store name, in place of the one built before: a truncated
    zip that looked like a build. The archive is now written beside it and renamed once whole."""
    source = tmp_path / "extension"
    shutil.copytree(SOURCE, source, ignore=shutil.ignore_patterns(*extension_build.EXCLUDED_DIRS))
    out = tmp_path / "dist"
    assert main(["extension", "build", "--out", str(out), "--source", str(source), "--browser", "chromium"]) == 0
    built = {p.name: p.read_bytes() for p in out.iterdir()}
    (source / "zz-unreadable.js").symlink_to("/proc/self/mem")  # a regular file whose read fails (EIO)
    assert main(["extension", "build", "--out", str(out), "--source", str(source), "--browser", "chromium"]) == 1
    err = capsys.readouterr().err
    assert "zz-unreadable.js" in err and "the archive there before was left as it was" in err
    assert {p.name: p.read_bytes() for p in out.iterdir()} == built
