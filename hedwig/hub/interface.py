"""The topic-manager seam: which topics this hub owns, and their topic logs.

The embedded hub owns every topic (topics.py). A region of several hubs puts a topic
manager over a coordination service in its place (ownership claimed per topic, released
when idle or to balance load): the hub asks only this interface, so requests for a topic
owned elsewhere are answered with a redirect and the rest of the hub does not change.
"""

from zope.interface import Attribute, Interface


class ITopicManager(Interface):
    """The topics this hub serves, each opened (acquired) once.

    Acquiring a topic makes this hub its single writer: its previous ledger is recovered
    and closed and a new one opened. Requests arriving while a topic is being acquired
    wait for it and run in arrival order. Topic logs handed out are ICachedTopicLogs
    (hedwig.cache): the read-ahead cache sits in every publish and delivery path."""

    on_open = Attribute(
        "callable(topic_log) -> Deferred or None, run once per acquisition before any "
        "request uses the topic (the delivery manager loads its durable subscriptions)"
    )

    def get(topic):
        """The topic's log if it is owned, open here and ready, else None (the fast path)."""

    def acquire(topic, place=True):
        """Deferred[ICachedTopicLog]: the topic opened here, created if it never existed.
        Fails when this hub may not own it (a manager over a coordination service fails
        with the owner to redirect to). `place` False: a topic nobody owns is claimed by
        this hub, whatever the hubs' loads (the partitions its owner creates)."""

    def exists(topic):
        """Deferred[bool]: whether the topic was ever created."""

    def delete(topic):
        """Deferred[list of ledger ids | None]: close the topic's log and delete its record
        and ledgers (recorded as garbage in the metadata before their files go); None when
        it never existed. Requests for it meanwhile wait, and a later publish creates it
        afresh. The caller deletes its subscriptions first."""

    def open_topics():
        """Names of the topics open here, sorted (garbage collection walks them)."""

    def list_topics():
        """Deferred[list of str]: every topic of the hub's metadata store."""

    def close():
        """Deferred: close every open topic log (the hub is stopping)."""
