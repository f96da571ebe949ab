"""The pairing token's first use by several processes at once (`modlens serve` starting while
`modlens pair` or `modlens browse` runs, both for the first time): each one's token is the one stored.
Before, each wrote its own new token over the others', so `pair` printed (and `browse` baked into
the extension) a token the file no longer held: the extension was then refused."""
from __future__ import annotations

import multiprocessing as mp
from pathlib import Path

from modlens import pairing


def _ensure(path: str, barrier, out) -> None:
    barrier.wait()  # all at once, on a file none of them found
    out.put(pairing.ensure(Path(path)))


def test_processes_creating_the_token_at_once_all_get_the_stored_one(tmp_path):
    ctx = mp.get_context("fork")
    for trial in range(5):  # each trial raced before (the fsync of each new token is a wide window)
        path = tmp_path / f"home{trial}" / "pairing-token"
        path.parent.mkdir()
        barrier, out = ctx.Barrier(4), ctx.Queue()
        procs = [ctx.Process(target=_ensure, args=(str(path), barrier, out)) for _ in range(4)]
        for p in procs:
            p.start()
        for p in procs:
            p.join(30)
        got = {out.get(timeout=5) for _ in procs}
        assert got == {pairing.read(path)}, f"trial {trial}: tokens handed out {len(got)}, stored one of them"
        assert path.stat().st_mode & 0o777 == 0o600
        assert [p.name for p in path.parent.iterdir()] == ["pairing-token"]  # no temp file left


def test_an_empty_token_file_gets_a_token_and_an_existing_one_is_kept(tmp_path):
    path = tmp_path / "home" / "pairing-token"
    path.parent.mkdir()
    path.write_text("")
    token = pairing.ensure(path)
    assert token and pairing.read(path) == token
    assert pairing.ensure(path) == token
    assert sorted(p.name for p in path.parent.iterdir()) == ["pairing-token"]
