"""Every place a study's detectors may send data is found, shown at join and in the consent text, and
left off until the participant accepts it (the holes a review of its data flow found):

- a wrapper detector (ocr, asr, any detector whose options name another detector and its options)
  is as remote as the detector it wraps: the real `modlens join` and `modlens serve` on a pack whose
  `ocr` detector wraps an `http` one, with a real HTTP endpoint standing in for a collector;
- any URL-like option value that is not loopback is a destination;
- an installed plug-in detector cannot be checked: remote unless its module declares
  `SENDS_DATA = False` (CONTRIBUTING.md's worked example does), installed as `pip install` would.
"""
from __future__ import annotations

import pytest

from modlens.cli import main as cli_main
from modlens.config import StudyConfigError, parse_study
from modlens.detectors import dataflow
from modlens.detectors import registry as detectors
from modlens.study import join
from test_plugins import install, install_broken, install_example
from test_study_pack_trust import Collector, make_folder, run_serve_and_feed


@pytest.fixture
def collector():
    c = Collector()
    yield c
    c.server.stop()


def study(*dets: dict, **extra) -> object:
    return parse_study({"detectors": list(dets), "study_id": "s", **extra})


def ocr_wrapping_http(base: str) -> str:
    return ('[[detectors]]\nname = "ocr"\nid = "pictures"\n'
            f'options = {{ text_detector = "http", text_options = {{ url = "{base}/collect", score_path = "score" }} }}\n')


# --- a wrapper around a remote detector -------------------------------------------------------

def test_a_wrapped_remote_detector_is_shown_at_join_named_in_the_consent_and_off_until_accepted(
        tmp_path, modlens_home, capsys, collector):
    base = collector.server.base
    root = make_folder(tmp_path, ocr_wrapping_http(base))
    out = tmp_path / "pilot.modlens"
    assert cli_main(["study", "pack", str(root), "--out", str(out)]) == 0
    capsys.readouterr()

    assert cli_main(["join", str(out), "--allow-unsigned"]) == 0
    said = capsys.readouterr().out
    assert f"pictures (ocr): sends each comment to {base}" in said and "(ocr): runs on this computer" not in said
    assert "remote detectors stay off" in said
    served = run_serve_and_feed(tmp_path / "off.sqlite", modlens_home)
    assert collector.requests == []
    assert "detector pictures: off" in served["log"]
    consent = served["hello"]["study"]["consent_text"]
    assert "pictures is off" in consent and base in consent

    assert cli_main(["join", str(out), "--allow-unsigned", "--accept-remote"]) == 0
    assert f"remote detectors on: comments go to {base}" in capsys.readouterr().out
    served = run_serve_and_feed(tmp_path / "on.sqlite", modlens_home)
    assert [r["body"] for r in collector.requests] == [{"text": "you are a wonderful person"}]
    consent = served["hello"]["study"]["consent_text"]
    assert f"sent, to be scored, to: {base} (detector pictures)" in consent
    assert "no comment is sent anywhere else" not in consent


def test_nested_detectors_are_followed_at_any_depth_and_their_secrets_are_read_too():
    s = study({"name": "asr", "id": "a", "options": {"text_detector": "perspective"}},
              {"name": "ocr", "id": "o", "options": {"text_detector": "minilm-toxicity", "text_options": {}}},
              secrets={"names": ["PERSPECTIVE_API_KEY"]})
    assert s.destinations() == {"a": ["https://commentanalyzer.googleapis.com"]}
    assert s.secret_reads() == {"a": ["PERSPECTIVE_API_KEY"]}
    assert "googleapis.com (detector a)" in s.data_flow_notice()
    # a nested key variable is an environment read like a top-level one: refused unless declared
    undeclared = study({"name": "ocr", "options": {"text_detector": "perspective",
                                                   "text_options": {"api_key_env": "HOME"}}})
    assert [p.message.split(":")[0] for p in undeclared.undeclared_env()] == ["detectors[ocr].options.text_options.api_key_env"]
    # wrappers of wrappers, and any option pair `<x>detector` + `<x>options`
    deep = {"name": "ocr", "options": {"text_detector": "asr", "text_options": {
        "text_detector": "http", "text_options": {"url": "https://deep.example/x"}}}}
    assert dataflow.destinations(deep["name"], deep["options"]) == ["https://deep.example"]
    assert dataflow.destinations("ocr", {"fallback_detector": "http", "fallback_options": {"url": "http://b.example:81/"}}) \
        == ["http://b.example:81"]
    # a nested name nobody can check (not a built-in, not installed) is not taken as local
    assert dataflow.destinations("ocr", {"text_detector": "no-such-detector"}) \
        == ["unknown detector 'no-such-detector' (cannot be checked)"]


def test_any_url_like_option_value_that_is_not_loopback_is_a_destination():
    s = study({"name": "cached", "id": "c", "options": {"path": "https://data.example/scores.csv"}},
              {"name": "hf-classifier", "id": "h", "options": {"model": "org/model", "label_map": {
                  "mirror": "see https://user:pw@mirror.example:8443/m?k=1 first"}}},
              {"name": "cached", "id": "loop", "options": {"path": "http://127.0.0.1:8000/s.csv", "mappings": [
                  ["http://localhost/x", "http://[::1]:9/"], ["file:///tmp/s.csv", "http://127.8.9.1/"],
                  ["https://api.localhost/", "score"]]}})
    assert s.destinations() == {"c": ["https://data.example"], "h": ["https://mirror.example:8443"]}
    notice = s.data_flow_notice()
    assert "https://data.example (detector c)" in notice and "pw" not in notice
    assert "no comment is sent anywhere else" not in notice
    # a declared endpoint counts even on loopback: it is where that detector posts every comment
    assert study({"name": "http", "options": {"url": "http://127.0.0.1:9/c"}}).destinations() == {"http": ["http://127.0.0.1:9"]}
    assert study({"name": "minilm-toxicity"}).destinations() == {}
    # a malformed authority is shown as written, never an error (nor taken for loopback)
    assert dataflow.destinations("cached", {"p": "see http://[::1/x"}) == ["http://[::1"]
    assert dataflow.destinations("http", {"url": "http://[oops/c?k=1"}) == ["http://[oops"]


def test_as_joined_leaves_a_detector_off_unless_every_place_it_sends_to_was_accepted(modlens_home):
    s = study({"name": "ocr", "id": "o", "options": {"text_detector": "http", "text_options": {
        "url": "https://one.example/a", "fallback": "https://two.example/b"}}}, {"name": "minilm-toxicity"})
    run, lines = join.as_joined(s, "study.toml")
    assert [d.key for d in run.detectors] == ["minilm-toxicity"]
    assert len(lines) == 1 and "detector o: off" in lines[0] and "https://one.example" in lines[0]
    assert "https://two.example" in lines[0]


# --- installed plug-ins -------------------------------------------------------------------------

UNDECLARED = '''"""relay: scores by asking a service somewhere (declares nothing)."""
from modlens.detectors.base import Detector


def create(**options):
    raise NotImplementedError
'''


@pytest.fixture
def plugins(tmp_path, monkeypatch):
    site = install_broken(install_example(tmp_path / "site"))
    install(site, "modlens-relay", "1.2", {"relay_plugin.py": UNDECLARED,
                                           "truthy_plugin.py": UNDECLARED + "SENDS_DATA = 0\n"},
            {"modlens.detectors": {"relay": "relay_plugin", "truthy": "truthy_plugin"}})
    monkeypatch.syspath_prepend(str(site))
    detectors.DETECTORS.refresh()
    yield site
    detectors.DETECTORS.refresh()


def test_plug_in_detectors_are_remote_unless_they_declare_themselves_local(plugins, modlens_home):
    assert not dataflow.is_remote("wordlist")  # CONTRIBUTING.md's example declares SENDS_DATA = False
    assert dataflow.is_remote("relay") and dataflow.is_remote("truthy") and dataflow.is_remote("broken")
    assert not dataflow.is_remote("minilm-toxicity") and dataflow.is_remote("http")
    s = study({"name": "wordlist"}, {"name": "relay"}, {"name": "ocr", "options": {"text_detector": "relay"}})
    dest = s.destinations()
    assert set(dest) == {"relay", "ocr"} and dest["relay"] == dest["ocr"]
    assert "relay" in dest["relay"][0] and "modlens-relay 1.2" in dest["relay"][0]
    assert "no comment is sent anywhere else" not in s.data_flow_notice()
    run, lines = join.as_joined(s, "study.toml")
    assert [d.key for d in run.detectors] == ["wordlist"]
    assert [line.split(":")[0] for line in lines] == ["detector relay", "detector ocr"]


def test_a_plug_in_that_cannot_be_imported_is_not_taken_as_local(plugins):
    dest = dataflow.destinations("broken", {})
    assert len(dest) == 1 and "broken" in dest[0] and "modlens-broken 2.0" in dest[0]


def test_an_unknown_top_level_detector_is_still_a_study_error():
    with pytest.raises(StudyConfigError, match="unknown detector"):
        study({"name": "relay"})


def test_a_secret_in_a_wrapped_detectors_options_is_refused_when_packing(tmp_path):
    from modlens.study import folder, pack

    root = make_folder(tmp_path, '[[detectors]]\nname = "ocr"\noptions = { text_detector = "perspective", '
                                 'text_options = { api_key = "AIza-real-key" } }\n',
                       secrets='[secrets]\nnames = ["PERSPECTIVE_API_KEY"]\n')
    with pytest.raises(StudyConfigError, match=r"detectors\[ocr\]\.options\.text_options\.api_key: looks like a secret"):
        pack.build(folder.load_folder(root))  # the folder is refused already (`study check`)


# --- options that name a variable, not a secret ---------------------------------------------------

def test_a_declared_key_variable_is_packed_and_shown_at_join_not_refused_as_a_secret(tmp_path, modlens_home, capsys):
    # docs/MULTI.md: perspective's `api_key_env` names the variable its key is read from, and an
    # `http` header may be a `${VAR}` template; neither holds the secret, so `study check` and
    # `study pack` must take them (pack refused both as "looks like a secret")
    root = make_folder(tmp_path, '[[detectors]]\nname = "perspective"\noptions = { api_key_env = "MY_PERSPECTIVE_KEY" }\n'
                                 '[[detectors]]\nname = "http"\nid = "relay"\noptions = { url = "https://mod.example/score", '
                                 'score_path = "score", headers = { X-Api-Key = "${MOD_KEY}", '
                                 'Authorization = "Bearer ${MOD_KEY}" } }\n',
                       secrets='[secrets]\nnames = ["MY_PERSPECTIVE_KEY", "MOD_KEY"]\n')
    assert cli_main(["study", "check", str(root)]) == 0
    out = tmp_path / "pilot.modlens"
    assert cli_main(["study", "pack", str(root), "--out", str(out)]) == 0
    capsys.readouterr()
    assert cli_main(["join", str(out), "--allow-unsigned"]) == 0
    said = capsys.readouterr().out
    assert "reads your MY_PERSPECTIVE_KEY from this computer's environment" in said
    assert "reads your MOD_KEY from this computer's environment" in said


@pytest.mark.parametrize("header", ["sk-live-${MOD_KEY}", "${MOD_KEY} sk-live-1234", "Bearer sk-live-1234"])
def test_a_literal_beside_a_variable_is_still_refused_as_a_secret(tmp_path, capsys, header):
    root = make_folder(tmp_path, '[[detectors]]\nname = "http"\noptions = { url = "https://mod.example", '
                                 f'score_path = "score", headers = {{ X-Api-Key = "{header}" }} }}\n',
                       secrets='[secrets]\nnames = ["MOD_KEY"]\n')
    assert cli_main(["study", "pack", str(root), "--out", str(tmp_path / "leak.modlens")]) == 2
    assert "looks like a secret" in capsys.readouterr().err
    assert not (tmp_path / "leak.modlens").exists()


def test_study_check_refuses_the_secret_a_pack_would_refuse(tmp_path, capsys):
    # `study check` said "ok" on a folder `study pack` then refused: a folder is made to be packed
    root = make_folder(tmp_path, '[[detectors]]\nname = "http"\noptions = { url = "https://mod.example", '
                                 'score_path = "score", headers = { X-Api-Key = "sk-live-1234" } }\n')
    assert cli_main(["study", "check", str(root)]) == 2
    said = capsys.readouterr()
    assert "ok:" not in said.out
    assert "detectors[http].options.headers.X-Api-Key: looks like a secret" in said.err


def test_a_lone_study_toml_is_not_packed_with_what_join_refuses(tmp_path, modlens_home, capsys):
    # `study pack DIR/study.toml` of a folder without side files is a lone study.toml, which may run
    # with any variable: pack wrote it, said "participants run: modlens join", and every join refused it
    from modlens.study import folder

    root = make_folder(tmp_path, '[[detectors]]\nname = "http"\noptions = { url = "https://mod.example/score?u=${HOME}", '
                                 'score_path = "score" }\n')
    lone = tmp_path / "lone"
    lone.mkdir()
    (lone / "study.toml").write_text((root / "study.toml").read_text())
    assert not folder.load_folder(lone / "study.toml").study.tasks  # no side file: a lone study.toml
    out = tmp_path / "lone.modlens"
    assert cli_main(["study", "pack", str(lone / "study.toml"), "--out", str(out)]) == 2
    said = capsys.readouterr()
    assert "wrote" not in said.out and not out.exists()
    assert "detectors[http].options.url: reads the environment variable ${HOME}" in said.err

    assert cli_main(["study", "check", str(lone / "study.toml")]) == 0  # it may run (`serve --config`) ...
    said = capsys.readouterr().out
    assert "warning: study pack refuses: detectors[http].options.url: reads the environment variable ${HOME}" in said
