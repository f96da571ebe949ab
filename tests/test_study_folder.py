"""The researcher's study folder, the study pack and `modlens join`: real files, the real CLI."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

from modlens import pairing
from modlens.cli import main as cli_main
from modlens.study import folder, join, pack


def test_init_then_check_passes_and_lists_what_to_replace(tmp_path, capsys):
    root = tmp_path / "pilot"
    assert cli_main(["study", "init", str(root)]) == 0
    assert sorted(p.name for p in root.iterdir()) == ["calibration.toml", "consent.md", "study.toml", "tasks.toml"]
    assert "# Author names are hashed" in (root / "study.toml").read_text()  # annotated
    capsys.readouterr()
    assert cli_main(["study", "check", str(root)]) == 0
    out = capsys.readouterr().out
    assert "ok: study 'pilot'" in out and "3 gold comments, 3 task pages, free browsing off" in out
    assert "example page(s) still to replace (in tasks.toml)" in out
    study = folder.load_folder(root).study
    assert study.consent_text.startswith("You are invited") and study.tasks[0].target == 15
    assert cli_main(["study", "init", str(root)]) == 2  # never overwrites
    assert "already exists" in capsys.readouterr().err


@pytest.mark.parametrize("file, old, new, message", [
    ("study.toml", 'display = "blind"', 'dispaly = "blind"', "dispaly (in study.toml): Extra inputs are not permitted\n    fix: remove it"),
    ("tasks.toml", "target = 15", "target = 0", "tasks.0.target (in tasks.toml): Input should be greater than or equal to 1"),
    ("tasks.toml", 'url = "https://x.com/REPLACE_ME/status/1"', 'url = "x.com/thread"',
     "tasks.1.url (in tasks.toml): String should match pattern '^https?://\\S+$'\n    fix: give the page's full http://"),
    ("calibration.toml", 'toxicity = "not toxic", respectfulness', 'toxicity = "harmless", respectfulness',
     "expected.toxicity = 'harmless' (in calibration.toml)\n    fix: use one of ['not toxic', 'hard to say', 'toxic']"),
    ("tasks.toml", "free_browsing = false", "free_browsing = false\nstudy_id = \"x\"",
     "tasks.toml: study_id: not a key of tasks.toml (it holds tasks, free_browsing)\n  fix: move it to study.toml"),
    ("study.toml", 'display = "blind"', 'display = "blind"\nconsent_text = "hi"',
     "consent_text: set in both study.toml and consent.md\n  fix: keep it in consent.md only"),
])
def test_a_broken_key_fails_naming_file_key_and_fix(tmp_path, capsys, file, old, new, message):
    root = tmp_path / "s"
    folder.init_folder(root)
    path = root / file
    assert old in path.read_text()
    path.write_text(path.read_text().replace(old, new, 1))
    assert cli_main(["study", "check", str(root)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("modlens study: ") and message in err and "Traceback" not in err


def test_check_of_a_missing_folder_is_not_found(tmp_path, capsys):
    assert cli_main(["study", "check", str(tmp_path / "nothing")]) == 3
    err = capsys.readouterr().err
    assert "study file not found\n  fix: `modlens study init" in err and "Traceback" not in err


def test_pack_round_trip_holds_config_id_salt_and_checksum_and_no_secrets(tmp_path, capsys):
    root = tmp_path / "pilot"
    folder.init_folder(root)
    out = tmp_path / "pilot.modlens"
    assert cli_main(["study", "pack", str(root), "--out", str(out)]) == 0
    raw = json.loads(out.read_text())
    assert set(raw) == {"format", "format_version", "modlens_version", "study_id", "salt", "study_key", "study", "sha256"}
    read = pack.read(out)
    loaded = folder.load_folder(root)
    assert read.study == loaded.study and read.salt == loaded.study.author_salt
    assert read.study_key == pack.study_key("pilot", read.salt) and read.salt not in read.study_key
    assert pairing.ensure() not in out.read_text()  # the pairing token never travels
    # packing twice gives the same bytes: the researcher can re-send it
    again = tmp_path / "again.modlens"
    pack.write(loaded, again)
    assert again.read_bytes() == out.read_bytes()


def test_tampered_truncated_newer_and_secret_packs_are_refused(tmp_path, capsys):
    root = tmp_path / "pilot"
    folder.init_folder(root)
    good = tmp_path / "pilot.modlens"
    pack.write(folder.load_folder(root), good)

    tampered = tmp_path / "tampered.modlens"
    tampered.write_text(good.read_text().replace('"display": "blind"', '"display": "scores"'))
    assert cli_main(["join", str(tampered)]) == 2
    assert "checksum mismatch" in capsys.readouterr().err

    truncated = tmp_path / "truncated.modlens"
    truncated.write_bytes(good.read_bytes()[:300])
    assert cli_main(["join", str(truncated)]) == 2
    assert "not a modlens study pack (not JSON" in capsys.readouterr().err

    newer = json.loads(good.read_text())
    newer["format_version"] = pack.FORMAT_VERSION + 1
    (tmp_path / "newer.modlens").write_text(json.dumps(newer))
    assert cli_main(["join", str(tmp_path / "newer.modlens")]) == 2
    assert "newer than this modlens reads" in capsys.readouterr().err

    assert cli_main(["join", str(tmp_path / "absent.modlens")]) == 3

    study_toml = root / "study.toml"
    study_toml.write_text(study_toml.read_text().replace(
        '[[detectors]]\nname = "profanity-check"',
        '[[detectors]]\nname = "perspective"\noptions = { api_key = "AIza-secret" }') + '[secrets]\nnames = ["PERSPECTIVE_API_KEY"]\n')
    assert cli_main(["study", "pack", str(root), "--out", str(tmp_path / "leak.modlens")]) == 2
    assert "detectors[perspective].options.api_key: looks like a secret" in capsys.readouterr().err
    assert not (tmp_path / "leak.modlens").exists()


def test_join_writes_the_study_serve_runs_and_refuses_to_switch_silently(tmp_path, modlens_home, capsys):
    root = tmp_path / "pilot"
    folder.init_folder(root)
    # what is checked is which study serve runs, not its models: quick_to_serve leaves out what
    # would only slow the daemon's start (MiniLM's torch import and weights, the variant generator)
    study_toml = root / "study.toml"
    study_toml.write_text(quick_to_serve(study_toml.read_text()))
    good = tmp_path / "pilot.modlens"
    pack.write(folder.load_folder(root), good)
    capsys.readouterr()
    assert cli_main(["join", str(good), "--allow-unsigned"]) == 0  # in-process (MODLENS_HOME is the test's)
    out = capsys.readouterr().out
    config = modlens_home / "study.toml"
    assert join.joined_study_file() == config
    assert f"modlens serve     (leave it running; it uses {config})" in out
    assert "modlens browse https://www.youtube.com" in out
    assert folder.load(config) == pack.read(good).study  # the daemon runs exactly the packed study
    assert join.joined()["study_id"] == "pilot"
    assert_serve_runs_the_joined_study(modlens_home, tmp_path / "joined.sqlite")

    other_root = tmp_path / "other"
    folder.init_folder(other_root)
    other = tmp_path / "other.modlens"
    pack.write(folder.load_folder(other_root), other)
    assert cli_main(["join", str(other), "--allow-unsigned"]) == 2
    assert "would replace it\n  fix: export and send your bundle first" in capsys.readouterr().err
    assert folder.load(config).study_id == "pilot"
    assert cli_main(["join", str(other), "--replace", "--allow-unsigned"]) == 0
    assert folder.load(config).study_id == "other"
    assert cli_main(["join", str(other), "--allow-unsigned"]) == 0  # joining the same study again is fine


def quick_to_serve(study_toml: str) -> str:
    """The template study.toml with its MiniLM detector removed (profanity-check stays) and
    perturbation off, as tests/test_study_load.py's pilot folder."""
    trimmed = study_toml.replace('[[detectors]]\nname = "minilm-toxicity"\n\n', "", 1)
    assert trimmed != study_toml and '[[detectors]]\nname = "profanity-check"' in trimmed
    return trimmed + "\n[perturbation]\nenabled = false\n"


def assert_serve_runs_the_joined_study(home, db) -> None:
    """`modlens serve` with no --config starts on the study `modlens join` wrote."""
    env = {**__import__("os").environ, "MODLENS_HOME": str(home)}
    proc = subprocess.Popen([sys.executable, "-m", "modlens", "serve", "--port", "0", "--db", str(db)],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
    seen: list[str] = []
    try:
        for line in proc.stdout:  # bounded by the test timeout; serve prints "listening" once ready
            seen.append(line)
            if "listening" in line or "error" in line.lower():
                break
    finally:
        proc.terminate()
        proc.wait(30)
    out = "".join(seen)
    assert f"study from {home / 'study.toml'} (modlens join)" in out, out
    assert "for study 'pilot'" in out and "listening" in out, out


def test_join_says_a_running_daemon_keeps_serving_the_study_it_started_with(tmp_path, modlens_home, capsys):
    # `make run` (the README's quick start) starts `modlens serve` before anyone joins; a join writes
    # the study file, which serve reads only at start: "next: modlens serve (leave it running)" left the
    # running daemon logging every comment under the study it started with
    from daemon_helpers import serve_process, write_study

    root = tmp_path / "pilot"
    folder.init_folder(root)
    study_toml = root / "study.toml"
    study_toml.write_text(quick_to_serve(study_toml.read_text()))
    good = tmp_path / "pilot.modlens"
    pack.write(folder.load_folder(root), good)
    proc, info = serve_process(modlens_home, "--config", str(write_study(tmp_path / "first.toml", ["profanity-check"])),
                               "--db", str(tmp_path / "first.sqlite"))
    try:
        capsys.readouterr()
        assert cli_main(["join", str(good), "--allow-unsigned"]) == 0
        out = capsys.readouterr().out
    finally:
        proc.terminate()
        proc.wait(30)
    assert f"`modlens serve` is running (pid {proc.pid}) on study 'cli-test'" in out, out
    assert "stop it and start `modlens serve` again" in out
    assert "(leave it running" not in out

    capsys.readouterr()
    assert cli_main(["join", str(good), "--allow-unsigned"]) == 0  # once it stopped: the usual next steps
    out = capsys.readouterr().out
    assert "is running" not in out and "modlens serve     (leave it running" in out


def test_an_item_set_study_without_pages_is_not_said_to_have_nothing_to_rate(tmp_path, modlens_home, capsys):
    # the item set is what its participants rate (the extension's task list shows their assignment):
    # `study check` warned "participants would find no comments to rate" and `join` said `modlens browse URL`
    from test_itemset_pack import _folder

    f = _folder(tmp_path)
    (f.path / "tasks.toml").write_text("free_browsing = false\n")
    assert cli_main(["study", "check", str(f.path)]) == 0
    assert "would find no comments to rate" not in capsys.readouterr().out
    out = tmp_path / "s.modlens"
    assert cli_main(["study", "pack", str(f.path), "--out", str(out)]) == 0
    capsys.readouterr()
    assert cli_main(["join", str(out), "--allow-unsigned"]) == 0
    said = capsys.readouterr().out
    assert "modlens browse URL" not in said
    assert "2. modlens browse     (in a second terminal" in said
    assert "your share of the study's 6 comments (item set) is on the task list" in said

    plain = tmp_path / "plain"  # no item set, no pages: the warning stands
    folder.init_folder(plain)
    (plain / "tasks.toml").write_text("free_browsing = false\n")
    assert cli_main(["study", "check", str(plain)]) == 0
    assert "participants would find no comments to rate" in capsys.readouterr().out


def test_a_pack_that_cannot_be_written_is_an_error_naming_it_and_leaves_the_last_pack(tmp_path, modlens_home, capsys):
    # the output was written in place: a write cut short (here by a file-size limit, as by a full disk)
    # left half a pack where the last good one was, and a missing folder was reported as a missing key
    import resource
    import signal

    root = tmp_path / "pilot"
    folder.init_folder(root)
    out = tmp_path / "pilot.modlens"
    assert cli_main(["study", "pack", str(root), "--out", str(out)]) == 0
    good = out.read_bytes()
    assert len(good) > 2048
    (root / "consent.md").write_text((root / "consent.md").read_text() + "\nA second paragraph.\n")

    def small_files() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # the write then fails with EFBIG instead of killing us
        resource.setrlimit(resource.RLIMIT_FSIZE, (2048, 2048))

    cut = subprocess.run([sys.executable, "-m", "modlens", "study", "pack", str(root), "--out", str(out)],
                         capture_output=True, text=True, preexec_fn=small_files, timeout=120)
    assert cut.returncode != 0 and "wrote" not in cut.stdout
    assert f"{out}: cannot write the pack" in cut.stderr and "Traceback" not in cut.stderr, cut.stderr
    assert out.read_bytes() == good and pack.read(out).sha256
    assert [p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")] == []

    capsys.readouterr()
    assert cli_main(["study", "pack", str(root), "--out", str(tmp_path / "no-such-folder" / "p.modlens")]) == 3
    err = capsys.readouterr().err
    assert "no-such-folder/p.modlens: cannot write the pack" in err and "keygen" not in err
    assert cli_main(["study", "pack", str(root), "--out", str(root)]) == 2  # a folder, not a file
    assert f"{root}: cannot write the pack" in capsys.readouterr().err


def test_what_pack_says_about_an_unsigned_pack_is_what_joining_it_does(tmp_path, modlens_home, capsys):
    # it said participants "must pass --allow-unsigned", leaving out that the extension's options page
    # refuses an unsigned pack outright (and that a person at a terminal may say yes instead)
    root = tmp_path / "pilot"
    folder.init_folder(root)
    out = tmp_path / "pilot.modlens"
    assert cli_main(["study", "pack", str(root), "--out", str(out)]) == 0
    said = capsys.readouterr().out
    assert "the extension's options page refuses it" in said
    with pytest.raises(join.JoinError, match="unsigned pack refused"):
        join.join_from_extension(out.read_text(), out.name, replace=False)
    assert cli_main(["join", str(out)]) == 2  # no terminal to say yes, no --allow-unsigned
    assert cli_main(["join", str(out), "--allow-unsigned"]) == 0


def test_a_pack_join_would_refuse_for_its_size_is_not_written(tmp_path, modlens_home, capsys):
    # join reads at most pack.PACK_MAX_BYTES; pack wrote a larger one (a big item set), said
    # "participants run: modlens join", and every join refused it as "not a modlens study pack"
    root = item_set_folder(tmp_path / "big", pack.PACK_MAX_BYTES)
    out = tmp_path / "big.modlens"
    assert cli_main(["study", "pack", str(root), "--out", str(out)]) == 2
    said = capsys.readouterr()
    assert "wrote" not in said.out and not out.exists()
    assert "`modlens join` reads packs of at most 16 MiB" in said.err


def item_set_folder(root, size: int):
    """A study folder whose item set's texts add up to `size` bytes or a little more."""
    from modlens.study import assignment, itemset

    folder.init_folder(root)
    text = "a comment long enough to fill the set quickly " * 8
    items = [{"id": f"i{n:05d}", "platform": "youtube", "comment_key": f"k{n}", "text": f"{n} {text}",
              "stratum": "all", "score": None} for n in range(size // len(text) + 1)]
    params = {"by": "label:test", "seed": 0}
    data = {"format": itemset.FORMAT, "format_version": itemset.FORMAT_VERSION,
            "sha256": itemset.checksum(params, items), "params": params, "items": items}
    itemset.write(data, root)
    assignment.write(assignment.make(data, folder.load(root), raters=1, items_per_task=12, gold_per_task=1), root)
    return root
