"""A topic's options travel along the region tree with its relay: a region's copy of a
compacted topic is compacted too.

Compaction is the one option, and it only ever goes on (a table cannot become a log
again: what compaction dropped is gone), so the rule is a union: a link relaying a topic
either way makes both ends compacted when one is, and each hub that so becomes
compacted tells its other neighbours relaying the topic, until every region relaying it
is. A conflict (the topic created `--compact` in one region, plain in another) ends the
same way: compacted everywhere. Kafka's MirrorMaker 2 likewise copies a topic's
`cleanup.policy` to its mirrors, existing ones included.

On the wire (TOPIC_OPTIONS, hedwig/region/wire.py): the child asks, the parent answers.
A child sends its options of a topic when its link starts relaying the topic (its relay
subscription at the parent attached, or its relay up attached) and when they change
while it relays the topic; the parent takes them (for a topic it relays with that child
only) and answers with its own, which the child takes. A parent whose options of a topic
change tells the child regions relaying it in a TOPIC_OPTIONS of request id 0, but only
over links whose child has sent one: a child hub that does not know the op never gets
one (it would take it for a protocol violation). A parent that does not know the op
answers UNKNOWN_OPERATION (NOT_AUTHORIZED with [auth] on): the link goes on relaying
as before, without options, until it reconnects.
"""

from twisted.logger import Logger

from hedwig.protocol.admin_requests import CreateTopic
from hedwig.protocol.ops import Op
from hedwig.protocol.requests import RequestRefused
from hedwig.protocol.status import Status
from hedwig.region.link import LinkDropped
from hedwig.region.wire import (
    COMPACTION,
    decode_topic_options,
    decode_topic_options_reply,
    encode_topic_options,
    topic_options_frame,
    topic_options_of,
)

_logger = Logger()

# What a parent hub that does not know TOPIC_OPTIONS answers it ([auth] on: the op has no
# permission there, so only an admin may send it).
_NOT_KNOWN = (Status.UNKNOWN_OPERATION, Status.NOT_AUTHORIZED)


class TopicOptions:
    """This hub's side of TOPIC_OPTIONS: what it tells its neighbours, what it takes."""

    def __init__(self, manager):
        self.manager = manager
        self.hub = manager.hub
        self.adopted = 0  # topics made compacted here by a neighbour's options

    # -- a child hub: to its parent ---------------------------------------------------------

    def exchange(self, session, topic: str) -> None:
        """Tell the parent this hub's options of `topic` (a relay of it with the parent
        started, or the options changed); take the parent's from its answer."""
        if session.closed or not session.takes_options:
            return
        d = self.hub.topics.acquire(topic)
        d.addCallback(lambda topic_log: self._ask(session, topic, topic_options_of(topic_log)))
        d.addErrback(self._not_sent, session, topic)

    def _ask(self, session, topic: str, options: int):
        if session.closed or not session.takes_options:
            return None
        asked = session.link.request(Op.TOPIC_OPTIONS, encode_topic_options(topic, options))
        return asked.addCallback(self._answered, session, topic, options)

    def _answered(self, reply, session, topic: str, sent: int):
        status, message, payload = reply
        if status in _NOT_KNOWN:
            if session.takes_options:
                session.takes_options = False
                _logger.warn(
                    "region link to {parent}: the parent's hub does not take TOPIC_OPTIONS ({status}: "
                    "an older hub?); topics' compaction does not travel over this link",
                    parent=session.parent,
                    status=status.name,
                )
            return None
        if status is not Status.SUCCESS:
            _logger.warn(
                "region link to {parent}: the parent refused the options of {topic}: {status}: {message}",
                parent=session.parent,
                topic=topic,
                status=status.name,
                message=message,
            )
            return None
        theirs = decode_topic_options_reply(payload)
        if theirs & COMPACTION and not sent & COMPACTION and not session.closed:
            self.adopt(topic, session.parent).addErrback(lambda _f: None)  # (adopt logs it)
        return None

    def _not_sent(self, failure, session, topic: str) -> None:
        if failure.check(LinkDropped) or session.closed:
            return
        _logger.warn(
            "region link to {parent}: the options of {topic} were not sent: {error}",
            parent=session.parent,
            topic=topic,
            error=failure.getErrorMessage(),
        )

    def pushed(self, session, body) -> None:
        """A TOPIC_OPTIONS from the parent (request id 0): its options of a topic changed."""
        try:
            topic, options = decode_topic_options(body)
        except RequestRefused as e:
            _logger.warn(
                "region link to {parent}: a malformed TOPIC_OPTIONS from the parent, ignored: {why}",
                parent=session.parent,
                why=e.reason,
            )
            return
        manager = self.manager
        if not options & COMPACTION or not manager.ownership.owns(topic):
            return  # (in a region of several hubs the topic's owner takes it)
        if manager.interest.wants(topic, session.parent) or topic in session.parent_wants:
            self.adopt(topic, session.parent).addErrback(lambda _f: None)

    # -- a parent hub: from its children ----------------------------------------------------

    def request(self, connection, body):
        """TOPIC_OPTIONS from a child: take its options when this hub relays the topic with
        that child; Deferred[the reply payload: this hub's options of the topic]."""
        children = self.manager.children
        link = children.link_of(connection)
        if link is None:
            raise RequestRefused(
                Status.REGION_REFUSED, "TOPIC_OPTIONS is taken only on a region link (send REGION_LINK first)"
            )
        topic, options = decode_topic_options(body)
        link.takes_options = True
        topics = self.hub.topics
        if options & COMPACTION and self._relays_with(topic, link.region):
            adopted = self.adopt(topic, link.region)
        else:
            adopted = topics.exists(topic)  # (nothing is created for a topic not relayed)

        def mine(exists):
            if not exists:
                return b"\x00"
            return topics.acquire(topic).addCallback(lambda topic_log: bytes([topic_options_of(topic_log)]))

        return adopted.addCallback(lambda _: topics.exists(topic)).addCallback(mine)

    def _relays_with(self, topic: str, region: str) -> bool:
        """Whether this hub relays `topic` with child `region`, either way."""
        interest = self.manager.interest
        return interest.wants(topic, region) or region in interest.relays(topic)

    # -- taking a neighbour's options, and telling the others -------------------------------

    def adopt(self, topic: str, source: str):
        """Make this region's copy of `topic` compacted, as region `source`'s is: created
        so when it does not exist, an existing plain copy made so. Once it changed, the
        other neighbours relaying the topic are told. Deferred[bool]: whether it changed."""
        hub = self.hub
        created = hub.create_topic(CreateTopic(topic, True))

        def existing(reply):
            return reply["created"]  # (created compacted now; or it was already)

        def plain(failure):
            failure.trap(RequestRefused)
            if failure.value.status is not Status.TOPIC_EXISTS:
                return failure
            # (it exists without compaction: made compacted, as a create never does)
            return hub.topics.acquire(topic).addCallback(lambda topic_log: topic_log.make_compacted())

        def changed(did):
            if did:
                self.adopted += 1
                _logger.info(
                    "topic {topic}: compacted from now on, as region {source}'s copy is (its options "
                    "travel with the relay)",
                    topic=topic,
                    source=source,
                )
                self.spread(topic, source)
            return did

        def failed(failure):
            _logger.warn(
                "topic {topic}: could not make it compacted as region {source}'s copy is: {error}",
                topic=topic,
                source=source,
                error=failure.getErrorMessage(),
            )
            return failure

        return created.addCallbacks(existing, plain).addCallbacks(changed, failed)

    def spread(self, topic: str, source: str) -> None:
        """This hub's options of `topic` changed: tell every neighbour relaying it but
        `source` (the parent by TOPIC_OPTIONS, child regions by its pushed form)."""
        manager = self.manager
        parents = manager.parents
        if parents is not None and source != manager.parent:
            sessions = [s for s in parents.sessions.values() if topic in s.parent_wants]
            down = parents.sessions.get(parents.down.get(topic))
            if down is not None and down not in sessions:
                sessions.append(down)
            for session in sessions:
                self.exchange(session, topic)
        frame = None
        for region, hubs in list(manager.children.links.items()):
            if region == source or not self._relays_with(topic, region):
                continue
            for link in hubs.values():
                if link.takes_options and link.connection.is_open:
                    if frame is None:
                        frame = topic_options_frame(topic, COMPACTION)
                    link.connection.write(frame)
