"""Test fixtures shared by every test. Data sets come from the copies shipped inside the package
(`src/modlens/datasets/data/`), so a clone or an installed wheel tests the same data."""
from __future__ import annotations

from pathlib import Path

import pytest

from modlens.paths import shipped_data

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="session")
def data_dir() -> Path:
    """The shipped data folder: noisyhate/, hatecheck/, davidson/."""
    return shipped_data()


@pytest.fixture(autouse=True)
def modlens_home(tmp_path, monkeypatch) -> Path:
    """Every test gets its own MODLENS_HOME so tokens, logs and runtime files never leak."""
    home = tmp_path / "modlens-home"
    home.mkdir()
    monkeypatch.setenv("MODLENS_HOME", str(home))
    return home
