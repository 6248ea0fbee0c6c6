"""The blocking client's connection over TLS (the hub's [tls] listener).

An OpenSSL connection must not be used by two threads at once, and the hub stops reading
a client that reads nothing (its IPushProducer), so the TLS socket is non-blocking: every
OpenSSL call is made under one lock and returns at once, and the waiting (for bytes to
read, for room to send) is done by poll() outside it. A sender waiting for room never
stops the reader, and the reader waiting for a reply never stops a sender.
"""

import math
import select
import socket
import ssl
import threading
import time

from hedwig.client.connection import _NOTHING_TO_READ, _READ_SLICE, BlockingConnection
from hedwig.config.tls import ssl_failure
from hedwig.protocol.addresses import format_address
from hedwig.protocol.errors import ConnectionLost, CouldNotConnect


class TlsConnection(BlockingConnection):
    """A BlockingConnection over TLS: the hub verified against `tls` (its CA file or the
    system's trust store, and the name `tls.name_for(host)`), the handshake bounded by
    the connect timeout. A failed handshake, or a hub that refuses the client's
    certificate in answer to HELLO (TLS 1.3 refuses only after the client's side of the
    handshake is done), raises CouldNotConnect saying why.

    The socket is non-blocking, OpenSSL calls are made under `_tls_lock` and waits are
    poll()s outside it (see the module's docstring): reads cost a poll() and a read where
    the plain connection makes one recv, the price of sharing one OpenSSL connection
    between threads.
    """

    def __init__(
        self, address, connect_timeout, request_timeout, client_name, tls, context=None, credentials=None
    ):
        self._tls = tls
        self._context = context if context is not None else tls.ssl_context()
        self._tls_lock = threading.Lock()
        try:
            super().__init__(address, connect_timeout, request_timeout, client_name, credentials)
        except ConnectionLost as e:
            raise CouldNotConnect(message=e.message) from None

    def publish_one_quick(self, topic: str, payload: bytes):
        """Every read goes through OpenSSL under its lock here: the general path."""
        return self.publish_one(topic, payload)

    def _open_socket(self, connect_timeout: float):
        where = format_address(self.address)
        name = self._tls.name_for(self.address[0])
        # The TCP socket still has the connect timeout: it bounds each step of the handshake.
        sock = self._tcp(connect_timeout)
        try:
            sock = self._context.wrap_socket(sock, server_hostname=name)
        except (OSError, ValueError) as e:
            sock.close()
            raise CouldNotConnect(message=f"{where}: {self._tls_reason(e)}") from None
        sock.setblocking(False)
        # The descriptor is kept: once the socket is closed, poll() on it answers at once
        # (POLLNVAL) and the next OpenSSL call fails, where fileno() would be -1.
        self._fd = sock.fileno()
        self._readable = select.poll()
        self._readable.register(self._fd, select.POLLIN)
        return sock

    def _tls_reason(self, error: OSError) -> str:
        where = format_address(self.address)
        return ssl_failure(error, self._tls.name_for(self.address[0]), f"is {where} the hub's TLS port?")

    def _lose_to(self, error: OSError, failed: str) -> None:
        """Lose the connection to `error`; a TLS alert before HELLO was answered (the hub
        refused this client's certificate, or the lack of one) is said as such."""
        where = format_address(self.address)
        if self.hello is None and isinstance(error, ssl.SSLError):
            self._lose(f"{where}: {self._tls_reason(error)}")
        else:
            self._lose(f"{failed} {where} failed: {error}")

    def _read_once(self, remaining) -> None:
        sock = self._sock
        lock = self._tls_lock
        try:
            with lock:
                pending = sock.pending()
            if not pending:
                wait = _READ_SLICE if remaining is None or remaining > _READ_SLICE else max(remaining, 0.001)
                if not self._readable.poll(math.ceil(wait * 1000)):
                    return  # nothing within the slice: the caller looks at its deadline
            with lock:
                received = sock.recv_into(self._read_buffer)
        except _NOTHING_TO_READ:
            # Part of a TLS record, or only TLS's own messages (session tickets): the
            # next call waits for the rest. (OpenSSL allows the read again.)
            return
        except OSError as e:
            self._lose_to(e, "connection to")
            return
        self._received(received)

    def buffered(self) -> bool:
        with self._tls_lock:
            return self._sock.pending() > 0

    def _read_now(self) -> int:
        """BlockingConnection._read_now through OpenSSL: SSLSocket takes no recv flags, but
        this socket is non-blocking, and a read with nothing there raises SSLWantReadError
        (also when only TLS's own messages came, such as session tickets)."""
        with self._tls_lock:
            return self._sock.recv_into(self._read_buffer)

    def _shutdown_socket(self) -> None:
        # The TCP socket's shutdown, which wakes a reader in poll(): SSLSocket.shutdown
        # would drop its OpenSSL object while another thread may be using it.
        try:
            socket.socket.shutdown(self._sock, socket.SHUT_RDWR)
        except OSError:
            pass

    def _close_socket(self) -> None:
        self._shutdown_socket()
        with self._tls_lock:  # no OpenSSL call is under way, none starts on a live object
            super()._close_socket()

    def _send(self, parts) -> None:
        # SSLSocket has no sendmsg: the parts go out as one buffer.
        data = memoryview(parts[0] if len(parts) == 1 else b"".join(parts))
        with self._send_lock:
            if self.lost is not None:
                raise self.lost
            try:
                self._send_all(data)
            except OSError as e:
                self._lose_to(e, "sending to")
                raise self.lost from None

    def _send_all(self, data: memoryview) -> None:
        """Send every byte, waiting for room outside the OpenSSL lock; fails after the
        request timeout without progress (SO_SNDTIMEO's part in the plain connection)."""
        sock = self._sock
        lock = self._tls_lock
        deadline = None
        writable = None
        while data:
            try:
                with lock:
                    sent = sock.send(data)
                data = data[sent:]
                deadline = None
                continue
            except ssl.SSLWantReadError:
                events = select.POLLIN  # OpenSSL must read first (a renegotiation): rare
            except (ssl.SSLWantWriteError, BlockingIOError, InterruptedError):
                events = select.POLLOUT
            now = time.monotonic()
            if deadline is None:
                deadline = now + self.request_timeout
            elif now >= deadline:
                raise TimeoutError(f"no room to send for {self.request_timeout} s")
            if writable is None:
                writable = select.poll()
            # The same data goes to the next send, as OpenSSL asks after WANT_WRITE.
            writable.register(self._fd, events)
            writable.poll(math.ceil((deadline - now) * 1000))
