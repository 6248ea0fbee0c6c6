"""Placement in a region of several hubs (HubRegistry.place) counts the topics it sent
to other hubs until their own load says so: with a region of three hubs fed new topics
through one of them, a hub that wrote its load between two claims was undercounted and
got more than its share (tests/cluster/test_spread.py saw 5/4/3 of 12 now and then)."""

from twisted.internet.task import Clock

from hedwig.hub.zk_hubs import EXPECTED_S, HubInfo, HubRegistry


class _Listeners:
    """The one thing the registry asks of its ZooKeeper session when it is made."""

    def __init__(self):
        self.listeners = []

    def add_listener(self, listener):
        self.listeners.append(listener)


def hub(name: str, topics: int) -> HubInfo:
    return HubInfo(hub=name, topics=topics)


def registry(clock, **loads) -> HubRegistry:
    made = HubRegistry(_Listeners(), None, clock, name="127.0.0.1:1", region="r", load=lambda: (0, 0.0))
    made.take_view({name: hub(name, topics) for name, topics in loads.items()})
    return made


def test_a_load_written_between_two_claims_keeps_the_second_in_the_guess():
    clock = Clock()
    region = registry(clock, **{"127.0.0.1:2": 0})
    region.sent("127.0.0.1:2")
    region.sent("127.0.0.1:2")
    region.take_view({"127.0.0.1:2": hub("127.0.0.1:2", 1)})  # its load after the first claim
    assert region.load_of("127.0.0.1:2") == 2
    region.take_view({"127.0.0.1:2": hub("127.0.0.1:2", 2)})
    assert region.load_of("127.0.0.1:2") == 2


def test_a_hub_sent_topics_is_not_chosen_again_before_others_catch_up():
    clock = Clock()
    region = registry(clock, **{"127.0.0.1:2": 1, "127.0.0.1:3": 1})
    # This hub owns 0 (its own count): it takes the first topic itself.
    assert region.place("t0") == "127.0.0.1:1"
    region._load = lambda: (1, 0.0)
    chosen = region.place("t1")
    region.sent(chosen)
    other = ({"127.0.0.1:2", "127.0.0.1:3"} - {chosen}).pop()
    # The chosen hub's load came in with an unrelated release and claim: no rise, guess kept.
    region.take_view({chosen: hub(chosen, 1), other: hub(other, 1)})
    assert region.place("t2") in ("127.0.0.1:1", other)


def test_a_topic_never_claimed_leaves_the_guess_in_time():
    clock = Clock()
    region = registry(clock, **{"127.0.0.1:2": 0})
    region.sent("127.0.0.1:2")
    assert region.load_of("127.0.0.1:2") == 1
    clock.advance(EXPECTED_S + 1)
    assert region.load_of("127.0.0.1:2") == 0


def test_a_hub_that_left_takes_its_guess_along():
    clock = Clock()
    region = registry(clock, **{"127.0.0.1:2": 0, "127.0.0.1:3": 0})
    region.sent("127.0.0.1:2")
    region.take_view({"127.0.0.1:3": hub("127.0.0.1:3", 0)})
    assert "127.0.0.1:2" not in region._expected


class _LostTopics:
    """A topic manager whose ZooKeeper connection is lost as a round asks for the region's
    topics (kazoo's ConnectionLoss, as ZkMetadataStore translates it)."""

    session = type("Session", (), {"state": "CONNECTED"})()

    def list_topics(self):
        from kazoo.exceptions import ConnectionLoss
        from twisted.internet.defer import fail
        from twisted.python.failure import Failure

        from hedwig.meta.zk_store import translate

        return fail(Failure(ConnectionLoss())).addErrback(translate)


def test_a_rebalancing_round_that_loses_zookeeper_is_skipped_with_a_line_not_an_unhandled_error():
    from twisted.logger import globalLogPublisher

    from hedwig.config.settings import ZooKeeperSettings
    from hedwig.hub.zk_balance import Balancer

    clock = Clock()
    region = registry(clock, **{"127.0.0.1:2": 0})
    region.registered = True
    balancer = Balancer(_LostTopics(), region, delivery=None, settings=ZooKeeperSettings(), clock=clock)
    balancer.running = True
    seen = []
    globalLogPublisher.addObserver(seen.append)
    try:
        outcome = []
        balancer.rebalance().addBoth(outcome.append)
    finally:
        globalLogPublisher.removeObserver(seen.append)
    assert outcome == [None]  # (a failure here is what logged "Unhandled error in Deferred")
    (line,) = [e for e in seen if e.get("log_namespace", "").endswith("Balancer")]
    assert line["log_format"].startswith("rebalancing skipped this round")
    assert "ZooKeeper is not reachable now (ConnectionLoss)" in repr(line["error"])
    assert not balancer._balancing  # (the next round runs)
