"""The package is the product: the sdist carries the extension and the shipped data, the wheel built
from it installs into a fresh virtual environment, and `modlens` works there with no checkout.

The fresh environment gets modlens from the wheel only (`--no-deps`); its dependencies (torch,
transformers, …) come from this environment's site-packages through a .pth line, which adds the
folder without running its own .pth files, so the editable modlens installed there cannot leak in."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import tarfile
import zipfile
from pathlib import Path

import pytest

from modlens import __version__, extension_build

REPO = Path(__file__).resolve().parents[1]
SDIST_ROOT = f"modlens-{__version__}"
pytestmark = pytest.mark.slow


def backend(hook: str, out: Path, cwd: Path) -> Path:
    """Call setuptools' build backend as pip or `python -m build` would, without network or isolation."""
    code = f"from setuptools import build_meta; print(build_meta.{hook}({str(out)!r}))"
    done = subprocess.run([sys.executable, "-c", code], cwd=cwd, capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, done.stderr[-3000:]
    return out / done.stdout.strip().splitlines()[-1]


@pytest.fixture(scope="module")
def dist(tmp_path_factory) -> dict[str, Path]:
    """sdist from the checkout, then the wheel from the unpacked sdist (so the sdist must be complete)."""
    out = tmp_path_factory.mktemp("dist")
    sdist = backend("build_sdist", out, REPO)
    with tarfile.open(sdist) as tar:
        tar.extractall(out / "unpacked", filter="data")
    wheel = backend("build_wheel", out, out / "unpacked" / SDIST_ROOT)
    return {"sdist": sdist, "wheel": wheel}


def fresh_venv(where: Path, wheel: Path) -> Path:
    """A new virtual environment with `wheel` installed; returns its bin/ folder."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(where)], check=True, timeout=120)
    python = where / "bin" / "python"
    subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install", "-q", "--no-deps",
                    "--no-index", str(wheel)], check=True, timeout=180)
    site = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                          capture_output=True, text=True, check=True).stdout.strip()
    ours = {sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]}
    (Path(site) / "modlens-test-deps.pth").write_text("\n".join(sorted(ours)) + "\n")
    return where / "bin"


def run_in(bin_dir: Path, cwd: Path, *argv: str) -> str:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env.update(MODLENS_HOME=str(cwd / "home"), PATH=f"{bin_dir}{os.pathsep}{env.get('PATH', '')}", PYTHONNOUSERSITE="1")
    done = subprocess.run([str(bin_dir / argv[0]), *argv[1:]], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=180)
    assert done.returncode == 0, f"{argv} exited {done.returncode}:\n{done.stderr[-3000:]}"
    return done.stdout


def test_sdist_carries_the_extension_and_the_shipped_data(dist):
    with tarfile.open(dist["sdist"]) as tar:
        names = {n.removeprefix(SDIST_ROOT + "/") for n in tar.getnames()}
    assert {"setup.py", "pyproject.toml", "extension/manifest.json"} <= names
    assert {f"extension/{f}" for f in extension_build.package_files(REPO / "extension")} <= names
    shipped = REPO / "src" / "modlens" / "datasets" / "data"
    assert {p.relative_to(REPO).as_posix() for p in shipped.rglob("*") if p.is_file()} <= names
    assert "src/modlens/datasets/data/noisyhate/dev.csv" in names


def test_wheel_ships_exactly_the_extension_files_and_the_data(dist):
    with zipfile.ZipFile(dist["wheel"]) as z:
        names = set(z.namelist())
    in_wheel = {n.removeprefix("modlens/extension/") for n in names if n.startswith("modlens/extension/")}
    assert in_wheel == set(extension_build.package_files(REPO / "extension"))  # no tests, no node_modules
    assert "modlens/daemon/app.py" in names
    for dataset in ("noisyhate/dev.csv", "noisyhate/LICENSE", "hatecheck/test_suite_cases.csv", "davidson/labeled_data.csv"):
        assert f"modlens/datasets/data/{dataset}" in names


def test_wheel_and_store_archives_leave_out_the_same_files(dist, tmp_path):
    """Files added to extension/ later ship in the wheel exactly when the store build ships them."""
    tree = tmp_path / SDIST_ROOT
    shutil.copytree(dist["sdist"].parent / "unpacked" / SDIST_ROOT, tree)
    extras = {"lib/notes.txt": True, "icons/logo.svg": True, "seed.json": False, "lib/seed.json": False,
              "test/a.test.js": False, "lib/test/b.js": False, "node_modules/x/c.js": False,
              ".eslintrc.json": False, ".git/config": False}
    for name in extras:
        (tree / "extension" / name).parent.mkdir(parents=True, exist_ok=True)
        (tree / "extension" / name).write_text("{}")
    with zipfile.ZipFile(backend("build_wheel", tmp_path, tree)) as z:
        in_wheel = {n.removeprefix("modlens/extension/") for n in z.namelist() if n.startswith("modlens/extension/")}
    assert in_wheel == set(extension_build.package_files(tree / "extension"))
    assert {name for name, shipped in extras.items() if shipped} <= in_wheel
    assert not {name for name, shipped in extras.items() if not shipped} & in_wheel


def test_installed_wheel_works_without_a_checkout(dist, tmp_path):
    bin_dir = fresh_venv(tmp_path / "venv", dist["wheel"])
    work = tmp_path / "work"
    work.mkdir()

    where = json.loads(run_in(bin_dir, work, "python", "-c", "import json, modlens, modlens.extension_build as e; "
                              "print(json.dumps([modlens.__file__, str(e.source_folder())]))"))
    for path in where:
        assert Path(path).is_relative_to(tmp_path / "venv"), f"{path} is not from the installed wheel"

    command = run_in(bin_dir, work, "modlens", "browse", "--print-command", "--browser", sys.executable,
                     "--daemon", "ws://127.0.0.1:8765/ws", "https://www.youtube.com/watch?v=abc").split()
    assert command[0] == sys.executable and command[-1] == "https://www.youtube.com/watch?v=abc"
    loaded = Path(next(a for a in command if a.startswith("--load-extension=")).split("=", 1)[1])
    assert loaded.is_relative_to(work / "home")
    assert json.loads((loaded / "manifest.json").read_text())["manifest_version"] == 3
    assert json.loads((loaded / "seed.json").read_text())["daemonUrl"] == "ws://127.0.0.1:8765/ws"

    scores = json.loads(run_in(bin_dir, work, "modlens", "score", "--detector", "minilm-toxicity",
                               "you are a stupid idiot").splitlines()[0])
    minilm = scores["scores"]["minilm-toxicity"]
    assert minilm["name"] == "minilm-toxicity" and minilm["version"]
    assert 0.5 < minilm["toxicity"] <= 1.0

    normalized = json.loads(run_in(bin_dir, work, "modlens", "normalize", "st*pid").splitlines()[0])
    assert normalized["normalized"] == "stupid"

    printed = run_in(bin_dir, work, "modlens", "extension", "build", "--out", str(work / "store")).splitlines()
    assert sorted(Path(line.split("\t")[0]).suffix for line in printed) == [".xpi", ".zip"]


def test_editable_install_uses_the_checkout_extension(tmp_path):
    """`pip install -e .` (development): the extension is the checkout's folder, edits show at once."""
    editable = backend("build_editable", tmp_path, REPO)
    bin_dir = fresh_venv(tmp_path / "venv", editable)
    work = tmp_path / "work"
    work.mkdir()
    module = run_in(bin_dir, work, "python", "-c", "import modlens; print(modlens.__file__)").strip()
    assert Path(module) == REPO / "src" / "modlens" / "__init__.py"
    assert Path(run_in(bin_dir, work, "modlens", "extension", "path").strip()) == REPO / "extension"
