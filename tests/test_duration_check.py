"""The fast loop's duration check (`--max-test-seconds`, tests/conftest.py) names what is slow and
only that: a slow test by its own time, a shared fixture (module or session scope) on its own, never
charged to the first test that asks for it. Run on planted tests in a copy of the suite's layout: the
conftest in `tests/` under the root, where a session is above the conftest's folder (the case a
conftest hook does not see)."""
from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent
LIMIT = 0.3  # the planted check's limit: shared fixtures may take SHARED_TIMES (5) times that, 1.5 s

PLANTED = '''
import time
import pytest

@pytest.fixture(scope="session")
def session_slow():
    time.sleep(1.8)

@pytest.fixture(scope="session")
def session_fine():
    time.sleep(0.9)

@pytest.fixture(scope="module")
def module_slow():
    time.sleep(1.8)

def test_asks_for_the_slow_session_fixture(session_slow):
    pass

def test_asks_for_a_session_fixture_within_its_allowance(session_fine):
    pass

def test_asks_for_the_slow_module_fixture(module_slow):
    pass

def test_sleeps_itself():
    time.sleep(0.6)

def test_is_quick():
    pass
'''


@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["one process", "two workers"])
def test_the_check_names_slow_tests_and_slow_shared_fixtures_each_on_its_own(tmp_path, workers):
    tests = tmp_path / "tests"
    tests.mkdir()
    for helper in ("conftest.py", "realtools.py"):
        shutil.copy(TESTS / helper, tests / helper)
    (tests / "test_planted.py").write_text(PLANTED)
    (tmp_path / "pytest.ini").write_text("[pytest]\nasyncio_mode = auto\nasyncio_default_fixture_loop_scope = function\n")
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--max-test-seconds",
                           str(LIMIT), *workers, "tests"], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    out = proc.stdout
    assert proc.returncode == 1 and "5 passed" in out, out + proc.stderr
    named = {line.strip().rsplit(":", 1)[0] for line in out.splitlines() if line.startswith("  ")}  # "  what: 1.8 s"
    assert "tests/test_planted.py::test_sleeps_itself" in named, out
    assert "session::session_slow" in named and "tests/test_planted.py::module_slow" in named, out
    # charged to nobody: the tests that asked for them, and a session fixture within its allowance
    for innocent in ("test_asks_for_the_slow_session_fixture", "test_asks_for_the_slow_module_fixture",
                     "test_asks_for_a_session_fixture_within_its_allowance", "test_is_quick", "session_fine"):
        assert not any(innocent in n for n in named), (innocent, out)
