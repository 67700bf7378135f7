"""A certificate authority for tests: a CA and server certificates for the names asked, so an
HTTPS endpoint on loopback can be verified by name as a real one would be.

Owns key and certificate generation (with ``cryptography``) and the two SSL contexts: the
server's, and a client's that trusts only this CA.
"""

from __future__ import annotations

import datetime
import ssl
import tempfile
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID


def _name(common_name: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])


def _pem(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )


@dataclass
class LocalAuthority:
    key: ec.EllipticCurvePrivateKey
    certificate: x509.Certificate

    @classmethod
    def create(cls) -> LocalAuthority:
        key = ec.generate_private_key(ec.SECP256R1())
        now = datetime.datetime.now(datetime.UTC)
        certificate = (
            x509.CertificateBuilder()
            .subject_name(_name("workmem test CA"))
            .issuer_name(_name("workmem test CA"))
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(hours=1))
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .sign(key, hashes.SHA256())
        )
        return cls(key, certificate)

    def client_context(self) -> ssl.SSLContext:
        """A client context that trusts this CA alone and checks host names."""
        context = ssl.create_default_context(
            cadata=self.certificate.public_bytes(serialization.Encoding.PEM).decode()
        )
        return context

    def server_context(self, host_name: str) -> ssl.SSLContext:
        """A server context whose certificate, signed by this CA, names ``host_name`` only."""
        key = ec.generate_private_key(ec.SECP256R1())
        now = datetime.datetime.now(datetime.UTC)
        certificate = (
            x509.CertificateBuilder()
            .subject_name(_name(host_name))
            .issuer_name(self.certificate.subject)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(hours=1))
            .add_extension(x509.SubjectAlternativeName([x509.DNSName(host_name)]), critical=False)
            .sign(self.key, hashes.SHA256())
        )
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        with tempfile.TemporaryDirectory() as folder:
            chain = Path(folder) / "chain.pem"
            chain.write_bytes(certificate.public_bytes(serialization.Encoding.PEM) + _pem(key))
            context.load_cert_chain(chain)
        return context
