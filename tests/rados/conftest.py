import itertools
import os

import pytest

from hedwig.testing.hubprocess import HubProcess

_namespaces = itertools.count(1)


@pytest.fixture
def rados_hub(ceph, tmp_path):
    """rados_hub(conf="", **rados) -> a HubProcess (not started) whose ledgers are in the
    session's Ceph pool, in a namespace of the test's own; `conf`: more hub.conf sections.
    Every hub made is stopped at the end."""
    made = []

    def make(conf: str = "", namespace: str | None = None, data_dir=None, http: bool = False, **rados):
        namespace = namespace or f"hub-{os.getpid()}-{next(_namespaces)}"
        path = tmp_path / f"hub{len(made)}.conf"
        ceph.hub_conf(path, namespace, **rados)
        if conf:
            with open(path, "a") as f:
                f.write("\n" + conf)
        hub = HubProcess(data_dir or tmp_path / f"data{len(made)}", 0, "--conf", str(path), http=http)
        hub.namespace = namespace
        made.append(hub)
        return hub

    yield make
    for hub in made:
        hub.stop()
