"""Regions: hubs in several regions relaying topics along a tree set in configuration.

Each region relays only with its neighbours (its parent and its children), as durable
subscribers with reserved ids (`__region__<region>`), so a message published anywhere
reaches every interested region once, in origin order. docs/operations.md ("Regions")
says how to run it; docs/protocol.md ("Region links") gives the wire format.

    settings.py    [region] checks; relay subscriber ids
    path.py        a region's path to the root; cycles refused
    link.py        the child's connection to its parent: attempts, back-off, handshake
    session.py     one linked incarnation: relays down (subscriptions at the parent)
    upchannel.py   ... and up (relay subscriptions here, sent as RELAY_PUBLISH)
    children.py    the parent's side: linked children, interest sent to them
    interest.py    which topics a region wants from each neighbour
    inbox.py       relayed entries stored once: per-origin marks, in arrival order
    highwater.py   those marks, derived from the topic's log
    entries.py     the via filter, and a message set's tail cut out
    options.py     a topic's compaction, travelling with its relay (TOPIC_OPTIONS)
    wire.py        the bodies of REGION_LINK, RELAY_PUBLISH, REGION_INTEREST, TOPIC_OPTIONS
    manager.py     RegionManager: all of it, wired into the hub
"""
