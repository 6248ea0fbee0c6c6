"""Operation codes carried in every frame header."""

from enum import IntEnum

PROTOCOL_VERSION = 1
# What a hub takes beyond version 1, named in HELLO's reply (a u32 after hub_name; a hub
# without it sends none, and a client then asks for none of them). The version stays 1:
# it is checked by equality, and what a feature adds is only asked for when offered.
HUB_FEATURE_SUBSETS = 0x1  # SUBSCRIBE flag 0x40: a key_shared member's runs as SUBSET_DELIVERY
HUB_FEATURES = HUB_FEATURE_SUBSETS


class Op(IntEnum):
    # Client -> hub requests.
    HELLO = 1
    PUBLISH = 2
    SUBSCRIBE = 3
    CONSUME = 4  # cumulative; no reply unless it fails
    CLOSE_SUBSCRIPTION = 5
    UNSUBSCRIBE = 6
    READ_RANGE = 7  # read seq-ids without a subscription (analytics)
    LIST_TOPICS = 8
    DESCRIBE_TOPIC = 9
    STATS = 10
    # Hub -> hub, on a region link (the child region's hub connects to its parent's).
    REGION_LINK = 11  # after HELLO: names the child region; the reply carries the parent's path
    RELAY_PUBLISH = 12  # a relayed entry, origin kept; taken only on a region link
    # Hub -> hub, both ways on a region link: a topic's options (compaction) travel with its
    # relay (child -> parent answered with the parent's; parent -> child request id 0).
    TOPIC_OPTIONS = 19
    # Client -> hub, right after HELLO on a hub with [auth] enabled (protocol/auth_request.py).
    AUTH = 20
    # Client -> hub administration (admin_requests.py); JSON replies.
    CREATE_TOPIC = 13
    DELETE_TOPIC = 14  # refused while subscriptions exist unless forced; ledgers freed
    LIST_SUBSCRIPTIONS = 15
    RESET_SUBSCRIPTION = 16  # move a detached subscription's consumed seq-id
    COMPACT = 17  # compact a compacted topic's sealed ledgers now (the latest message per key)
    # Client -> hub, idempotent publish (protocol/producer_requests.py, hub/producer_state.py).
    INIT_PRODUCER = 24  # the reply carries a new producer id
    IDEMPOTENT_PUBLISH = 25  # PUBLISH with (producer id, sequence): a repeat is not stored again
    # Hub -> hub in a ZooKeeper region, as [auth] hub_user: a Kafka group's offset on a topic
    # the receiving hub owns, placed or deleted on behalf of the committing user.
    GROUP_OFFSET = 26
    # Client -> hub, shared and pull subscriptions (protocol/work_requests.py).
    ACK = 30  # per-message acknowledgements, as seq-id ranges; no reply unless it fails
    NACK = 31  # deliver these seq-ids again now; no reply unless it fails
    FETCH = 32  # a pull subscription asks for messages; answered at once, ended by FETCH_DONE
    # Hub -> client, request id 0: a DELIVERY that carries the delivery count (2 or more).
    REDELIVERY = 33
    # Hub -> client, request id 0: a DELIVERY of some messages of an entry, chosen by a
    # bitmap (a key_shared member's keys of an entry); sent only to a SUBSCRIBE that
    # asked for it (flag bit 6).
    SUBSET_DELIVERY = 34
    # Client -> hub, a region's hubs and who owns what (JSON replies; embedded: this hub).
    LIST_HUBS = 40
    LIST_OWNERS = 41
    # Hub -> client.
    RESPONSE = 64  # carries the request id of the request it answers
    DELIVERY = 65  # request id 0; body starts with the subscription handle
    EVENT = 66  # request id 0; a SubscriptionEvent for a handle
    REGION_INTEREST = 67  # request id 0; parent -> child on a region link: topics it wants relayed up
