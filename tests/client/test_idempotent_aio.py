"""The asyncio client's idempotent publishing through hub crashes: pipelined publishes
while a real hub process is killed (SIGKILL) and started again on the same data
directory and port, 20 times; every message is stored exactly once, in publish order."""

import asyncio

from hedwig.client.aio import Client

KILLS = 20
SETS_PER_ROUND = 6
MESSAGES_PER_SET = 25


def test_every_message_once_in_order_through_twenty_sigkills(own_hub):
    own_hub.start()

    async def scenario():
        async with Client(own_hub.address, idempotent=True, timeout=30) as client:
            topic = "aio-idempotent-kills"
            published, outcomes = [], []
            counter = 0
            for _round in range(KILLS):
                for set_number in range(SETS_PER_ROUND):
                    for _ in range(MESSAGES_PER_SET):
                        payload = b"m%d" % counter
                        counter += 1
                        published.append(payload)
                        outcomes.append(asyncio.ensure_future(client.publish(topic, payload)))
                    if set_number == 1:
                        await asyncio.wait([outcomes[-1]])  # two sets answered; more go out behind
                    else:
                        await asyncio.sleep(0)  # (one loop turn: this turn's set goes out)
                # Sets on the wire, stored or not, answered or not, when the hub dies.
                await asyncio.to_thread(own_hub.kill)
                await asyncio.to_thread(own_hub.restart)
            seqs = await asyncio.gather(*outcomes)
            stored = await client.read(topic)
            return published, seqs, stored, client._idempotent.resends

    published, seqs, stored, resends = asyncio.run(asyncio.wait_for(scenario(), 240))
    assert seqs == list(range(1, len(published) + 1))
    assert [m.payload for m in stored] == published
    assert resends > 0  # (the kills did catch sets in flight)


def test_a_producer_out_of_numbers_goes_on_as_a_new_one_in_order(hub):
    async def scenario():
        async with Client(hub.address, idempotent=True) as client:
            client._idempotent.max_sequence = 2  # (as if 2^32 sets had been numbered)
            outcomes = []
            for i in range(10):  # ten sets: one per loop turn
                outcomes.append(asyncio.ensure_future(client.publish("aio-renumbered", b"%d" % i)))
                await asyncio.sleep(0)
            seqs = await asyncio.gather(*outcomes)
            lane = client._idempotent._lanes["aio-renumbered"]
            return seqs, await client.read("aio-renumbered"), lane.producer_id, client._idempotent.producer_id

    seqs, stored, lane_producer, first_producer = asyncio.run(asyncio.wait_for(scenario(), 60))
    assert seqs == list(range(1, 11))
    assert [m.payload for m in stored] == [b"%d" % i for i in range(10)]
    assert lane_producer not in (None, first_producer)
