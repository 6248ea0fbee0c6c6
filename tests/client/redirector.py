"""A hub that owns nothing: it answers HELLO, then sends every request to `owner` with
NOT_RESPONSIBLE_FOR_TOPIC, as a hub of a region answers for a topic another hub owns.
A real TCP server on 127.0.0.1 (a thread per connection); it counts what it was asked."""

import socketserver
import threading

from hedwig.protocol import FrameDecoder, Op, Status
from tests.client.hubscript import HubScript


class Redirector:
    def __init__(self, owner: str = "", answer: bool = True):
        self.owner = owner
        self.answer = answer  # False: a hub that accepts requests and never answers
        self.requests = []  # ops asked, HELLO excepted
        redirector = self

        class Handler(socketserver.BaseRequestHandler):
            def handle(self):
                decoder = FrameDecoder()
                script = HubScript(redirector.address)
                while True:
                    data = self.request.recv(65536)
                    if not data:
                        return
                    for op, request_id, _body in decoder.feed(data):
                        if op == Op.HELLO:
                            self.request.sendall(script.hello(request_id))
                            continue
                        redirector.requests.append(Op(op))
                        if op != Op.CONSUME and redirector.answer:
                            self.request.sendall(
                                script.error(
                                    request_id, op, Status.NOT_RESPONSIBLE_FOR_TOPIC, redirector.owner
                                )
                            )

        class Server(socketserver.ThreadingTCPServer):
            daemon_threads = True
            allow_reuse_address = True

        self._server = Server(("127.0.0.1", 0), Handler)
        self.address = f"127.0.0.1:{self._server.server_address[1]}"
        self._thread = threading.Thread(target=self._server.serve_forever, args=(0.05,), daemon=True)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc_info):
        self._server.shutdown()
        self._server.server_close()
