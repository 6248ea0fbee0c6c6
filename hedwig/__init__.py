"""hedwig: a durable publish/subscribe hub with read-ahead delivery and regional relays."""

__version__ = "0.1.0"
