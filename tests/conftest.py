"""Shared test fixtures. Data sets are read from ../shared/data (never copied into the repo);
MODLENS_SHARED_DATA overrides the location."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED_DATA = Path(os.environ.get("MODLENS_SHARED_DATA", REPO.parent / "shared" / "data"))


@pytest.fixture(scope="session")
def shared_data() -> Path:
    if not SHARED_DATA.is_dir():
        pytest.skip(f"shared data not found at {SHARED_DATA} (set MODLENS_SHARED_DATA)")
    return SHARED_DATA


@pytest.fixture(autouse=True)
def modlens_home(tmp_path, monkeypatch) -> Path:
    """Every test gets its own MODLENS_HOME so tokens, logs and runtime files never leak."""
    home = tmp_path / "modlens-home"
    home.mkdir()
    monkeypatch.setenv("MODLENS_HOME", str(home))
    return home
