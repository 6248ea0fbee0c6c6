"""Where a region keeps its state in ZooKeeper: every path under the region's root, once.

    <root>                              {"region": NAME, "layout": 1}: whose root it is
    <root>/hubs/<host:port>             ephemeral, one per live hub: its address and load
    <root>/owners/<topic>               ephemeral: the hub that owns the topic
    <root>/assignments/<topic>          ephemeral (of the hub that chose): the hub chosen
                                        to claim an unowned topic, which claims it when the
                                        redirected request arrives (Hedwig's shouldClaim)
    <root>/handoffs/<hub>/<topic>       ephemeral (of the hub letting it go): a topic shed
                                        to <hub> by rebalancing, which claims it at once
                                        ({"from": hub, "why": ...})
    <root>/epochs/<topic>               persistent: its version counts the topic's claims,
                                        its data names the last hub to claim it; an
                                        owner's metadata writes check it (fencing)
    <root>/topics/<topic>               the topic's ledger ranges (its version is the
                                        record's compare-and-set version)
    <root>/subscriptions/<topic>/<id>   a subscription: consumed seq-id, preferences and
                                        (shared, pull) the acks above it, in base64
    <root>/garbage/<ledger id>          a ledger dropped by a topic, not yet deleted

Record data is the JSON of hedwig.meta.codec, as the SQLite store keeps it. Names are
percent-encoded where ZooKeeper would refuse them: a topic or subscriber name is
[A-Za-z0-9._-], all allowed in a znode name except the names "." and "..", which are
written "%2E" and "%2E%2E" (a name holding any other character is escaped the same way).
docs/operations.md ("Regions of several hubs") shows the same tree.
"""

from urllib.parse import quote, unquote

LAYOUT_VERSION = 1
BRANCHES = ("hubs", "owners", "assignments", "handoffs", "epochs", "topics", "subscriptions", "garbage")
GARBAGE_DIGITS = 12


def encode_name(name: str) -> str:
    """A topic, subscriber or hub name as one znode name."""
    encoded = quote(name, safe="")
    if encoded in (".", ".."):
        return encoded.replace(".", "%2E")
    return encoded


def decode_name(encoded: str) -> str:
    return unquote(encoded) if "%" in encoded else encoded


class ZkLayout:
    """The paths of one region's tree under `root` ("/hedwig" by default)."""

    def __init__(self, root: str):
        root = "/" + root.strip("/")
        if root == "/":
            raise ValueError("the ZooKeeper root of a region is a path below /, such as /hedwig")
        self.root = root

    def branch(self, name: str) -> str:
        return f"{self.root}/{name}"

    def hub(self, name: str) -> str:
        return f"{self.root}/hubs/{encode_name(name)}"

    def owner(self, topic: str) -> str:
        return f"{self.root}/owners/{encode_name(topic)}"

    def assignment(self, topic: str) -> str:
        return f"{self.root}/assignments/{encode_name(topic)}"

    def handoffs(self, hub: str) -> str:
        return f"{self.root}/handoffs/{encode_name(hub)}"

    def handoff(self, hub: str, topic: str) -> str:
        return f"{self.handoffs(hub)}/{encode_name(topic)}"

    def epoch(self, topic: str) -> str:
        return f"{self.root}/epochs/{encode_name(topic)}"

    def topic(self, topic: str) -> str:
        return f"{self.root}/topics/{encode_name(topic)}"

    def subscriptions(self, topic: str) -> str:
        return f"{self.root}/subscriptions/{encode_name(topic)}"

    def subscription(self, topic: str, subscriber_id: str) -> str:
        return f"{self.subscriptions(topic)}/{encode_name(subscriber_id)}"

    def garbage(self, ledger_id: int) -> str:
        return f"{self.root}/garbage/{ledger_id:0{GARBAGE_DIGITS}d}"
