"""A detector option its plug-in does not take is refused where the study is checked (`study check`,
`study pack`, `join`), not only when `serve` builds the detector on every participant's computer,
where it was a detector "error" after the study had been said ok and shipped. A detector that
takes any option (`**options`: perspective, http, an installed plug-in written so) is not refused."""
from __future__ import annotations

import pytest

from modlens.cli import main as cli_main
from modlens.config import StudyConfigError, parse_study
from modlens.detectors import registry as detectors
from test_study_pack_trust import make_folder


def test_study_check_and_pack_refuse_an_option_the_detector_does_not_take(tmp_path, modlens_home, capsys):
    root = make_folder(tmp_path, '[[detectors]]\nname = "profanity-check"\nid = "strict"\noptions = { threshhold = 0.7 }\n')
    out = tmp_path / "pilot.modlens"
    assert cli_main(["study", "check", str(root)]) == 2
    captured = capsys.readouterr()
    assert "ok:" not in captured.out
    assert "detectors.0.options.threshhold" in captured.err and "did you mean threshold?" in captured.err
    assert cli_main(["study", "pack", str(root), "--out", str(out)]) == 2
    assert not out.exists()


def test_options_are_checked_against_what_create_takes_and_any_option_is_taken_by_kwargs():
    with pytest.raises(StudyConfigError, match=r"detectors\.1\.options\.bogus_opt: detector minilm-toxicity takes "
                                               r"no option 'bogus_opt'"):
        parse_study({"detectors": [{"name": "profanity-check", "options": {"threshold": 0.5}},
                                   {"name": "minilm-toxicity", "options": {"bogus_opt": 3, "batch_size": 8}}]})
    assert detectors.unknown_options("minilm-toxicity", {"batch_size": 8, "head": "x"}) == []
    # perspective and http take **options: their own create says what it accepts
    assert detectors.unknown_options("perspective", {"anything": 1}) == []
    assert detectors.unknown_options("http", {"url": "http://127.0.0.1:9/", "score_path": "s", "extra": 1}) == []
    parse_study({"detectors": [{"name": "perspective", "options": {"whatever": 1}}]})


def test_the_options_of_a_wrapped_detector_are_checked_too():
    # ocr and asr build the text detector they wrap at serve: a typo there failed the same way
    with pytest.raises(StudyConfigError, match=r"detectors\.0\.options\.text_options\.batchsize: detector "
                                               r"minilm-toxicity takes no option 'batchsize'"):
        parse_study({"detectors": [{"name": "ocr", "options": {"text_detector": "minilm-toxicity",
                                                               "text_options": {"batchsize": 8}}}]})
    with pytest.raises(StudyConfigError, match=r"detectors\.0\.options\.text_detector: unknown detector "
                                               r"'minilm-toxicty'"):
        parse_study({"detectors": [{"name": "ocr", "options": {"text_detector": "minilm-toxicty"}}]})
    parse_study({"detectors": [{"name": "ocr", "options": {"text_detector": "asr", "text_options": {
        "text_detector": "minilm-toxicity", "text_options": {"batch_size": 8}}}}]})
