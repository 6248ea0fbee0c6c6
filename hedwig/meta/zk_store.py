"""The metadata of a region of several hubs, in ZooKeeper (IMetadataStore).

Each record is a znode (zk_layout.py) and the znode's version is the record's version:
a create names NEW (version 0 follows), a write names the version it replaces and
ZooKeeper applies it only if the znode still has it, so compare-and-set is ZooKeeper's
own and no two hubs can both win a race. Writes that go together are one multi-op
transaction: a topic's ranges and the ledgers they drop as garbage commit together or
not at all, as in the SQLite store.

Fencing of metadata writes: a hub that owns a topic holds its ownership epoch (the
version of `<root>/epochs/<topic>` its claim produced, hedwig.hub.zk_topics), and with
`epochs` set every write of that topic's records (ranges, subscriptions) carries a check
of that version in the same transaction. A hub that was paused, or cut off, while
another claimed the topic therefore changes nothing when it wakes: its write fails with
OwnershipLost. Without `epochs` (tools, the contract tests) writes are unchecked.

Every method answers with a Deferred fired on the reactor thread (zk_session.py).
kazoo's errors become the interface's: BadVersion for a lost compare-and-set,
MetadataUnavailable for a connection that is down (such a write may or may not have
been applied: the version read next says which), MetadataError otherwise.
"""

from twisted.internet.defer import DeferredList, fail, inlineCallbacks, succeed
from zope.interface import implementer

from hedwig.meta.codec import (
    check_garbage,
    check_name,
    check_ranges,
    check_version,
    decode_subscription,
    decode_topic,
    encode_subscription,
    encode_topic,
)
from hedwig.meta.interface import (
    NEW,
    BadVersion,
    IMetadataStore,
    MetadataError,
    MetadataUnavailable,
    OwnershipLost,
    Versioned,
)
from hedwig.meta.zk_layout import BRANCHES, GARBAGE_DIGITS, ZkLayout, decode_name


def _kazoo_errors():
    from kazoo import exceptions

    return exceptions


def translate(failure):
    """kazoo's connection errors as MetadataUnavailable; other kazoo errors as
    MetadataError; the interface's own errors as they are."""
    errors = _kazoo_errors()
    if failure.check(MetadataError):
        return failure
    if failure.check(errors.ConnectionLoss, errors.SessionExpiredError, errors.ConnectionClosedError):
        raise MetadataUnavailable(f"ZooKeeper is not reachable now ({type(failure.value).__name__})")
    if failure.check(errors.KazooException):
        raise MetadataError(f"ZooKeeper: {type(failure.value).__name__} {failure.getErrorMessage()}".strip())
    return failure


@implementer(IMetadataStore)
class ZkMetadataStore:
    """IMetadataStore over a ZkSession, under one region's root."""

    def __init__(self, session, root: str = "/hedwig"):
        self.session = session
        self.layout = ZkLayout(root)
        # topic -> ownership epoch, kept by the topic manager (None: writes unchecked)
        self.epochs = None
        self._closed = False

    def ensure_layout(self):
        """Deferred: the branches of the tree exist (created by the first hub)."""
        return DeferredList(
            [self.session.call("ensure_path", self.layout.branch(b)) for b in BRANCHES],
            fireOnOneErrback=True,
            consumeErrors=True,
        ).addCallbacks(lambda _: None, lambda f: translate(f.value.subFailure))

    # -- the calls, checked and translated ---------------------------------------------

    def _run(self, operation, *args):
        if self._closed:
            return fail(MetadataError("the metadata store is closed"))
        try:
            d = operation(*args)
        except Exception:
            return fail()
        return d.addErrback(translate)

    def _call(self, method: str, *args, **kwargs):
        return self.session.call(method, *args, **kwargs)

    def _fence(self, transaction, topic: str) -> None:
        """Add the check of this hub's ownership epoch of `topic` to a transaction."""
        if self.epochs is None:
            return
        epoch = self.epochs.get(topic)
        if epoch is None:
            raise OwnershipLost(topic, "this hub does not own it")
        transaction.check(self.layout.epoch(topic), epoch)

    @inlineCallbacks
    def _commit(self, transaction, topic: str, describe):
        """Commit; the results, or the failure of the operation that failed: the fence
        check as OwnershipLost, any other as `describe(index, error)` says."""
        errors = _kazoo_errors()
        results = yield self.session.commit(transaction)
        fenced = self.epochs is not None
        for index, outcome in enumerate(results):
            if isinstance(outcome, Exception) and not isinstance(outcome, errors.RolledBackError):
                if fenced and index == 0:
                    raise OwnershipLost(topic, "another hub claimed it since this hub did")
                raise (yield describe(index - fenced, outcome))
        return results[fenced:]

    @inlineCallbacks
    def _why(self, path: str, name: str, version: int, error):
        """Why a compare-and-set lost, as the SQLite store says it."""
        errors = _kazoo_errors()
        if isinstance(error, errors.NodeExistsError):
            return BadVersion(f"{name} already exists")
        if isinstance(error, errors.NotEmptyError):
            return BadVersion(f"{name} has records below it")
        stat = yield self._call("exists", path)
        if stat is None:
            return BadVersion(f"{name} does not exist (expected version {version})")
        return BadVersion(f"{name} is at version {stat.version}, not {version}")

    # -- topics ----------------------------------------------------------------------------

    def get_topic(self, topic):
        return self._run(self._get_topic, topic)

    def _get_topic(self, topic):
        path = self.layout.topic(check_name("topic", topic))
        return self._call("get", path).addCallbacks(
            lambda found: Versioned(*_ranges_and_options(found[0], found[1].version)),
            self._absent,
        )

    @staticmethod
    def _absent(failure):
        failure.trap(_kazoo_errors().NoNodeError)
        return None

    def put_topic(self, topic, ranges, version, garbage=(), options=None):
        return self._run(self._put_topic, topic, ranges, version, garbage, options)

    def _put_topic(self, topic, ranges, version, garbage=(), options=None):
        topic = check_name("topic", topic)
        ranges = check_ranges(ranges)
        data = encode_topic(ranges, options).encode("utf-8")
        garbage = check_garbage(garbage, ranges)
        version = check_version(version)
        path = self.layout.topic(topic)

        def write(transaction):
            if version == NEW:
                transaction.create(path, data)
            else:
                transaction.set_data(path, data, version)

        written = self._with_garbage(topic, garbage, write, path, version)
        return written.addCallback(lambda results: 0 if version == NEW else results[0].version)

    def delete_topic(self, topic, version, garbage=()):
        return self._run(self._delete_topic, topic, version, garbage)

    def _delete_topic(self, topic, version, garbage=()):
        topic = check_name("topic", topic)
        version = check_version(version)
        garbage = check_garbage(garbage, [])
        path = self.layout.topic(topic)
        written = self._with_garbage(topic, garbage, lambda tx: tx.delete(path, version), path, version)
        return written.addCallback(lambda _: None)

    @inlineCallbacks
    def _with_garbage(self, topic, garbage, write, path, version):
        """One transaction: [the ownership check], `write(transaction)` on the topic's
        record, and a garbage record per ledger: created, or rewritten where one exists
        already (a ledger dropped again after its deletion failed). The results after the
        check."""
        errors = _kazoo_errors()
        existing = set()
        for _attempt in range(3):
            transaction = self.session.transaction()
            self._fence(transaction, topic)
            write(transaction)
            for ledger_id in garbage:
                node, data = self.layout.garbage(ledger_id), topic.encode("utf-8")
                if ledger_id in existing:
                    transaction.set_data(node, data)
                else:
                    transaction.create(node, data)

            def describe(index, error):
                if index >= 1 and isinstance(error, errors.NodeExistsError | errors.NoNodeError):
                    return succeed(error)  # a garbage record there already (or gone): look again
                return self._why(path, f"topic {topic}", version, error)

            try:
                return (yield self._commit(transaction, topic, describe))
            except (errors.NodeExistsError, errors.NoNodeError):
                stats = yield DeferredList(
                    [self._call("exists", self.layout.garbage(i)) for i in garbage],
                    fireOnOneErrback=True,
                    consumeErrors=True,
                ).addErrback(lambda f: f.value.subFailure)
                existing = {i for i, (_ok, stat) in zip(garbage, stats, strict=True) if stat is not None}
        raise MetadataError(f"topic {topic}: its garbage records kept changing under the write")

    def list_topics(self):
        return self._run(self._list_topics)

    def _list_topics(self):
        listed = self._call("get_children", self.layout.branch("topics"))
        return listed.addCallback(lambda names: sorted(decode_name(n) for n in names))

    # -- subscriptions ---------------------------------------------------------------------

    def get_subscription(self, topic, subscriber_id):
        return self._run(self._get_subscription, topic, subscriber_id)

    def _get_subscription(self, topic, subscriber_id):
        topic, subscriber_id = check_name("topic", topic), check_name("subscriber id", subscriber_id)
        path = self.layout.subscription(topic, subscriber_id)
        return self._call("get", path).addCallbacks(self._subscription_record, self._absent)

    @staticmethod
    def _subscription_record(found):
        data, stat = found
        return Versioned(decode_subscription(data.decode("utf-8")), stat.version)

    def put_subscription(self, topic, subscriber_id, state, version):
        return self._run(self._put_subscription, topic, subscriber_id, state, version)

    @inlineCallbacks
    def _put_subscription(self, topic, subscriber_id, state, version):
        topic = check_name("topic", topic)
        subscriber_id = check_name("subscriber id", subscriber_id)
        data = encode_subscription(state).encode("utf-8")
        version = check_version(version)
        path = self.layout.subscription(topic, subscriber_id)
        name = f"subscription {subscriber_id} of topic {topic}"
        transaction = self.session.transaction()
        self._fence(transaction, topic)
        if version == NEW:
            yield self._call("ensure_path", self.layout.subscriptions(topic))
            transaction.create(path, data)
        else:
            transaction.set_data(path, data, version)
        results = yield self._commit(
            transaction, topic, lambda _index, error: self._why(path, name, version, error)
        )
        return 0 if version == NEW else results[0].version

    def delete_subscription(self, topic, subscriber_id, version):
        return self._run(self._delete_subscription, topic, subscriber_id, version)

    def _delete_subscription(self, topic, subscriber_id, version):
        topic = check_name("topic", topic)
        subscriber_id = check_name("subscriber id", subscriber_id)
        version = check_version(version)
        path = self.layout.subscription(topic, subscriber_id)
        name = f"subscription {subscriber_id} of topic {topic}"
        transaction = self.session.transaction()
        self._fence(transaction, topic)
        transaction.delete(path, version)
        done = self._commit(transaction, topic, lambda _index, error: self._why(path, name, version, error))
        return done.addCallback(lambda _: None)

    def list_subscriptions(self, topic):
        return self._run(self._list_subscriptions, topic)

    @inlineCallbacks
    def _list_subscriptions(self, topic):
        parent = self.layout.subscriptions(check_name("topic", topic))
        names = yield self._call("get_children", parent).addErrback(self._absent)
        records = yield self._read_children(parent, names or [])
        return {
            decode_name(name): self._subscription_record(found)
            for name, found in sorted(records.items(), key=lambda item: decode_name(item[0]))
        }

    @inlineCallbacks
    def _read_children(self, parent: str, names):
        """{name: (data, stat)} of the children that still exist, read in parallel."""
        reads = [self._call("get", f"{parent}/{name}").addErrback(self._absent) for name in names]
        found = yield DeferredList(reads, fireOnOneErrback=True, consumeErrors=True).addErrback(
            lambda f: f.value.subFailure
        )
        return {name: value for name, (_ok, value) in zip(names, found, strict=True) if value is not None}

    # -- garbage ---------------------------------------------------------------------------

    def list_garbage(self):
        return self._run(self._list_garbage)

    @inlineCallbacks
    def _list_garbage(self):
        parent = self.layout.branch("garbage")
        names = yield self._call("get_children", parent)
        names = [n for n in names if len(n) == GARBAGE_DIGITS and n.isdigit()]
        records = yield self._read_children(parent, names)
        return {int(name): data.decode("utf-8") for name, (data, _stat) in sorted(records.items())}

    def forget_garbage(self, ledger_ids):
        return self._run(self._forget_garbage, ledger_ids)

    def _forget_garbage(self, ledger_ids):
        ids = check_garbage(list(ledger_ids), [])
        deletes = [self._call("delete", self.layout.garbage(i)).addErrback(self._absent) for i in ids]
        return DeferredList(deletes, fireOnOneErrback=True, consumeErrors=True).addCallbacks(
            lambda _: None, lambda f: f.value.subFailure
        )

    # -- lifecycle -------------------------------------------------------------------------

    def close(self):
        """The store takes no more calls; the session is its owner's to stop."""
        self._closed = True
        return succeed(None)


def _ranges_and_options(data: bytes, version: int) -> tuple:
    """(ranges, version, options) of a topic's znode data."""
    ranges, options = decode_topic(data.decode("utf-8"))
    return ranges, version, options or None
