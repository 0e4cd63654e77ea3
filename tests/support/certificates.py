"""Certificates for the secured runtime's tests, made at run time and never committed.

One CA signs a server certificate (127.0.0.1 and localhost: the broker's listeners and the
worker's HTTPS REST API) and the client certificates. Each is written as the files its reader
takes: PEM for librdkafka and the broker (`ssl.keystore.type=PEM`), PKCS12 for the worker's
REST server, whose Jetty reads only Java keystore types.
"""

import datetime
import ipaddress
from dataclasses import dataclass, field
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.serialization import pkcs12
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

# Certificates valid from a day ago, so a clock a little behind still accepts them.
VALID_FROM = datetime.timedelta(days=1)
VALID_FOR = datetime.timedelta(days=2)


@dataclass(frozen=True)
class ClientFiles:
    """A client certificate as librdkafka and urllib read it; its key encrypted."""

    cert: Path
    key: Path
    key_password: str = field(repr=False)

    @property
    def principal(self) -> str:
        """The broker's name for it (its subject, the default SSL principal mapping)."""
        name = x509.load_pem_x509_certificate(self.cert.read_bytes()).subject
        return f"User:{name.rfc4514_string()}"


@dataclass(frozen=True)
class TlsFiles:
    ca: Path  # PEM: the truststore of every client and of the broker
    broker_keystore: Path  # PEM: key then certificate chain
    rest_keystore: Path  # PKCS12: the worker's HTTPS key and certificate
    rest_truststore: Path  # PKCS12: the CA, as a trusted certificate entry
    store_password: str = field(repr=False)


def _name(common_name: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])


def _certificate(subject, key, issuer, issuer_key, *, ca=False, sans=(), usage=None, now=None):
    now = now or datetime.datetime.now(datetime.UTC)
    builder = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(issuer)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - VALID_FROM)
        .not_valid_after(now + VALID_FOR)
        .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True)
    )
    if sans:
        builder = builder.add_extension(x509.SubjectAlternativeName(list(sans)), critical=False)
    if usage:
        builder = builder.add_extension(x509.ExtendedKeyUsage(usage), critical=False)
    return builder.sign(issuer_key, hashes.SHA256())


def _pem(certificate) -> bytes:
    return certificate.public_bytes(serialization.Encoding.PEM)


def _key_pem(key, password: str = "") -> bytes:
    encryption = (
        serialization.BestAvailableEncryption(password.encode())
        if password
        else serialization.NoEncryption()
    )
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, encryption
    )


class CertificateAuthority:
    """A CA that writes its own certificate and the ones it signs into `folder`."""

    def __init__(self, folder: Path, name: str = "offsets-test-ca") -> None:
        self.folder = Path(folder)
        self.folder.mkdir(parents=True, exist_ok=True)
        self.key = ec.generate_private_key(ec.SECP256R1())
        self.name = _name(name)
        self.certificate = _certificate(self.name, self.key, self.name, self.key, ca=True)
        self.ca_file = self.folder / f"{name}.pem"
        self.ca_file.write_bytes(_pem(self.certificate))

    def server_files(self, password: str) -> TlsFiles:
        """The broker's and the worker's certificate for 127.0.0.1 and localhost."""
        key = ec.generate_private_key(ec.SECP256R1())
        sans = [x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]
        usage = [ExtendedKeyUsageOID.SERVER_AUTH, ExtendedKeyUsageOID.CLIENT_AUTH]
        cert = _certificate(_name("broker"), key, self.name, self.key, sans=sans, usage=usage)
        broker = self.folder / "broker-keystore.pem"
        broker.write_bytes(_key_pem(key) + _pem(cert) + _pem(self.certificate))
        encryption = serialization.BestAvailableEncryption(password.encode())
        rest = self.folder / "rest-keystore.p12"
        rest.write_bytes(
            pkcs12.serialize_key_and_certificates(
                b"rest", key, cert, [self.certificate], encryption
            )
        )
        trust = self.folder / "rest-truststore.p12"
        trust.write_bytes(
            pkcs12.serialize_java_truststore(
                [pkcs12.PKCS12Certificate(self.certificate, b"ca")], encryption
            )
        )
        return TlsFiles(self.ca_file, broker, rest, trust, password)

    def client_files(self, common_name: str, key_password: str, *, expired=False) -> ClientFiles:
        """A client certificate for `common_name` (principal `User:CN=<common_name>`)."""
        key = ec.generate_private_key(ec.SECP256R1())
        now = datetime.datetime.now(datetime.UTC)
        if expired:
            now -= VALID_FOR * 3
        cert = _certificate(
            _name(common_name),
            key,
            self.name,
            self.key,
            usage=[ExtendedKeyUsageOID.CLIENT_AUTH],
            now=now,
        )
        cert_file = self.folder / f"{common_name}.pem"
        cert_file.write_bytes(_pem(cert))
        key_file = self.folder / f"{common_name}.key"
        key_file.write_bytes(_key_pem(key, key_password))
        return ClientFiles(cert_file, key_file, key_password)
