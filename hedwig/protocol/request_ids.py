"""Request ids of one connection's requests: 1, 2, ... up to 2**32 - 1, then 1 again.

Id 0 is never used: it is the id of frames nobody asked for (deliveries, events). The
clients' channel and the region link number their requests with this one counter."""

MAX_REQUEST_ID = 0xFFFFFFFF


class RequestIds:
    __slots__ = ("last",)

    def __init__(self):
        self.last = 0

    def next(self) -> int:
        request_id = self.last + 1
        if request_id > MAX_REQUEST_ID:
            request_id = 1
        self.last = request_id
        return request_id
