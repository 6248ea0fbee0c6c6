"""How a module of Kafka APIs declares what it serves, once per API: api key ->
Served(name, lowest version, highest version, the name of the method serving it), from
which both what ApiVersions answers (`versions`) and the dispatch table (`handlers`)
are made."""

from typing import NamedTuple


class Served(NamedTuple):
    name: str
    lowest: int
    highest: int
    method: str  # the method of the module's API class that serves it


def versions(served: dict) -> dict:
    """api key -> (name, lowest version, highest version)."""
    return {key: (api.name, api.lowest, api.highest) for key, api in served.items()}


def handlers(apis, served: dict) -> dict:
    """api key -> the bound method of `apis` serving it."""
    return {key: getattr(apis, api.method) for key, api in served.items()}
