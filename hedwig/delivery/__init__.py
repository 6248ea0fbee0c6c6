"""The delivery manager: per-subscriber cursors, push and pull, windows, consume pointers."""

from hedwig.delivery.interface import IDeliveryChannel, SubscribeError
from hedwig.delivery.manager import DeliveryManager

__all__ = ["DeliveryManager", "IDeliveryChannel", "SubscribeError"]
