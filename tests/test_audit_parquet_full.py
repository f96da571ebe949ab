"""`modlens audit --out-parquet DIR` on a disk that fills mid-run ends with an error the CLI prints as
one line (a ModlensError of the failed kind: exit 1, no traceback) with the cause, how many items the
folder's shards hold and how to resume; the rerun resumes after exactly those (run here on the local
engine, whose chunks are written by the same sink as on Ray's). The full disk is the kernel's own: the second chunk's first shard is written through
a link to /dev/full, whose every write fails with ENOSPC ("No space left on device")."""
from __future__ import annotations

import io
import os
from pathlib import Path

import pytest

from modlens.audit import run_audit
from modlens.chunks.parquet import done_keys
from modlens.cli.common import EXIT_CODES, print_error
from modlens.errors import ModlensError

CHUNK = 100


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full (Linux)")
def test_a_full_disk_ends_a_parquet_audit_with_what_the_shards_hold(data_dir, tmp_path):
    out = tmp_path / "shards"
    out.mkdir()
    full = out / ".scores-000001.parquet.tmp"  # where the second chunk's first shard is written, then renamed
    os.symlink("/dev/full", full)
    def audit():  # type: ignore[no-untyped-def]
        return run_audit(str(data_dir / "noisyhate" / "dev.csv"), db=tmp_path / "unused.sqlite", detectors=["recorded"],
                         chunk_size=CHUNK, progress=False, out_parquet=out)

    with pytest.raises(ModlensError) as stopped:
        audit()
    assert EXIT_CODES[stopped.value.kind] == 1 and print_error("audit", stopped.value, io.StringIO()) == 1
    said = f"{stopped.value.message}\n{stopped.value.fix}"
    held = len(done_keys(out))
    assert held == CHUNK
    assert f"{held} items are in {out}" in said and "No space left on device" in said
    assert "run the same command again" in said

    full.unlink(missing_ok=True)  # room again (the writer may have removed its failed file itself)
    result = audit()
    assert result.resumed and result.n_skipped == CHUNK and len(done_keys(out)) == 588
