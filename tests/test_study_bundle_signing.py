"""Participants' bundles are signed with the key made at join, so `modlens merge` tells a participant's
bundle from an edited one: real logs, real bundle files, the real command line."""
from __future__ import annotations

import hashlib
import json
import stat
import zipfile

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from modlens import paths, signing
from modlens.cli import main as cli_main
from modlens.exchange.bundle import read_bundle, write_archive
from modlens.studylog.store import StudyLog
from modlens.studylog.codec import canonical_json
from test_bundle_merge import make_pack, participant


def _edit_ratings(bundle_path, out, key=None, strip=False):
    """Change one rating's value, then recompute every checksum, as anyone holding the file can;
    `key`: sign it again with another key; `strip`: drop the signature instead."""
    b = read_bundle(bundle_path)
    tables = {n: (b.columns(n), [tuple(r.values()) for r in b.table(n).to_pylist()]) for n in b.manifest["tables"]}
    fields = {k: v for k, v in b.manifest.items() if k not in ("format", "format_version", "tables", "bundle_sha256",
                                                              "signer")}
    b.close()
    cols = [c for c, _ in tables["rating_values"][0]]
    rows = [list(r) for r in tables["rating_values"][1]]
    rows[0][cols.index("value")] = "not toxic" if rows[0][cols.index("value")] != "not toxic" else "toxic"
    tables["rating_values"] = (tables["rating_values"][0], [tuple(r) for r in rows])
    with open(out, "wb") as fh:
        write_archive(fh, fields, tables, key=key)
    if strip:
        return out
    if key is None:  # keep the participant's signer and signature, recompute the checksum only
        original = json.loads(_member(bundle_path, "manifest.json"))
        tmp = out.with_suffix(".tmp")
        with zipfile.ZipFile(out) as zin, zipfile.ZipFile(tmp, "w") as zout:
            for item in zin.infolist():
                data = zin.read(item.filename)
                if item.filename == "manifest.json":
                    m = json.loads(data) | {"signer": original["signer"]}
                    m.pop("bundle_sha256")
                    m["bundle_sha256"] = hashlib.sha256(canonical_json(m).encode()).hexdigest()
                    data = json.dumps(m).encode()
                zout.writestr(item, data)
            zout.writestr("signature.json", _member(bundle_path, "signature.json"))
        tmp.replace(out)
    return out


def _member(path, name):
    with zipfile.ZipFile(path) as zf:
        return zf.read(name)


def test_bundles_are_signed_and_merge_refuses_edited_stripped_and_resigned_ones(tmp_path, monkeypatch, capsys):
    study_pack = make_pack(tmp_path)
    made = [participant(tmp_path, monkeypatch, study_pack, r) for r in range(2)]
    key_file = tmp_path / "home-1" / "bundle-signing.key"
    assert key_file.is_file() and stat.S_IMODE(key_file.stat().st_mode) == 0o600
    assert key_file.parent == paths.token_file().parent
    b = read_bundle(made[1])
    fingerprint = signing.fingerprint(signing.public_key_b64(signing.load_private_key(key_file)))
    assert b.signer == fingerprint and b.manifest["signer"]["algorithm"] == "ed25519"
    b.close()
    capsys.readouterr()
    assert cli_main(["export", "--bundle", str(tmp_path / "x.bundle"), "--show"]) == 0
    assert f"signed by: {fingerprint}" in capsys.readouterr().out

    merged = tmp_path / "study.sqlite"
    assert cli_main(["merge", "--out", str(merged), str(made[0])]) == 0
    capsys.readouterr()

    def refused(path) -> str:
        assert cli_main(["merge", "--out", str(merged), str(path)]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "Traceback" not in err
        return err

    # edited, every checksum recomputed, the participant's signature kept: does not verify
    assert "signature does not verify" in refused(_edit_ratings(made[1], tmp_path / "edited.bundle"))
    # edited and the signature stripped: unsigned, refused unless --allow-unsigned
    stripped = _edit_ratings(made[1], tmp_path / "stripped.bundle", strip=True)
    assert "unsigned, so it cannot be told from an edited bundle" in refused(stripped)
    # edited and signed again with another key, for a rater merged before under the participant's key
    resigned = _edit_ratings(made[0], tmp_path / "resigned.bundle", key=Ed25519PrivateKey.generate())
    assert "earlier bundles were signed by" in refused(resigned)
    with StudyLog(merged, readonly=True) as log:
        assert log.counts()["bundles"] == 1
        assert log.conn.execute("SELECT signer FROM bundles").fetchall() == [(read_bundle(made[0]).signer,)]

    # the participant's own bundle still merges; an unsigned one only when the researcher says so
    assert cli_main(["merge", "--out", str(merged), str(made[1])]) == 0
    assert cli_main(["merge", "--out", str(merged), "--allow-unsigned", str(stripped)]) == 0


def test_a_key_file_is_owner_only_even_over_a_stale_temp_file(tmp_path):
    """A temp file left by a crashed write (the same process id: a container's pid 1) keeps its mode
    through O_CREAT: the key written through it must still come out 0600, as the pairing token does."""
    import os

    key_file = tmp_path / "researcher.key"
    stale = key_file.with_name(f".{key_file.name}.{os.getpid()}.tmp")
    stale.write_bytes(b"half a key")
    stale.chmod(0o644)
    signing.new_key_file(key_file)
    assert stat.S_IMODE(key_file.stat().st_mode) == 0o600 and not stale.exists()
    assert signing.load_private_key(key_file) is not None
