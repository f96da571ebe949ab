from pathlib import Path

import pytest

from modlens.config import StudyConfig, StudyConfigError, parse_study
from modlens.study import load

REPO = Path(__file__).resolve().parents[1]


def test_defaults_are_valid_and_cover_the_four_attributes():
    study = load(None)
    assert [a.name for a in study.attributes] == ["formality", "respectfulness", "stereotypes", "toxicity"]
    settings = study.client_settings()
    assert settings["display"] == "blind" and {a["role"] for a in settings["anchors"]} == {"hard_to_say", "extreme"}


def test_example_study_file_validates():
    study = load(REPO / "examples" / "study.toml")
    assert study.study_id == "news-pilot" and study.sampling.mode == "deciles"


def test_errors_name_the_key_and_the_fix(tmp_path):
    bad = tmp_path / "study.toml"
    bad.write_text('detectorz = []\n[sampling]\nmode = "most"\n[perturbation]\nbudget = -1\n')
    with pytest.raises(StudyConfigError) as err:
        load(bad)
    text = str(err.value)
    assert "detectorz" in text and "remove it or check its spelling" in text
    assert "sampling.mode" in text and "use one of the allowed values" in text
    assert "perturbation.budget" in text


def test_live_rate_is_auto_by_default_a_number_or_one_clear_error():
    assert parse_study({}).perturbation.live_rate == "auto"
    assert parse_study({"perturbation": {"live_rate": 20}}).perturbation.live_rate == 20.0
    for bad in ("fast", -1, True, 10_001):
        with pytest.raises(StudyConfigError) as err:
            parse_study({"perturbation": {"live_rate": bad}})
        assert str(err.value).splitlines()[1:] == [
            f"  perturbation.live_rate: {bad!r} is not a rate",
            '    fix: give comments per second from 0 to 10000, or "auto" (the default)']


def test_duplicate_detector_keys_and_missing_anchor_role_are_refused():
    with pytest.raises(StudyConfigError, match="unique"):
        parse_study({"detectors": [{"name": "cached"}, {"name": "cached"}]})
    with pytest.raises(StudyConfigError, match="hard_to_say"):
        parse_study({"anchors": [{"key": "a", "text": "t", "role": "extreme", "rating": "toxic"}]})
    assert parse_study({"toxicity_mode": "direct", "anchors": []}).toxicity_mode == "direct"


def test_unreadable_files_are_clear(tmp_path):
    with pytest.raises(StudyConfigError, match="not found"):
        load(tmp_path / "missing.toml")
    broken = tmp_path / "broken.toml"
    broken.write_text("study_id = ")
    with pytest.raises(StudyConfigError, match="not valid TOML"):
        load(broken)
    assert isinstance(load(None), StudyConfig)


def test_author_salt_is_shared_by_every_rater_of_a_study(modlens_home):
    from modlens import pairing

    first = pairing.study_salt("pilot")
    assert first == pairing.study_salt("pilot") and first != pairing.study_salt("other")
    assert (modlens_home / "author-salt-pilot").stat().st_mode & 0o777 == 0o600
    assert parse_study({"author_salt": "x" * 16}).client_settings()["author_salt"] == "x" * 16


def test_tokens_never_start_with_a_dash(monkeypatch):
    """A token pasted after a CLI flag must not look like a flag itself."""
    from modlens import pairing

    draws = iter(["-starts-with-dash", "ok-token"])
    monkeypatch.setattr(pairing.secrets, "token_urlsafe", lambda n: next(draws))
    assert pairing.rotate() == "ok-token"


def test_decile_rates_reach_the_extension_and_bad_rates_name_the_key():
    rates = [0.05] * 5 + [0.5] * 5
    study = parse_study({"sampling": {"mode": "deciles", "decile_rates": rates}})
    assert study.client_settings()["sampling"]["decile_rates"] == rates
    with pytest.raises(StudyConfigError, match="sampling.decile_rates"):
        parse_study({"sampling": {"mode": "deciles", "decile_rates": [0.5] * 9 + [1.5]}})
    with pytest.raises(StudyConfigError, match="sampling.per_decile"):
        parse_study({"sampling": {"mode": "deciles", "per_decile": 150}})  # a percentage now
