"""The Kafka listener of a hub: [kafka] port on [kafka] host (plain TCP, or TLS with
[kafka] tls and [tls]'s certificate, as the native TLS port), serving KafkaApis over the
hub. HubService listens on it beside the native listener when [kafka] port is not 0."""

from twisted.internet.endpoints import SSL4ServerEndpoint, TCP4ServerEndpoint

from hedwig.kafka.apis import KafkaApis
from hedwig.kafka.connection import KafkaFactory
from hedwig.kafka.settings import listen_host, max_request_bytes


def kafka_listener(hub, config, reactor) -> tuple:
    """(endpoint, factory) of the Kafka port; the factory's `apis` learn the address
    Metadata names once it listens."""
    host = listen_host(config)
    apis = KafkaApis(hub, reactor, broker=(host, config.kafka.port))
    factory = KafkaFactory(
        apis, max_request_bytes(config), hub.client_errors, hub.intake, reactor, config.hub.frame_timeout_s
    )
    if config.kafka.tls:
        from hedwig.config.tls import server_options

        endpoint = SSL4ServerEndpoint(reactor, config.kafka.port, server_options(config.tls), interface=host)
        return endpoint, factory
    return TCP4ServerEndpoint(reactor, config.kafka.port, interface=host), factory
