"""A throwaway certificate authority and the certificates a TLS listener and its clients need,
made with the `cryptography` package: for `make serve-secure` and the TLS tests, never for
production (the CA key sits unencrypted beside the certificates).

Files written to the directory (all PEM; keys unencrypted PKCS#8, what kafka-clients'
ssl.keystore.type=PEM reads):

    ca.pem                   the CA certificate: every client's truststore, the broker's too
    broker.pem               the broker's certificate then the CA's (--ssl-keystore-location)
    broker-key.pem           the broker's private key (--ssl-key-location)
    <client>.pem             a client certificate, subject CN=<client>,OU=<ou>,O=twinlog
    <client>-key.pem         its private key
    <client>-keystore.pem    key + certificate in one file (Java's ssl.keystore.location)

The broker's certificate (serving, and as a client to peers that require one) names every
host given (DNS or IP subjectAltName), since librdkafka, the Java client and the brokers' own
fetchers check the broker's name (ssl.endpoint.identification.algorithm = https).
"""

from __future__ import annotations

import datetime
import ipaddress
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

VALID_DAYS = 30


@dataclass(frozen=True)
class TlsFiles:
    directory: Path

    @property
    def ca(self) -> Path:
        return self.directory / "ca.pem"

    @property
    def broker_cert(self) -> Path:
        return self.directory / "broker.pem"

    @property
    def broker_key(self) -> Path:
        return self.directory / "broker-key.pem"

    def client_cert(self, name: str) -> Path:
        return self.directory / f"{name}.pem"

    def client_key(self, name: str) -> Path:
        return self.directory / f"{name}-key.pem"

    def client_keystore(self, name: str) -> Path:
        return self.directory / f"{name}-keystore.pem"


def _name(cn: str, ou: str | None = None) -> x509.Name:
    # RFC 2253 prints the last attribute first: this subject reads CN=<cn>,OU=<ou>,O=twinlog.
    attributes = [x509.NameAttribute(NameOID.ORGANIZATION_NAME, "twinlog")]
    if ou:
        attributes.append(x509.NameAttribute(NameOID.ORGANIZATIONAL_UNIT_NAME, ou))
    attributes.append(x509.NameAttribute(NameOID.COMMON_NAME, cn))
    return x509.Name(attributes)


def _key_pem(key) -> bytes:
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption())


def _cert_pem(cert: x509.Certificate) -> bytes:
    return cert.public_bytes(serialization.Encoding.PEM)


def _issue(subject: x509.Name, key, issuer: x509.Name, issuer_key, *, ca: bool, sans=(), usage=None):
    now = datetime.datetime.now(datetime.timezone.utc)
    builder = (x509.CertificateBuilder().subject_name(subject).issuer_name(issuer)
               .public_key(key.public_key()).serial_number(x509.random_serial_number())
               .not_valid_before(now - datetime.timedelta(minutes=5))
               .not_valid_after(now + datetime.timedelta(days=VALID_DAYS))
               .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True))
    if ca:
        builder = builder.add_extension(x509.KeyUsage(
            digital_signature=True, key_cert_sign=True, crl_sign=True, content_commitment=False,
            key_encipherment=False, data_encipherment=False, key_agreement=False, encipher_only=False,
            decipher_only=False), critical=True)
    if sans:
        builder = builder.add_extension(x509.SubjectAlternativeName(list(sans)), critical=False)
    if usage:
        builder = builder.add_extension(x509.ExtendedKeyUsage(usage), critical=False)
    return builder.sign(issuer_key, hashes.SHA256())


def _san(host: str):
    try:
        return x509.IPAddress(ipaddress.ip_address(host))
    except ValueError:
        return x509.DNSName(host)


def make_tls_files(directory: Path, hosts=("localhost", "127.0.0.1"), clients=(("client", "eng"),)) -> TlsFiles:
    """A new CA, a broker certificate for `hosts`, a client certificate per (name, OU)."""
    directory.mkdir(parents=True, exist_ok=True)
    files = TlsFiles(directory)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = _name("twinlog test CA")
    ca_cert = _issue(ca_name, ca_key, ca_name, ca_key, ca=True)
    files.ca.write_bytes(_cert_pem(ca_cert))
    broker_key = ec.generate_private_key(ec.SECP256R1())
    broker_cert = _issue(_name(hosts[0]), broker_key, ca_name, ca_key, ca=False,
                         sans=[_san(h) for h in hosts],
                         usage=[ExtendedKeyUsageOID.SERVER_AUTH, ExtendedKeyUsageOID.CLIENT_AUTH])
    files.broker_cert.write_bytes(_cert_pem(broker_cert) + _cert_pem(ca_cert))
    files.broker_key.write_bytes(_key_pem(broker_key))
    for name, ou in clients:
        key = ec.generate_private_key(ec.SECP256R1())
        cert = _issue(_name(name, ou), key, ca_name, ca_key, ca=False, usage=[ExtendedKeyUsageOID.CLIENT_AUTH])
        files.client_cert(name).write_bytes(_cert_pem(cert))
        files.client_key(name).write_bytes(_key_pem(key))
        files.client_keystore(name).write_bytes(_key_pem(key) + _cert_pem(cert))
    for path in directory.glob("*key*.pem"):
        path.chmod(0o600)
    return files
