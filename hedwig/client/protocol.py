"""One Twisted client connection to one hub: requests answered through Deferreds (each
with a timeout on the client's clock), deliveries and events handed (by the protocol
session) to the subscription that owns the handle."""

from twisted.internet.defer import Deferred, fail, succeed
from twisted.internet.protocol import Protocol
from twisted.logger import Logger
from twisted.python.failure import Failure

from hedwig.client.config import DEFAULT_TIMEOUT
from hedwig.client.session_driver import SessionDriver
from hedwig.config.tls import handshake_failure
from hedwig.protocol import Op, Status
from hedwig.protocol.addresses import format_address
from hedwig.protocol.errors import ConnectionLost, CouldNotConnect, RequestTimeout, error_for
from hedwig.protocol.requests import encode_hello
from hedwig.protocol.session import ProtocolViolation

log = Logger()


class HubProtocol(SessionDriver, Protocol):
    """One connection to one hub: requests answered through Deferreds, deliveries and
    events handed to the subscription that owns the handle (`call`, `publish`,
    `subscribe`, `consume`, `release`: session_driver.py)."""

    def __init__(
        self, clock, client_name: str = "", timeout: float = DEFAULT_TIMEOUT, address=None, credentials=None
    ):
        self._start_session(address, client_name, timeout, credentials)
        self._clock = clock
        self.ready = Deferred()  # fires with the protocol once HELLO is answered
        self._lost_waiters = []
        self.connection_closed = False

    # -- connection ------------------------------------------------------------------------

    def connectionMade(self):
        set_no_delay = getattr(self.transport, "setTcpNoDelay", None)
        if set_no_delay is not None:
            set_no_delay(True)
        self.call(Op.HELLO, encode_hello(self._client_name)).addCallbacks(self._hello, self._hello_failed)

    def _hello(self, response):
        if response.status is not Status.SUCCESS:
            self._hello_failed(Failure(error_for(response.status, response.message)))
            return
        self.hello = response.value
        if self._credentials is not None:
            authenticated = self.call(Op.AUTH, self._credentials.request_body())
            authenticated.addCallbacks(self._authenticated, self._hello_failed)
            return
        ready, self.ready = self.ready, None
        ready.callback(self)

    def _authenticated(self, response):
        if response.status is not Status.SUCCESS:
            self._hello_failed(Failure(error_for(response.status, response.message)))
            return
        ready, self.ready = self.ready, None
        ready.callback(self)

    def _hello_failed(self, failure):
        if self.ready is not None:
            ready, self.ready = self.ready, None
            ready.errback(failure)
        if self.transport is not None:
            self.transport.loseConnection()

    def dataReceived(self, data):
        try:
            self._session.data_received(data)
        except ProtocolViolation as e:
            log.warn("dropping the connection: {reason}", reason=str(e))
            self.lost = ConnectionLost(message=str(e))
            self.transport.abortConnection()

    def connectionLost(self, reason):
        self.connection_closed = True
        if self.lost is None:
            refused = self._refused_by_tls(reason)
            if refused is not None:
                self.lost = refused
            else:
                self.lost = ConnectionLost(message=f"connection to the hub lost: {reason.getErrorMessage()}")
        for deferred, timer in self._session.take_pending():
            if timer is not None and timer.active():
                timer.cancel()
            deferred.errback(Failure(self.lost))
        if self.ready is not None:
            ready, self.ready = self.ready, None
            ready.errback(Failure(self.lost))
        self._session.detach_all()
        if self.on_lost is not None:
            self.on_lost(self)
        waiters, self._lost_waiters = self._lost_waiters, []
        for waiter in waiters:
            waiter.callback(None)

    def _refused_by_tls(self, reason):
        """CouldNotConnect saying why, for a connection that TLS ended before HELLO was
        answered: a failed handshake shows up here as a lost connection (and a hub that
        refuses the client's certificate under TLS 1.3 answers only after the client's
        side of the handshake is done). None for any other loss."""
        if self.hello is not None:
            return None
        where = format_address(self.address) if self.address is not None else "the hub"
        why = handshake_failure(reason, f"is {where} the hub's TLS port?")
        if why is None:
            return None
        return CouldNotConnect(message=f"{where}: {why}")

    def disconnect(self) -> Deferred:
        """Close the connection; fires once it is closed."""
        if self.connection_closed or self.transport is None:
            return succeed(None)
        d = Deferred()
        self._lost_waiters.append(d)
        self.transport.loseConnection()
        return d

    # -- replies in -------------------------------------------------------------------------

    def response_received(self, request_id, response, pending):
        if pending is None:
            return  # timed out, or a CONSUME's failure: nobody waits for it
        deferred, timer = pending
        if timer is not None and timer.active():
            timer.cancel()
        deferred.callback(response)

    # -- requests --------------------------------------------------------------------------

    def _send_request(self, build, arguments) -> Deferred:
        """build(*arguments, pending) -> (request id, frame or frame parts), sent at once;
        the Deferred of its Response (RequestTimeout past the client's timeout)."""
        if self.lost is not None:
            return fail(self.lost)
        pending = [Deferred(), None]
        request_id, frame = build(*arguments, pending)
        pending[1] = self._clock.callLater(self._timeout, self._timed_out, request_id)
        if isinstance(frame, list):
            self.transport.writeSequence(frame)
        else:
            self.transport.write(frame)
        return pending[0]

    def _timed_out(self, request_id):
        pending = self._session.forget(request_id)
        if pending is not None:
            pending[0].errback(Failure(RequestTimeout(message=f"no reply in {self._timeout} s")))
