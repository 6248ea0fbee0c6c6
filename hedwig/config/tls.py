"""TLS for the hub's second listener, region links and clients: PEM files in, options out.

One place turns the configured files into what each side needs: Twisted's
CertificateOptions for the hub's TLS listener, Twisted's client connection creator for a
child hub's link to its parent (and the Twisted client), an `ssl.SSLContext` for the
blocking client. Peers are always verified: a server against `ca_file` (or the system's
trust store when it is empty) and the name it was reached by, a client certificate
against `ca_file`. TLS 1.2 is the least version spoken.

pyOpenSSL and service_identity (Twisted's `tls` extra, hedwig's `tls` extra) are needed
only once TLS is configured; without them the configuration is refused with what to
install, never a traceback at the first connection.
"""

import re
import ssl
from dataclasses import dataclass
from pathlib import Path

from hedwig.config.extras import install_hint

INSTALL_HINT = f"TLS needs pyOpenSSL and service_identity: {install_hint('tls')}"

_PEM_CERTIFICATE = re.compile(rb"-----BEGIN CERTIFICATE-----.+?-----END CERTIFICATE-----", re.DOTALL)


class TlsError(ValueError):
    """A TLS file that cannot be used; the message names the file and why."""


def tls_available() -> bool:
    """True when pyOpenSSL and service_identity can be imported (Twisted verifies names with it)."""
    try:
        import OpenSSL  # noqa: F401
        import service_identity  # noqa: F401
    except ImportError:
        return False
    return True


def _read(path: str, what: str) -> bytes:
    try:
        return Path(path).read_bytes()
    except OSError as e:
        raise TlsError(f"{what} {path}: {e.strerror or e}") from None


def read_certificates(path: str, what: str) -> list:
    """The PEM certificate blocks of `path`, in order; TlsError when it holds none."""
    blocks = _PEM_CERTIFICATE.findall(_read(path, what))
    if not blocks:
        raise TlsError(f"{what} {path} holds no PEM certificate")
    return blocks


def _load_certificates(path: str, what: str) -> list:
    from twisted.internet.ssl import Certificate

    certificates = []
    for block in read_certificates(path, what):
        try:
            certificates.append(Certificate.loadPEM(block))
        except Exception as e:
            raise TlsError(f"{what} {path}: a certificate does not parse ({e})") from None
    return certificates


def load_identity(cert_file: str, key_file: str = ""):
    """(PrivateCertificate, [chain Certificates]) from a certificate file (leaf first,
    then its chain) and its key (`key_file`, or in `cert_file` when empty)."""
    from OpenSSL import crypto
    from twisted.internet.error import VerifyError
    from twisted.internet.ssl import KeyPair, PrivateCertificate

    certificates = _load_certificates(cert_file, "certificate file")
    key_path = key_file or cert_file
    key_pem = _read(key_path, "key file")
    try:
        key = KeyPair.load(key_pem, crypto.FILETYPE_PEM)
    except Exception:
        raise TlsError(f"key file {key_path} holds no PEM private key (or it is encrypted)") from None
    try:
        leaf = PrivateCertificate.fromCertificateAndKeyPair(certificates[0], key)
    except VerifyError:
        raise TlsError(
            f"key file {key_path} does not hold the key of the certificate in {cert_file}"
        ) from None
    return leaf, certificates[1:]


def _minimum_version():
    from twisted.internet.ssl import TLSVersion

    return TLSVersion.TLSv1_2


def server_options(settings):
    """CertificateOptions for the hub's TLS listener from [tls] settings. With a `ca_file`
    clients are asked for a certificate and one they present must verify against it;
    `require_client_cert` refuses clients without one."""
    from twisted.internet.ssl import CertificateOptions

    identity, chain = load_identity(settings.cert_file, settings.key_file)
    authorities = _load_certificates(settings.ca_file, "CA file") if settings.ca_file else []
    return CertificateOptions(
        privateKey=identity.privateKey.original,
        certificate=identity.original,
        extraCertChain=[c.original for c in chain],
        verify=bool(authorities),
        caCerts=[c.original for c in authorities],
        requireCertificate=bool(authorities) and settings.require_client_cert,
        raiseMinimumTo=_minimum_version(),
    )


@dataclass(frozen=True)
class ClientTls:
    """How a client (or a child hub) reaches a hub over TLS.

    `ca_file`: PEM certificates of the authorities trusted to sign the hub's certificate
    (empty: the system's trust store). `cert_file` / `key_file`: a certificate to present
    (hubs that ask for one; the key may sit in `cert_file`). `server_name`: the name the
    hub's certificate must carry (empty: the host connected to, name or IP address).
    """

    ca_file: str = ""
    cert_file: str = ""
    key_file: str = ""
    server_name: str = ""

    def check(self) -> None:
        """Read every file now: TlsError naming the one that cannot be used."""
        if self.ca_file:
            _load_certificates(self.ca_file, "CA file")
        if self.cert_file:
            load_identity(self.cert_file, self.key_file)
        elif self.key_file:
            raise TlsError(f"key file {self.key_file} is set without its certificate file")

    def name_for(self, host: str) -> str:
        return self.server_name or host

    def creator(self, host: str):
        """Twisted's client connection creator, verifying the hub as `name_for(host)`."""
        from twisted.internet.ssl import optionsForClientTLS, trustRootFromCertificates

        trust = (
            trustRootFromCertificates(_load_certificates(self.ca_file, "CA file")) if self.ca_file else None
        )
        identity = load_identity(self.cert_file, self.key_file)[0] if self.cert_file else None
        return optionsForClientTLS(
            self.name_for(host),
            trustRoot=trust,
            clientCertificate=identity,
            extraCertificateOptions={"raiseMinimumTo": _minimum_version()},
        )

    def ssl_context(self) -> ssl.SSLContext:
        """A standard-library context for the blocking client (needs no pyOpenSSL)."""
        try:
            context = ssl.create_default_context(cafile=self.ca_file or None)
        except (OSError, ssl.SSLError) as e:
            raise TlsError(f"CA file {self.ca_file}: {e}") from None
        context.minimum_version = ssl.TLSVersion.TLSv1_2
        if self.cert_file:
            try:
                context.load_cert_chain(self.cert_file, self.key_file or None)
            except (OSError, ssl.SSLError) as e:
                raise TlsError(f"certificate file {self.cert_file} / key file {self.key_file}: {e}") from None
        return context


def peer_certificate(transport):
    """The verified certificate the peer of a TLS `transport` presented (pyOpenSSL X509),
    or None: a plain connection, or a TLS client that presented none."""
    return transport.getPeerCertificate() if is_tls(transport) else None


def certificate_names(certificate) -> set:
    """The names a certificate (pyOpenSSL X509) is issued to: its subjectAltName DNS
    names, or its subject's common name when it has none (lower case)."""
    from cryptography import x509
    from cryptography.x509.oid import NameOID

    cert = certificate.to_cryptography()
    try:
        alternative = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
        names = alternative.get_values_for_type(x509.DNSName)
    except x509.ExtensionNotFound:
        names = []
    if not names:
        names = [a.value for a in cert.subject.get_attributes_for_oid(NameOID.COMMON_NAME)]
    return {str(name).lower() for name in names}


def is_tls(transport) -> bool:
    from twisted.internet.interfaces import ISSLTransport

    return ISSLTransport.providedBy(transport)


def _mismatched_name(mismatch) -> str:
    identity = getattr(mismatch, "mismatched_id", mismatch)
    for attribute in ("hostname", "ip"):
        value = getattr(identity, attribute, None)
        if value is not None:
            return value.decode("ascii", "replace") if isinstance(value, bytes) else str(value)
    return str(identity)


# What a TLS client sees when the port it reached answers in plain hedwig frames.
_NOT_TLS = ("wrong version number", "record layer failure", "packet length too long", "http request")


def handshake_failure(failure, plain_port_hint: str = "") -> str | None:
    """A sentence for a connection Twisted lost to TLS (a certificate that does not
    verify, a name it does not carry, a peer that does not speak TLS, for which
    `plain_port_hint` is added); None for any other loss."""
    try:
        from OpenSSL import SSL
        from service_identity import VerificationError
    except ImportError:
        return None
    error = failure.value
    if isinstance(error, VerificationError):
        names = ", ".join(_mismatched_name(e) for e in error.errors)
        return f"TLS: the certificate is not issued to {names}, the name it was reached by"
    if isinstance(error, SSL.Error):
        reasons = []
        for detail in error.args[0] if error.args and isinstance(error.args[0], list) else [error.args]:
            reason = detail[-1] if isinstance(detail, tuple) and detail else detail
            if reason and str(reason) not in reasons:
                reasons.append(str(reason))
        said = ", ".join(reasons) or "no reason given"
        if plain_port_hint and any(r.lower() in _NOT_TLS for r in reasons):
            said += f" ({plain_port_hint})"
        return f"TLS handshake failed: {said}"
    return None


# OpenSSL's verification codes for a certificate that does not carry the name asked for.
_NAME_MISMATCH = (62, 64)  # X509_V_ERR_HOSTNAME_MISMATCH, X509_V_ERR_IP_ADDRESS_MISMATCH
_OPENSSL_TEXT = re.compile(r"^\[[A-Z0-9_]+: [A-Z0-9_]+\] (?P<text>.*?)(?: \(_ssl\.c:\d+\))?$")


def ssl_failure(error: OSError, name: str, plain_port_hint: str) -> str:
    """handshake_failure for the standard library's ssl (the blocking client): a sentence
    for a TLS failure reaching a hub as `name`, without OpenSSL's codes and source lines,
    with `plain_port_hint` where the port seems not to speak TLS (or does not answer)."""
    if isinstance(error, ssl.SSLCertVerificationError):
        if error.verify_code in _NAME_MISMATCH:
            return f"TLS: the certificate is not issued to {name}, the name it was reached by"
        return f"TLS handshake failed: certificate verify failed: {error.verify_message}"
    if isinstance(error, ssl.SSLError):
        match = _OPENSSL_TEXT.match(str(error))
        text = match.group("text") if match else (error.reason or str(error))
        if error.reason == "TLSV13_ALERT_CERTIFICATE_REQUIRED":
            return f"TLS: the hub requires a client certificate ({text})"
        if (error.reason or "").replace("_", " ").lower() in _NOT_TLS:
            text += f" ({plain_port_hint})"
        return f"TLS handshake failed: {text}"
    if isinstance(error, TimeoutError):
        return f"TLS handshake failed: no answer ({plain_port_hint})"
    return f"TLS handshake failed: {error.strerror or error}"
