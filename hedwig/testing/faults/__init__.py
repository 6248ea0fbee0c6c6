"""A Jepsen-style fault suite's parts: hosts of their own, faults between them, and a
checker of what clients saw (tests/faults and bench/faults_bench.py use them).

    network.py    network namespaces on a bridge: one per node, partitions, loss, heal
    ensemble.py   a ZooKeeper ensemble of three servers, each on a node of its own
    history.py    what producers and subscribers saw, and the checker of it
    workload.py   producers and subscribers that record a history while faults happen
    schedule.py   a region of hubs on nodes of their own under load, the faults, schedules
"""
