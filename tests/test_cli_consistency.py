"""One CLI: the same flag names for the same ideas in every command (old names as deprecated
aliases), unknown detector or strategy names as errors with close matches (flags and
study.toml), `perturb` saying why it made no variant, `feed` reading platform/url/author columns."""
from __future__ import annotations

import hashlib
import json
import signal
import sqlite3

import pytest

from modlens.cli import build_parser, main
from modlens.config import StudyConfigError
from modlens.study import load
from modlens.perturb.generate import VariantGenerator

from daemon_helpers import serve_process, write_study

# flag -> the commands that must take it under that name (docs/CLI.md lists the same)
SHARED_FLAGS = {
    "--config": ["serve", "audit", "perturb", "rescore"],
    "--study": ["serve", "audit", "perturb", "rescore"],
    "--detectors": ["audit", "perturb", "score", "rescore"],
    "--detector": ["audit", "perturb", "score", "rescore"],
    "--strategies": ["audit", "perturb"],
    "--strategy": ["audit", "perturb"],
    "--budget": ["audit", "perturb"],
    "--seed": ["audit", "perturb"],
    "--threshold": ["audit", "perturb"],
    "--max-queries": ["audit", "perturb"],
    "--max-edit-fraction": ["audit", "perturb"],
    "--db": ["serve", "audit", "rescore", "report", "export", "status"],
    "--text-col": ["audit", "feed"],
    "--limit": ["audit", "feed"],
    "--daemon": ["feed", "browse"],
}


def options_of(command: str) -> dict[str, str]:
    """flag -> dest of a command's parser."""
    sub = build_parser(command)._subparsers._group_actions[0].choices[command]  # type: ignore[union-attr]
    return {flag: action.dest for action in sub._actions for flag in action.option_strings}


@pytest.mark.parametrize("flag", sorted(SHARED_FLAGS))
def test_the_same_idea_has_the_same_flag_everywhere(flag):
    dests = {command: options_of(command).get(flag) for command in SHARED_FLAGS[flag]}
    assert None not in dests.values(), f"{flag} missing in {[c for c, d in dests.items() if d is None]}"


def test_old_flag_names_still_work_with_a_deprecation_note(capsys):
    parser = build_parser("audit")
    args = parser.parse_args(["audit", "x", "--query-budget", "9", "--max-edit-ratio", "0.5",
                              "--attack-strategies", "char_swap", "abbr", "--attack-targets", "a", "b"])
    assert (args.query_budget, args.max_edit_ratio) == (9, 0.5)
    assert args.strategies == ["char_swap", "abbr"] and args.attack_targets == ["a", "b"]
    err = capsys.readouterr().err.splitlines()
    assert err == [f"modlens: {old} is deprecated and goes away in the next release; use {new}" for old, new in
                   [("--query-budget", "--max-queries"), ("--max-edit-ratio", "--max-edit-fraction"),
                    ("--attack-strategies", "--strategies"), ("--attack-targets", "--targets")]]
    # the new names: the same destinations, no note
    args = parser.parse_args(["audit", "x", "--max-queries", "9", "--max-edit-fraction", "0.5",
                              "--strategy", "char_swap", "--strategies", "abbr", "--target", "a"])
    assert (args.query_budget, args.max_edit_ratio, args.strategies, args.attack_targets) == \
        (9, 0.5, ["char_swap", "abbr"], ["a"])
    assert capsys.readouterr().err == ""
    # the default survives the alias: unset, the attack's own (200 for the character attack)
    assert build_parser("audit").parse_args(["audit", "x"]).query_budget is None


@pytest.mark.parametrize("argv, message, suggestion", [
    (["perturb", "x", "--strategy", "repeat_chr", "--detector", "profanity-check"],
     "unknown perturbation strategy 'repeat_chr'", "did you mean repeat_char"),
    (["perturb", "x", "--detector", "profanty-check"], "unknown detector 'profanty-check'", "did you mean profanity-check?"),
    (["score", "--detector", "minilm-toxicty", "x"], "unknown detector 'minilm-toxicty'", "did you mean minilm-toxicity"),
    (["audit", "hatecheck", "--detectors", "profanity-chek", "--limit", "1"], "unknown detector 'profanity-chek'",
     "did you mean profanity-check?"),
    (["audit", "hatecheck", "--perturb", "mixed_cas", "--limit", "1"], "unknown perturbation strategy 'mixed_cas'",
     "did you mean mixed_case"),
    (["audit", "hatecheck", "--attack", "tae", "--strategies", "char_swp", "--limit", "1"],
     "unknown perturbation strategy 'char_swp'", "did you mean char_swap"),
])
def test_unknown_names_on_the_command_line_are_errors_with_close_matches(argv, message, suggestion, capsys, tmp_path):
    if argv[0] == "audit":
        argv = [*argv, "--db", str(tmp_path / "log.sqlite")]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert message in err and f"fix: {suggestion}" in err and "Traceback" not in err
    assert not (tmp_path / "log.sqlite").exists()  # refused before anything was written


@pytest.mark.parametrize("toml, key, bad, suggestion", [
    ('detectors = [{ name = "minilm-toxicty" }]', "detectors.0.name", "'minilm-toxicty'", "did you mean minilm-toxicity"),
    ('[perturbation]\nstrategies = ["repeat_char", "homoglyf"]', "perturbation.strategies.1", "'homoglyf'",
     "did you mean homoglyph?"),
    ('[perturbation]\nstrategy_options = { human_lookp = { path = "x.json" } }', "perturbation.strategy_options.human_lookp",
     "'human_lookp'", "did you mean human_lookup?"),
    ('[perturbation]\ntarget = "profanity-chek"', "perturbation.target", "'profanity-chek'",
     "did you mean profanity-check?"),
])
def test_a_misspelled_name_in_study_toml_is_a_validation_error(toml, key, bad, suggestion, tmp_path, capsys):
    path = tmp_path / "study.toml"
    path.write_text(toml + "\n")
    with pytest.raises(StudyConfigError) as err:
        load(path)
    lines = str(err.value).splitlines()
    at = next(i for i, line in enumerate(lines) if line.strip().startswith(key + ":"))
    assert bad in lines[at] and lines[at + 1].strip().startswith(f"fix: {suggestion}")  # its fix on the line below
    # `serve` refuses it before listening instead of starting without the detector or strategy
    assert main(["serve", "--config", str(path), "--db", str(tmp_path / "log.sqlite")]) == 2
    assert f"{key}: unknown" in capsys.readouterr().err


def test_a_known_detector_that_cannot_load_here_stays_a_warning(tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("PERSPECTIVE_API_KEY", raising=False)
    path = tmp_path / "study.toml"
    path.write_text('detectors = [{ name = "perspective" }, { name = "profanity-check" }]\n')
    assert [d.name for d in load(path).detectors] == ["perspective", "profanity-check"]
    assert main(["perturb", "you idiot", "--config", str(path), "--threshold", "0"]) == 0
    out = capsys.readouterr()
    assert "detector perspective not loaded (missing_dependency)" in out.err
    assert list(json.loads(out.out.splitlines()[0])["scores"]) == ["profanity-check"]


def test_perturb_says_why_it_made_no_variant(capsys):
    assert main(["perturb", "you are a stupid idiot", "--detector", "profanity-check", "--threshold", "0.1"]) == 0
    out = capsys.readouterr()
    lines = [json.loads(line) for line in out.out.splitlines()]
    assert len(lines) == 1 and lines[0]["kind"] == "source"
    why = lines[0]["reasons"]["text"]
    assert why.startswith("no word's removal dropped the score by more than the 0.1 threshold")
    assert why in out.err and "use --threshold 0" in out.err
    # with the threshold the note suggests, variants come out and nothing needs explaining
    assert main(["perturb", "you are a stupid idiot", "--detector", "profanity-check", "--threshold", "0",
                 "--budget", "2"]) == 0
    out = capsys.readouterr()
    lines = [json.loads(line) for line in out.out.splitlines()]
    assert len(lines) == 3 and out.err == ""


def test_the_generator_records_why_each_strategy_made_nothing():
    gen = VariantGenerator(["abbr", "repeat_char"], budget=3, seed=0, importance_threshold=0.1)
    # abbr needs words of 4+ letters; the candidates (importance > 0.1) are "pig" and "big"
    variants, reasons = gen.generate_explained("you big pig", importance=[0.0, 0.3, 0.6])
    assert variants and {v.strategy for v in variants} == {"repeat_char"}
    assert reasons["abbr"] == "does not apply to any candidate word ('pig', 'big')"
    assert reasons["budget"].startswith(f"{len(variants)} of 3 variants") if len(variants) < 3 else "budget" not in reasons
    assert gen.generate_explained("you big pig", importance=[0.0, 0.05, 0.02])[1] == {
        "text": "no word's removal dropped the score by more than the 0.1 threshold (the largest drop: 0.05, "
                "removing 'big')"}
    assert gen.generate_explained("a an of", importance=None)[1]["text"].startswith("no content word to perturb")
    empty = VariantGenerator(["abbr"], budget=0, seed=0, importance_threshold=0.1)
    assert empty.generate_explained("you big pig")[1] == {"text": "the budget is 0 variants per text"}


@pytest.fixture
def daemon(tmp_path, modlens_home):
    study = write_study(tmp_path / "study.toml", ["profanity-check"])
    proc, info = serve_process(modlens_home, "--config", str(study), "--db", str(tmp_path / "log.sqlite"))
    yield tmp_path / "log.sqlite", info
    proc.send_signal(signal.SIGTERM)
    proc.wait(20)


def test_feed_takes_platform_url_and_author_from_columns(daemon, tmp_path, capsys):
    from modlens import pairing

    db, info = daemon
    path = tmp_path / "mixed.csv"
    path.write_text("text,platform,url,author\n"
                    "you idiot,youtube,https://www.youtube.com/watch?v=a,alice\n"
                    "nice video,youtube,https://www.youtube.com/watch?v=a,bob\n"
                    "what a moron,x,https://x.com/u/status/1,alice\n"
                    "thanks,YouTube,https://www.youtube.com/watch?v=b,\n"
                    "no page given,,,carol\n")
    assert main(["feed", str(path), "--daemon", info["url"], "--no-variants", "--platform", "forum"]) == 0
    assert len(capsys.readouterr().out.splitlines()) == 5
    conn = sqlite3.connect(db)
    got = conn.execute("SELECT c.platform, p.url, p.page_key, c.author_hash FROM comments c JOIN pages p USING (page_id) "
                       "ORDER BY c.comment_id").fetchall()
    conn.close()
    salt = pairing.study_salt("cli-test")  # the daemon's author salt for a study without one

    def h(author: str) -> str:
        return hashlib.sha256(f"{salt}\n{author}".encode()).hexdigest()

    file_uri = path.resolve().as_uri()
    assert got == [
        # X and YouTube pages as the extension sends them: the id as key, the address without its author
        ("youtube", "https://www.youtube.com/watch?v=a", "a", h("alice")),
        ("youtube", "https://www.youtube.com/watch?v=a", "a", h("bob")),
        ("x", "https://x.com/i/status/1", "1", h("alice")),
        ("youtube", "https://www.youtube.com/watch?v=b", "b", None),
        ("forum", file_uri, "mixed.csv", h("carol")),  # the flags fill in what a row lacks
    ]
    # named columns must exist
    assert main(["feed", str(path), "--daemon", info["url"], "--author-col", "user"]) == 2  # usage: the column is missing
    assert "no column 'user'" in capsys.readouterr().err
