"""The shared wiring: detector loading reports the same way everywhere."""
from __future__ import annotations

from modlens.config import DetectorConfig
from modlens.detectors.base import DetectorStatus
from modlens.services.detectors import describe, load_detectors


def test_describe_appends_the_fix_and_never_eats_the_message():
    # the old `.rstrip(" —fix:")` stripped characters, turning "…h.pdf" into "…h.pd"
    assert describe(DetectorStatus("d", "error", "weights missing: see paper h.pdf")) == "weights missing: see paper h.pdf"
    assert describe(DetectorStatus("d", "error", "no model: ")) == "no model: "
    assert describe(DetectorStatus("d", "missing_weights", "no weights", "run `modlens fetch`")) == \
        "no weights; fix: run `modlens fetch`"


def test_a_detector_that_cannot_load_becomes_a_status():
    loaded = load_detectors([DetectorConfig(name="profanity-check"), DetectorConfig(name="no-such-detector")])
    try:
        assert list(loaded.detectors) == ["profanity-check"]
        assert [s.status for s in loaded.statuses] == ["loaded", "error"]
        assert "no-such-detector" in loaded.unavailable
        (line,) = loaded.warnings()
        assert line.startswith("detector no-such-detector not loaded (error): ")
    finally:
        loaded.close()
