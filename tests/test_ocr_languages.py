"""Which Tesseract languages are installed (`tesseract --list-langs`): the ocr detector loads only
when its `lang` is among them. A listing Tesseract did not finish (a non-zero exit) is no listing:
its lines must not be taken as languages, nor its absence as "no language data"."""
from __future__ import annotations

import os
import stat

import pytest
from realtools import requires

from modlens.detectors import registry
from modlens.detectors.ocr import installed_languages
from modlens.media.ocr import OcrUnavailable, tesseract_version

# a Tesseract that crashes part-way through its listing (the version still answers): the signal kills
# the process itself, which then prints nothing more ("Segmentation fault" is a shell's line, not its)
CRASHING = """#!/bin/sh
if [ "$1" = "--version" ]; then echo "tesseract 5.3.0"; exit 0; fi
echo 'List of available languages in "/usr/share/tesseract-ocr/5/tessdata/" (2):'
echo eng
kill -SEGV $$
"""
# one that cannot start its listing at all: nothing on stdout, a message on stderr
FAILING = """#!/bin/sh
if [ "$1" = "--version" ]; then echo "tesseract 5.3.0"; exit 0; fi
echo "tesseract: error while loading shared libraries: libtesseract.so.5: cannot open shared object file" >&2
exit 127
"""


@pytest.fixture
def fake_tesseract(tmp_path, monkeypatch):
    """Puts a `tesseract` script (a real process) first on the PATH; returns a function taking its text."""
    def install(script: str) -> None:
        path = tmp_path / "tesseract"
        path.write_text(script, encoding="utf-8")
        path.chmod(path.stat().st_mode | stat.S_IXUSR)
        monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ.get('PATH', '')}")
        tesseract_version.cache_clear()

    yield install
    tesseract_version.cache_clear()  # the real one's version for the tests after


@requires("tesseract")
def test_the_real_listing_gives_the_language_codes_and_nothing_else():
    langs = installed_languages()
    assert "eng" in langs, langs
    assert not any(" " in code or code.startswith("List of") for code in langs), langs


@pytest.mark.parametrize("script, said", [(CRASHING, "killed by signal SIGSEGV"),
                                          (FAILING, "exit 127): tesseract: error while loading shared libraries")])
def test_a_listing_that_exits_non_zero_is_an_error_not_a_set_of_languages(fake_tesseract, script, said):
    fake_tesseract(script)
    with pytest.raises(OcrUnavailable) as err:
        installed_languages()
    assert f"tesseract failed ({said}" in str(err.value) and "--list-langs" in err.value.fix, err.value
    # what `modlens detectors` and `modlens serve` say of the ocr detector: not loaded, and why
    st = registry.status("ocr", text_detector="profanity-check")
    assert st.status != "loaded" and said in st.message, st
    assert "no Tesseract language data" not in st.message and "tesseract-ocr-eng" not in st.fix, st
