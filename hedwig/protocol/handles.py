"""The hub's side of a connection's subscription handles, without I/O.

A SUBSCRIBE names a subscription by (topic, subscriber id); the hub answers with a
handle (u32, never 0) that the connection's DELIVERY, CONSUME, ACK, ... frames carry
while the subscription is attached. The protocol promises that no frame of a handle
precedes the SUBSCRIBE reply that announces it, so what is sent for a handle before its
reply is out waits here and goes out right behind the reply. The table keeps that rule,
which handles are attached (CLIENT_NOT_SUBSCRIBED otherwise), and which subscription
each names (CLIENT_ALREADY_SUBSCRIBED for a second attach on one connection).

`keys`, `handles` and `held` are read directly on the delivery path (one dict lookup,
no call); they are only ever changed in place, never replaced.
"""

from hedwig.protocol.layouts import RequestRefused
from hedwig.protocol.status import Status

MAX_HANDLE = 0xFFFFFFFF  # handles are u32, never 0


class HandleTable:
    __slots__ = ("keys", "handles", "held", "held_bytes", "_next")

    def __init__(self):
        self.keys = {}  # handle -> (topic, subscriber id)
        self.handles = {}  # (topic, subscriber id) -> handle
        self.held = {}  # handle -> chunks to send right after its SUBSCRIBE reply
        self.held_bytes = 0
        self._next = 1

    def __len__(self) -> int:
        """Subscriptions attached or being attached."""
        return len(self.keys)

    def open(self, key) -> int:
        """A new handle for the subscription `key` a SUBSCRIBE asks for; what is sent for
        it is held until `answered`. CLIENT_ALREADY_SUBSCRIBED when `key` has one here."""
        attached = self.handles.get(key)
        if attached is not None:
            topic, subscriber_id = key
            raise RequestRefused(
                Status.CLIENT_ALREADY_SUBSCRIBED,
                f"{subscriber_id} is already attached to {topic} on this connection (handle {attached})",
            )
        handle = self._next
        keys, held = self.keys, self.held
        while handle in keys or handle in held:
            handle = handle + 1 if handle < MAX_HANDLE else 1
        self._next = handle + 1 if handle < MAX_HANDLE else 1
        keys[handle] = key
        self.handles[key] = handle
        held[handle] = []
        return handle

    def attached(self, handle: int):
        """(topic, subscriber id) of the subscription `handle` names, once its SUBSCRIBE
        is answered; CLIENT_NOT_SUBSCRIBED otherwise."""
        key = self.keys.get(handle)
        if key is None or handle in self.held:
            raise RequestRefused(
                Status.CLIENT_NOT_SUBSCRIBED, f"no subscription with handle {handle} on this connection"
            )
        return key

    def hold(self, handle: int, chunks) -> bool:
        """Whether `chunks` for `handle` were held (its SUBSCRIBE is not answered yet)."""
        held = self.held.get(handle)
        if held is None:
            return False
        held.extend(chunks)
        self.held_bytes += sum(map(len, chunks))
        return True

    def answered(self, handle: int) -> list:
        """The SUBSCRIBE of `handle` was answered: what was held for it, to send now."""
        chunks = self.held.pop(handle, None)
        if chunks:
            self.held_bytes -= sum(map(len, chunks))
        return chunks

    def refused(self, handle: int, key) -> list:
        """The SUBSCRIBE of `handle` for `key` failed: the handle is free again, what was
        held for it dropped (and returned)."""
        if self.keys.get(handle) == key:
            del self.keys[handle]
            self.handles.pop(key, None)
        return self.answered(handle)

    def close(self, handle: int):
        """CLOSE_SUBSCRIPTION: the key of the attached `handle`, which is free again
        (CLIENT_NOT_SUBSCRIBED for one that is not attached)."""
        key = self.attached(handle)
        del self.keys[handle]
        del self.handles[key]
        return key

    def forget(self, key) -> list | None:
        """The subscription `key` was deleted (UNSUBSCRIBE on this connection): its
        handle is free again; what was held for it is dropped (and returned; None when
        it had no handle here)."""
        handle = self.handles.pop(key, None)
        if handle is None:
            return None
        self.keys.pop(handle, None)
        return self.answered(handle) or []

    def end(self, handle: int):
        """The hub ended the subscription of `handle`: its key (None when it had none
        here); the handle is free once its EVENT is sent."""
        key = self.keys.pop(handle, None)
        if key is not None:
            self.handles.pop(key, None)
        return key

    def clear(self) -> None:
        """The connection is gone."""
        self.keys.clear()
        self.handles.clear()
        self.held.clear()
        self.held_bytes = 0
