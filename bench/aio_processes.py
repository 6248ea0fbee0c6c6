"""The asyncio client's benchmark processes, beside the Twisted client's (pubsub_bench.py):
pipelined publishing, one message per publish() call, and a subscriber iterating with
`async for`, acknowledging every message."""

import asyncio
import time

from bench.client_processes import PAYLOAD
from bench.figures import own_cpu_seconds


def aio_publish_worker(address, topic, count, in_flight, out):
    """`count` publishes, `in_flight` of them awaited at a time by as many tasks."""
    from hedwig.client.aio import Client

    async def publisher(client, share):
        for _ in range(share):
            await client.publish(topic, PAYLOAD)

    async def main():
        async with Client(address, max_in_flight=in_flight * 2) as client:
            cpu = own_cpu_seconds()
            started = time.perf_counter()
            shares = [count // in_flight + (1 if i < count % in_flight else 0) for i in range(in_flight)]
            await asyncio.gather(*(publisher(client, share) for share in shares))
            seconds = time.perf_counter() - started
            return {"messages": count, "seconds": seconds, "client_cpu_s": own_cpu_seconds() - cpu}

    out.put(asyncio.run(main()))


def aio_subscribe_worker(address, topic, total, out):
    """One subscriber from the earliest of `total` messages already published."""
    from hedwig.client.aio import Client

    async def main():
        async with Client(address) as client:
            subscription = await client.subscribe(topic, "aio-bench", start="earliest")
            cpu = own_cpu_seconds()
            started = time.perf_counter()
            received = 0
            async for message in subscription:
                received += 1
                await subscription.ack(message)
                if received == total:
                    break
            seconds = time.perf_counter() - started
            return {"received": received, "seconds": seconds, "client_cpu_s": own_cpu_seconds() - cpu}

    out.put(asyncio.run(main()))
