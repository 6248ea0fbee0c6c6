"""Certificate authorities and certificates made for a test, as PEM files in its directory.

Real X.509 (the `cryptography` package pyOpenSSL is built on), so hubs, links and clients
verify them the way they verify any other: chains, names, key usage, expiry.
"""

import datetime
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

_DAY = datetime.timedelta(days=1)


def _key():
    return ec.generate_private_key(ec.SECP256R1())


def _key_pem(key) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )


def _name(common_name: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])


class Authority:
    """A self-signed CA under `directory`: `cert_file` is what trusts it."""

    def __init__(self, directory, name: str = "hedwig test CA"):
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)
        self.name = name
        self._key = _key()
        now = datetime.datetime.now(datetime.UTC)
        self.certificate = (
            x509.CertificateBuilder()
            .subject_name(_name(name))
            .issuer_name(_name(name))
            .public_key(self._key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - _DAY)
            .not_valid_after(now + 30 * _DAY)
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .add_extension(
                x509.KeyUsage(
                    digital_signature=True,
                    content_commitment=False,
                    key_encipherment=False,
                    data_encipherment=False,
                    key_agreement=False,
                    key_cert_sign=True,
                    crl_sign=True,
                    encipher_only=False,
                    decipher_only=False,
                ),
                critical=True,
            )
            .add_extension(x509.SubjectKeyIdentifier.from_public_key(self._key.public_key()), critical=False)
            .sign(self._key, hashes.SHA256())
        )
        self.cert_file = self.directory / f"{_file_name(name)}.ca.pem"
        self.cert_file.write_bytes(self.certificate.public_bytes(serialization.Encoding.PEM))

    def issue(
        self,
        name: str,
        dns=(),
        ips=("127.0.0.1",),
        *,
        key_in_cert_file: bool = False,
        expired: bool = False,
    ):
        """A certificate for `name` (its common name) carrying the DNS names `dns` (with
        `name` first unless empty) and the IP addresses `ips`, good for servers and
        clients. (cert_file, key_file); with `key_in_cert_file` both are the one file."""
        import ipaddress

        key = _key()
        now = datetime.datetime.now(datetime.UTC)
        alternatives = [x509.DNSName(n) for n in ([name, *dns] if name else list(dns))]
        alternatives += [x509.IPAddress(ipaddress.ip_address(ip)) for ip in ips]
        builder = (
            x509.CertificateBuilder()
            .subject_name(_name(name or "no name"))
            .issuer_name(self.certificate.subject)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - 2 * _DAY if expired else now - _DAY)
            .not_valid_after(now - _DAY / 2 if expired else now + 30 * _DAY)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(
                x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH, ExtendedKeyUsageOID.CLIENT_AUTH]),
                critical=False,
            )
            .add_extension(
                x509.AuthorityKeyIdentifier.from_issuer_public_key(self._key.public_key()), critical=False
            )
        )
        if alternatives:
            builder = builder.add_extension(x509.SubjectAlternativeName(alternatives), critical=False)
        certificate = builder.sign(self._key, hashes.SHA256())
        stem = self.directory / _file_name(name or "anonymous")
        cert_pem = certificate.public_bytes(serialization.Encoding.PEM)
        if key_in_cert_file:
            path = stem.with_suffix(".pem")
            path.write_bytes(cert_pem + _key_pem(key))
            return path, path
        cert_file, key_file = stem.with_suffix(".cert.pem"), stem.with_suffix(".key.pem")
        cert_file.write_bytes(cert_pem)
        key_file.write_bytes(_key_pem(key))
        return cert_file, key_file


def _file_name(name: str) -> str:
    return "".join(c if c.isalnum() or c in "-_" else "_" for c in name)
