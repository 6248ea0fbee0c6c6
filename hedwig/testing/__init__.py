"""Tools for tests and benchmarks of hedwig, shipped with it (as twisted.internet.testing
is with Twisted): real parts, no mocks.

    hubprocess.py    a real hub in its own process, its address read from its log
    polling.py       waiting on another process for what it reports (no hopeful sleeps)
    deferreds.py     outcomes of Deferreds that a test's Clock has already fired
    reactors.py      Clocks that run thread work inline or when the test says
    certificates.py  a throw-away certificate authority (needs the tls extra)
    spark.py         a local Spark session (needs the spark extra)

The test suite (tests/) and the benchmarks (bench/) both use them, so bench/ needs
nothing from tests/, and a deployment's own tests can start a real hub the same way.
"""
