"""Ed25519 signatures for study packs (the researcher's key) and participant bundles (a key made
at join). The primitives only: key files, fingerprints, signing and verifying bytes.

A private key file is PEM (PKCS#8, unencrypted) written 0600; public keys travel as base64 of the
32 raw bytes. A fingerprint is `ed25519:` + the first 32 hex of SHA-256 of those raw bytes: what a
participant reads at join and compares with the one the researcher published, and what merge
shows per bundle. Nothing here knows packs or bundles: they decide what bytes are signed.
"""
from __future__ import annotations

import base64
import binascii
import hashlib
from pathlib import Path

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

from modlens.errors import ModlensError
from modlens.pairing import write_atomically

ALGORITHM = "ed25519"


class SigningError(ModlensError, ValueError):
    """A key file that cannot be read or written; the message says which and why."""


def fingerprint(public_key_b64: str) -> str:
    raw = base64.b64decode(public_key_b64)
    return f"{ALGORITHM}:{hashlib.sha256(raw).hexdigest()[:32]}"


def public_key_b64(key: Ed25519PrivateKey) -> str:
    raw = key.public_key().public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    return base64.b64encode(raw).decode("ascii")


def write_private_key(path: Path, key: Ed25519PrivateKey) -> None:
    """Owner-only from the first byte (created 0600, never world-readable even for a moment)."""
    write_atomically(path, key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                             serialization.NoEncryption()), 0o600)


def new_key_file(path: Path) -> Ed25519PrivateKey:
    """A fresh key at `path`; refuses to overwrite one (a lost key cannot sign for its packs)."""
    if path.exists():
        raise SigningError(f"{path} already exists; a key is never overwritten")
    key = Ed25519PrivateKey.generate()
    write_private_key(path, key)
    return key


def load_private_key(path: Path) -> Ed25519PrivateKey:
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise FileNotFoundError(f"{path}: no such key file") from None
    except OSError as err:
        raise SigningError(f"{path}: cannot read the key ({err.strerror or err})") from None
    try:
        key = serialization.load_pem_private_key(data, password=None)
    except (ValueError, TypeError) as err:
        raise SigningError(f"{path}: not an unencrypted PEM private key ({err})") from None
    if not isinstance(key, Ed25519PrivateKey):
        raise SigningError(f"{path}: not an Ed25519 key (modlens signs with Ed25519 only)")
    return key


def ensure_key_file(path: Path) -> Ed25519PrivateKey:
    """The key at `path`, created on first use (the participant's bundle key)."""
    return load_private_key(path) if path.exists() else new_key_file(path)


def sign(key: Ed25519PrivateKey, data: bytes) -> str:
    return base64.b64encode(key.sign(data)).decode("ascii")


def verify(public_key_b64: str, signature_b64: str, data: bytes) -> bool:
    """True only for a well-formed key and signature that verify over exactly `data`."""
    try:
        raw_key = base64.b64decode(public_key_b64, validate=True)
        raw_sig = base64.b64decode(signature_b64, validate=True)
        Ed25519PublicKey.from_public_bytes(raw_key).verify(raw_sig, data)
    except (InvalidSignature, ValueError, TypeError, binascii.Error):
        return False
    return True
