"""Test fixtures shared by every test, and the one place the suite's markers are applied.

Data sets come from the copies shipped inside the package (`src/modlens/datasets/data/`), so a
clone or an installed wheel tests the same data.

Markers (declared in pyproject.toml, applied by `pytest_collection_modifyitems` below):
- `browser`: the test drives a real Chromium or Firefox (it uses the e2e `playwright_instance`, or
  requires one of the browsers);
- `realtool`: it runs a tool outside the venv, `requires(tool)` (tests/realtools.py); where the tool
  is missing it is skipped, and under `CI=true` that skip fails the run unless the tool is in
  `realtools.CI_MAY_LACK`;
- `gpu`: it needs a CUDA device (`requires("gpu")`);
- `model`: it loads a real neural model (the session's MiniLM, or a module in `MODEL_MODULES`);
- `slow`: listed in `SLOW` below, with why. `make test-fast` runs `not browser and not slow and not
  realtool`, and with `--max-test-seconds` a test outside that list that takes longer fails the run,
  named (the fast loop stays fast).
"""
from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
import realtools

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


# --- the session's MiniLM -------------------------------------------------------------------------

@pytest.fixture(scope="session")
def minilm():
    """One `minilm-toxicity` for the whole session (its load is 10 s cold): tests that only score
    with it share it; a test that changes a detector builds its own."""
    from modlens.detectors import registry
    return registry.create("minilm-toxicity")


@pytest.fixture(scope="session", autouse=True)
def _minilm_weights_read_once():
    """MiniLM's weights are read from disk once per session: every detector built on the embedded encoder
    in this process (a test's own, an audit's, an in-process daemon's) gets the same read-only module.
    Nothing writes to it: the int8 twin quantizes a copy, a detector's close() only drops its reference.
    Tokenizers are not shared (one used from two threads at once fails). Only where the collected tests
    already imported transformers: a run of a few quick tests does not pay its import."""
    if "transformers" not in sys.modules:
        yield
        return
    import torch
    import transformers
    from modlens.detectors.minilm import default_model_dir

    if torch.cuda.is_available():  # an encoder on CUDA converts its module in place (half, to)
        yield
        return
    load = transformers.AutoModel.from_pretrained.__func__
    shared = str(default_model_dir())
    cache: dict[str, object] = {}

    def from_pretrained(cls, path, *args, **kwargs):
        if str(path) != shared or args or kwargs:
            return load(cls, path, *args, **kwargs)
        if path not in cache:
            cache[path] = load(cls, path)
        return cache[path]

    mp = pytest.MonkeyPatch()
    mp.setattr(transformers.AutoModel, "from_pretrained", classmethod(from_pretrained))
    yield
    mp.undo()


# --- markers, applied in one place ----------------------------------------------------------------

# Tests slower than the fast loop's limit, by node id prefix, with what makes them slow: real servers,
# real tools, whole studies. Measured per test with `--durations` on the shared 2-core machine.
SLOW: dict[str, str] = {
}

# Modules whose tests load a real neural model themselves (besides the `minilm` fixture's users).
MODEL_MODULES: tuple[str, ...] = (
)
MODEL_FIXTURES = ("minilm",)
BROWSERS = {"chromium", "firefox-esr"}
# fixtures that stand for a tool (they call realtools.need): a test using one is marked with the tool
FIXTURE_TOOLS: dict[str, tuple[str, ...]] = {
    "playwright_instance": ("chromium",),  # every e2e browser fixture starts from it
    "tesseract": ("tesseract",), "text_font": ("text-font",), "emoji_font": ("emoji-font",),
}


def _ci() -> bool:
    return os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no")


def pytest_addoption(parser):
    parser.addoption("--max-test-seconds", type=float, default=None,
                     help="fail the run, naming them, when tests not marked slow take longer than this (setup, "
                          "call and teardown together); `make test-fast` sets it")


def pytest_collection_modifyitems(config, items):
    for item in items:
        names = set(item.fixturenames)
        for fixture in names & FIXTURE_TOOLS.keys():
            item.add_marker(realtools.requires(*FIXTURE_TOOLS[fixture]))
        tools = [t for mark in item.iter_markers("realtool") for t in mark.args]
        if BROWSERS & set(tools):
            item.add_marker(pytest.mark.browser)
        if "gpu" in tools:
            item.add_marker(pytest.mark.gpu)
        if MODEL_FIXTURES and names & set(MODEL_FIXTURES) or item.nodeid.startswith(MODEL_MODULES):
            item.add_marker(pytest.mark.model)
        if any(item.nodeid.startswith(prefix) for prefix in SLOW):
            item.add_marker(pytest.mark.slow)
        reason = realtools.skip_reason(tuple(dict.fromkeys(tools)))
        if reason:
            item.add_marker(pytest.mark.skip(reason=reason))


# --- what a run must not hide: skips under CI, slow tests in the fast loop --------------------------

_skipped: dict[str, str] = {}
_seconds: dict[str, float] = {}


def _ci_may_skip(reason: str) -> bool:
    """A skip for missing tools, all of them ones CI may lack (realtools.CI_MAY_LACK)."""
    if not reason.startswith(realtools.SKIP_PREFIX):
        return False
    tools = reason[len(realtools.SKIP_PREFIX):].split(":", 1)[0]
    return all(t.strip() in realtools.CI_MAY_LACK for t in tools.split(","))


def pytest_runtest_logreport(report):
    _seconds[report.nodeid] = _seconds.get(report.nodeid, 0.0) + report.duration
    if report.skipped and not hasattr(report, "wasxfail"):
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
        _skipped[report.nodeid] = reason.removeprefix("Skipped: ")


def _problems(session) -> list[str]:
    out = []
    if _ci():
        hidden = {n: r for n, r in _skipped.items() if not _ci_may_skip(r)}
        if hidden:
            out.append(f"CI=true: {len(hidden)} tests skipped; CI must run them (or list the tool in "
                       "tests/realtools.py's CI_MAY_LACK, with why):")
            out += [f"  {n}: {r}" for n, r in sorted(hidden.items())]
    limit = session.config.getoption("--max-test-seconds")
    if limit is not None:
        slow = {item.nodeid: _seconds[item.nodeid] for item in session.items
                if item.nodeid in _seconds and _seconds[item.nodeid] > limit and not item.get_closest_marker("slow")
                and item.nodeid not in _skipped}
        if slow:
            out.append(f"{len(slow)} tests not marked slow took over {limit:g} s (make them faster, or list them in "
                       "tests/conftest.py's SLOW with why):")
            out += [f"  {n}: {s:.1f} s" for n, s in sorted(slow.items(), key=lambda kv: -kv[1])]
    return out


def pytest_sessionfinish(session, exitstatus):
    session.config.stash[_PROBLEMS] = problems = _problems(session)
    if problems and session.exitstatus == 0:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    for line in config.stash.get(_PROBLEMS, []):
        terminalreporter.write_line(line, red=not line.startswith("  "), bold=not line.startswith("  "))


_PROBLEMS = pytest.StashKey[list]()
