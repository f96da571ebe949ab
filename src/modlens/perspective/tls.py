"""The local certificate authority of the drop-in mode (`modlens serve --perspective-proxy`):
clients that hard-code `https://commentanalyzer.googleapis.com` reach modlens unchanged through
`HTTPS_PROXY`, and trust the answer because their CA file includes this authority.

The authority is made on this computer, once, with the `cryptography` package, and kept in
`$MODLENS_HOME/perspective-tls/` (the keys mode 0600). It is **name-constrained**: a critical
X.509 NameConstraints extension permits the one DNS name `commentanalyzer.googleapis.com` (and
excludes every IP address), so a TLS library that trusts it can never accept it for any other
site, even if its private key leaked. It signs one server certificate, for that name only.

`bundle.pem` is the system's (certifi's) roots plus this authority: what `SSL_CERT_FILE` and
`REQUESTS_CA_BUNDLE` (and httplib2's `HTTPLIB2_CA_CERTS`, Google's Python client) replace the default roots with, so the client's other HTTPS traffic still
verifies. `NODE_EXTRA_CA_CERTS` adds to Node's roots, so it names the authority alone.
"""
from __future__ import annotations

import datetime
import ipaddress
import shlex
import ssl
from dataclasses import dataclass
from pathlib import Path

from modlens import paths
from modlens.pairing import write_atomically

GOOGLE_HOST = "commentanalyzer.googleapis.com"
CA_NAME = "modlens local Perspective drop-in CA"  # name-constrained: see NameConstraints
VALID_DAYS = 825  # the longest server-certificate lifetime Apple's TLS clients accept
RENEW_DAYS = 7    # a certificate this close to its end is made again (a new authority: its key is not kept)


@dataclass(frozen=True)
class Material:
    folder: Path
    ca_cert: Path      # the authority's certificate (NODE_EXTRA_CA_CERTS)
    bundle: Path       # the system's roots + the authority (SSL_CERT_FILE, REQUESTS_CA_BUNDLE)
    server_cert: Path  # commentanalyzer.googleapis.com, signed by the authority
    server_key: Path


def folder() -> Path:
    return paths.home() / "perspective-tls"


def _material(where: Path) -> Material:
    return Material(where, where / "ca.pem", where / "bundle.pem", where / "server.pem", where / "server-key.pem")


def _write(path: Path, data: bytes, private: bool = False) -> None:
    # the pairing token's writer: a per-process temp file whose mode is set, then a rename
    write_atomically(path, data, 0o600 if private else 0o644)


def _system_roots() -> bytes:
    try:
        import certifi

        return Path(certifi.where()).read_bytes()
    except ImportError:  # no certifi: the OpenSSL default file, where there is one
        cafile = ssl.get_default_verify_paths().cafile
        return Path(cafile).read_bytes() if cafile and Path(cafile).is_file() else b""


def ensure(where: Path | None = None) -> Material:
    """The authority and the server certificate, made on first use and kept afterwards (a client
    that trusts the authority keeps trusting it); the bundle is rewritten each time, so it
    follows updates of the system's roots."""
    m = _material(where or folder())
    m.folder.mkdir(parents=True, exist_ok=True)
    if not (m.ca_cert.is_file() and m.server_cert.is_file() and m.server_key.is_file()) or _ending(m.server_cert):
        _create(m)
    _write(m.bundle, _system_roots().rstrip(b"\n") + b"\n" + m.ca_cert.read_bytes())
    return m


def _ending(cert: Path) -> bool:
    from cryptography import x509

    end = x509.load_pem_x509_certificate(cert.read_bytes()).not_valid_after_utc
    return end - datetime.datetime.now(datetime.timezone.utc) < datetime.timedelta(days=RENEW_DAYS)


def _create(m: Material) -> None:
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    now = datetime.datetime.now(datetime.timezone.utc) - datetime.timedelta(minutes=5)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, CA_NAME),
                         x509.NameAttribute(NameOID.ORGANIZATION_NAME, "modlens (this computer only)")])
    no_ips = [x509.IPAddress(ipaddress.ip_network("0.0.0.0/0")), x509.IPAddress(ipaddress.ip_network("::/0"))]
    ca = (x509.CertificateBuilder().subject_name(ca_name).issuer_name(ca_name)
          .public_key(ca_key.public_key()).serial_number(x509.random_serial_number())
          .not_valid_before(now).not_valid_after(now + datetime.timedelta(days=VALID_DAYS))
          .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
          .add_extension(x509.KeyUsage(digital_signature=False, content_commitment=False, key_encipherment=False,
                                       data_encipherment=False, key_agreement=False, key_cert_sign=True,
                                       crl_sign=True, encipher_only=False, decipher_only=False), critical=True)
          .add_extension(x509.NameConstraints(permitted_subtrees=[x509.DNSName(GOOGLE_HOST)],
                                              excluded_subtrees=no_ips), critical=True)
          .add_extension(x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), critical=False)
          .sign(ca_key, hashes.SHA256()))
    key = ec.generate_private_key(ec.SECP256R1())
    server = (x509.CertificateBuilder()
              .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, GOOGLE_HOST)]))
              .issuer_name(ca_name).public_key(key.public_key()).serial_number(x509.random_serial_number())
              .not_valid_before(now).not_valid_after(now + datetime.timedelta(days=VALID_DAYS))
              .add_extension(x509.SubjectAlternativeName([x509.DNSName(GOOGLE_HOST)]), critical=False)
              .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
              .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
              .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False)
              .sign(ca_key, hashes.SHA256()))
    pem = serialization.Encoding.PEM
    # the authority's private key is not kept: it signed the one certificate it will ever sign,
    # so nothing on this computer can make it vouch for anything else
    _write(m.server_key, key.private_bytes(pem, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()),
           private=True)
    _write(m.server_cert, server.public_bytes(pem) + ca.public_bytes(pem))
    _write(m.ca_cert, ca.public_bytes(pem))


def server_context(m: Material) -> ssl.SSLContext:
    """The TLS context the drop-in answers with (TLS 1.2 or later)."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    ctx.load_cert_chain(m.server_cert, m.server_key)
    return ctx


def export_lines(m: Material, proxy_url: str) -> list[str]:
    """The shell lines `modlens serve --perspective-proxy` and `modlens perspective drop-in` print."""
    return [f"export {name}={shlex.quote(value)}" for name, value in environment(m, proxy_url).items()]


def environment(m: Material, proxy_url: str) -> dict[str, str]:
    """What a client's environment needs to reach the drop-in unchanged."""
    return {"HTTPS_PROXY": proxy_url, "https_proxy": proxy_url, "SSL_CERT_FILE": str(m.bundle),
            "REQUESTS_CA_BUNDLE": str(m.bundle), "HTTPLIB2_CA_CERTS": str(m.bundle),
            "NODE_EXTRA_CA_CERTS": str(m.ca_cert)}
