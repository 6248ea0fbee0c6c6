"""Regions of several hubs on a real ZooKeeper and real hub processes: the `zookeeper` and
`region` fixtures are tests/conftest.py's (the Spark tests use them too); a test that
stops or restarts ZooKeeper starts one of its own (tests.conftest.start_zookeeper)."""
