"""A study log judges each detector version at one threshold: the `detectors` row keeps the one it
was first registered with, and reports, the attack section and every decision read from the log
use it. A later run asking the same version for another threshold was registered silently under
the first, so the report judged at 0.5 scores the audit and its attacks had judged at 0.7. Such a
run is refused before it writes anything, naming both thresholds."""
from __future__ import annotations

import pytest

from modlens.cli import main
from modlens.studylog.connection import StudyLogError
from modlens.studylog.store import StudyLog

from log_helpers import rows

STUDY = '[[detectors]]\nname = "profanity-check"\n{options}'


def test_the_same_version_at_another_threshold_is_refused(tmp_path):
    with StudyLog(tmp_path / "log.sqlite") as log:
        first = log.ensure_detector("d", "v1", "toxicity", 0.5, {})
        assert log.ensure_detector("d", "v1", "toxicity", 0.5, {}) == first  # the same: the same row
        with pytest.raises(StudyLogError) as err:
            log.ensure_detector("d", "v1", "toxicity", 0.7, {})
        assert "0.5" in err.value.message and "0.7" in err.value.message and err.value.fix
        assert log.ensure_detector("d", "v2", "toxicity", 0.7, {}) != first  # another version: its own


def test_an_audit_at_another_threshold_into_the_same_log_is_refused_and_writes_nothing(data_dir, tmp_path, capsys):
    nh, db = data_dir / "noisyhate" / "dev.csv", tmp_path / "log.sqlite"
    default, strict = tmp_path / "default.toml", tmp_path / "strict.toml"
    default.write_text(STUDY.format(options=""), encoding="utf-8")
    strict.write_text(STUDY.format(options="options = { threshold = 0.7 }\n"), encoding="utf-8")
    assert main(["audit", str(nh), "--db", str(db), "--config", str(default), "--limit", "20", "--quiet"]) == 0
    before = rows(db, "SELECT count(*) FROM run_items")
    capsys.readouterr()
    code = main(["audit", str(nh), "--db", str(db), "--config", str(strict), "--limit", "40", "--quiet"])
    err = capsys.readouterr().err
    assert code != 0 and "Traceback" not in err
    assert "profanity-check" in err and "0.5" in err and "0.7" in err
    assert rows(db, "SELECT count(*) FROM run_items") == before
    assert rows(db, "SELECT DISTINCT threshold FROM detectors WHERE name = 'profanity-check'") == [(0.5,)]
