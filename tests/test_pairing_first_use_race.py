"""The pairing token's first use by several processes at once (`modlens serve` starting while
`modlens pair` or `modlens browse` runs, both for the first time): each one's token is the one stored.
Before, each wrote its own new token over the others', so `pair` printed (and `browse` baked into
the extension) a token the file no longer held: the extension was then refused."""
from __future__ import annotations

import multiprocessing as mp
from pathlib import Path

import pytest

from modlens import pairing


def _ensure(path: str, barrier, out) -> None:
    barrier.wait()  # all at once, on a file none of them found
    out.put(pairing.ensure(Path(path)))


def _at_once(ctx, target, arg: str, n: int = 4) -> set[str]:
    """What `n` processes running `target(arg, barrier, out)` together handed out."""
    barrier, out = ctx.Barrier(n), ctx.Queue()
    procs = [ctx.Process(target=target, args=(arg, barrier, out)) for _ in range(n)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(30)
    return {out.get(timeout=5) for _ in procs}


LOCK = ".pairing-token.lock"  # beside the token, kept: callers finding no token take turns on it


@pytest.mark.parametrize("start, trials", [("absent", 5), ("empty", 40)])
def test_processes_creating_the_token_at_once_all_get_the_stored_one(tmp_path, start, trials):
    """Absent: each trial raced before the hard link (the fsync of each new token is a wide window).
    Empty (a file left with nothing in it): the link fails for all, and each caller that had read it
    empty replaced it, 2 trials in 20 handing out a token the file no longer held, before the lock."""
    ctx = mp.get_context("fork")
    for trial in range(trials):
        path = tmp_path / f"home{trial}" / "pairing-token"
        path.parent.mkdir()
        if start == "empty":
            path.write_text("")
            path.chmod(0o600)
        got = _at_once(ctx, _ensure, str(path))
        assert got == {pairing.read(path)}, f"trial {trial}: tokens handed out {len(got)}, stored one of them"
        assert path.stat().st_mode & 0o777 == 0o600
        assert sorted(p.name for p in path.parent.iterdir()) == [LOCK, "pairing-token"]  # no temp file left


def test_an_empty_token_file_gets_a_token_and_an_existing_one_is_kept(tmp_path):
    path = tmp_path / "home" / "pairing-token"
    path.parent.mkdir()
    path.write_text("")
    token = pairing.ensure(path)
    assert token and pairing.read(path) == token
    assert pairing.ensure(path) == token
    assert sorted(p.name for p in path.parent.iterdir()) == [LOCK, "pairing-token"]
    assert (path.parent / LOCK).stat().st_mode & 0o777 == 0o600


def _salt(home: str, barrier, out) -> None:
    import os

    os.environ["MODLENS_HOME"] = home
    barrier.wait()
    out.put(pairing.study_salt("pilot"))


def test_processes_creating_a_study_salt_at_once_all_get_the_stored_one(tmp_path):
    """A study's author salt, made on first use like the token: before, each process wrote its own,
    so two raters' extensions could hash one author two ways within a study."""
    ctx = mp.get_context("fork")
    for trial in range(5):
        home = tmp_path / f"home{trial}"
        home.mkdir()
        got = _at_once(ctx, _salt, str(home))
        assert got == {pairing.read(home / "author-salt-pilot")}, f"trial {trial}: {len(got)} salts handed out"
