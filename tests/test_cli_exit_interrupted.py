"""Ctrl-C: the lines `modlens` prints after "interrupted" say what is true of the run. `attack
--text` logs nothing (its texts are printed, not logged), so it is not told it can be resumed."""
from __future__ import annotations

from modlens.cli import EXIT_INTERRUPTED, main


def test_attack_text_interrupted_offers_no_resume(monkeypatch, tmp_path, capsys):
    import modlens.cli.perturb

    def ctrl_c(*args, **kwargs):  # Ctrl-C as the first attack's lines are printed
        raise KeyboardInterrupt

    monkeypatch.setattr(modlens.cli.perturb, "_print", ctrl_c)
    monkeypatch.setenv("MODLENS_HOME", str(tmp_path))  # where a log would go, were one written
    code = main(["attack", "--recipe", "deepwordbug", "--target", "profanity-check", "--max-queries", "5",
                 "--text", "you are a stupid idiot"])
    err = capsys.readouterr().err
    assert code == EXIT_INTERRUPTED
    assert "modlens attack: interrupted" in err
    assert "resume:" not in err
    assert "nothing was logged" in err
    assert not list(tmp_path.rglob("*.sqlite"))  # and indeed nothing was
