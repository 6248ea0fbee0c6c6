"""One asyncio client connection to one hub: the fourth driver of the protocol session.

Like the Twisted client's HubProtocol, it owns no protocol logic of its own: request
ids, reply matching, frame parsing and the subscriptions of the connection by handle
are the HubSession's (hedwig/protocol/session.py). What is left here is what needs the
event loop: a Future per request, its timeout on the loop's clock, writing, and what a
lost connection does to the requests and subscriptions on it.
"""

import asyncio
import socket
import ssl

from hedwig.client.session_driver import SessionDriver
from hedwig.protocol import Op, Status
from hedwig.protocol.addresses import format_address
from hedwig.protocol.errors import ConnectionLost, CouldNotConnect, RequestTimeout, error_for
from hedwig.protocol.requests import encode_hello
from hedwig.protocol.session import ProtocolViolation


class AioHubProtocol(SessionDriver, asyncio.Protocol):
    """One connection to one hub: requests answered through Futures (each with a timeout),
    deliveries and events handed by the session to the subscription of the handle
    (`call`, `publish`, `subscribe`, `consume`, `release`: session_driver.py)."""

    def __init__(self, loop, address, client_name: str, timeout: float, credentials=None):
        self._start_session(address, client_name, timeout, credentials)
        self._loop = loop
        self.transport = None
        self.ready = loop.create_future()  # the HELLO reply's value, or why it failed
        # (Read here too: a connection given up before HELLO fails it with nobody waiting.)
        self.ready.add_done_callback(lambda f: f.cancelled() or f.exception())

    # -- connection ------------------------------------------------------------------------

    def connection_made(self, transport):
        self.transport = transport
        sock = transport.get_extra_info("socket")
        if sock is not None and sock.family in (socket.AF_INET, socket.AF_INET6):
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.call(Op.HELLO, encode_hello(self._client_name)).add_done_callback(self._hello)

    def _hello(self, future) -> None:
        if self.ready.done():
            return
        if future.cancelled():
            return
        error = future.exception()
        if error is None:
            response = future.result()
            if response.status is Status.SUCCESS:
                self.hello = response.value
                if self._credentials is None:
                    self.ready.set_result(self)
                else:  # ready once AUTH is answered (the hub takes nothing while it checks)
                    authenticated = self.call(Op.AUTH, self._credentials.request_body())
                    authenticated.add_done_callback(self._authenticated)
                return
            error = error_for(response.status, response.message)
        self.ready.set_exception(error)
        self.transport.close()

    def _authenticated(self, future) -> None:
        if self.ready.done() or future.cancelled():
            return
        error = future.exception()
        if error is None:
            response = future.result()
            if response.status is Status.SUCCESS:
                self.ready.set_result(self)
                return
            error = error_for(response.status, response.message)
        self.ready.set_exception(error)
        self.transport.close()

    def data_received(self, data):
        try:
            self._session.data_received(data)
        except ProtocolViolation as e:
            self.lost = ConnectionLost(message=str(e))
            self.transport.abort()

    def connection_lost(self, exc):
        if self.lost is None:
            where = format_address(self.address)
            if self.hello is None and isinstance(exc, ssl.SSLError):
                self.lost = CouldNotConnect(message=f"{where}: TLS: {exc.reason or exc}")
            else:
                why = f": {exc}" if exc is not None else ""
                self.lost = ConnectionLost(message=f"connection to {where} lost{why}")
        for future, timer in self._session.take_pending():
            timer.cancel()
            if not future.done():
                future.set_exception(self.lost)
        if not self.ready.done():
            self.ready.set_exception(self.lost)
        self._session.detach_all()
        if self.on_lost is not None:
            self.on_lost(self)

    # -- replies in (ISessionReceiver) --------------------------------------------------------

    def response_received(self, request_id, response, pending):
        if pending is None:
            return  # timed out, or a CONSUME's failure: nobody waits for it
        future, timer = pending
        timer.cancel()
        if not future.done():
            future.set_result(response)

    # -- requests ----------------------------------------------------------------------------

    def _send_request(self, build, arguments) -> asyncio.Future:
        """build(*arguments, pending) -> (request id, frame or frame parts), written at
        once; the Future of its Response (RequestTimeout past the client's timeout)."""
        future = self._loop.create_future()
        if self.lost is not None:
            future.set_exception(self.lost)
            return future
        pending = [future, None]
        request_id, frame = build(*arguments, pending)
        pending[1] = self._loop.call_later(self._timeout, self._timed_out, request_id)
        if isinstance(frame, list):
            self.transport.writelines(frame)
        else:
            self.transport.write(frame)
        return future

    def _timed_out(self, request_id) -> None:
        pending = self._session.forget(request_id)
        if pending is not None and not pending[0].done():
            pending[0].set_exception(RequestTimeout(message=f"no reply in {self._timeout} s"))

    def close(self) -> None:
        if self.transport is not None and self.lost is None:
            self.transport.close()

    def disconnect(self) -> None:
        """Close the connection (the client is closing: nothing waits for the end)."""
        self.close()
